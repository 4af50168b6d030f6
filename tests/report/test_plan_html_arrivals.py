"""The plan page names the arrival pattern its curves and timeline were simulated under
(issue 11: the titles said "Poisson" whatever the use case's `load.arrival`)."""

from __future__ import annotations

import pytest

from llmsizer.report.plan_html import curve_figure, plan_html
from llmsizer.sizing import UseCase, plan
from llmsizer.sizing.plan_data import plan_data


@pytest.mark.parametrize(
    "pattern", ["Poisson arrivals", "gamma arrivals, burstiness 0.2", "arrivals of t.csv"]
)
def test_the_curve_axis_names_the_pattern(pattern: str) -> None:
    fig = curve_figure({"limits": [], "candidates": [], "load": {"arrivals": pattern}})
    assert fig.layout.xaxis.title.text == f"requests/s per GPU (offered, {pattern})"


def test_a_bursty_plan_page_says_gamma_not_poisson() -> None:
    usecase = UseCase.model_validate(
        {
            "model": "llama-3.1-8b",
            "input": {"user": 200},
            "output": 20,
            "load": {"peak_rps": 4, "arrival": "gamma", "burstiness": 0.2},
            "limits": {"ttft_ms": 2000},
            "candidates": {"gpus": ["h100-sxm"], "tensor_parallel_sizes": [1]},
            "search": {"num_requests": 200, "levers": False},
        }
    )
    page = plan_html(plan_data(plan(usecase)))
    assert "offered, gamma arrivals, burstiness 0.2" in page
    assert "s (gamma arrivals, burstiness 0.2), engine step by step" in page  # "req\\u002fs"
    assert "Poisson)" not in page
