"""Price models: cloud and on-premises prices of one GPU are both costed and shown (never
one silently replacing the other), electricity is billed, and the break-even utilisation
is the ratio of the two monthly costs."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from llmsizer.report.plan_text import plan_text
from llmsizer.sizing.cost import HOURS_PER_YEAR, Price, break_even_utilisation, cost_of
from llmsizer.sizing.plan import plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.usecase import UseCase

CLOUD = {"usd_per_gpu_hour": 3.0, "source": "cloud quote"}
OWNED = {"server_usd": 300000, "power_usd_per_kwh": 0.1, "server_power_kw": 10.0, "source": "capex"}
FAST: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 1000},
    "output": 200,
    "load": {"peak_rps": 20},
    "limits": {"ttft_ms": 500},
    "candidates": {"gpus": ["h100-sxm"], "tensor_parallel_sizes": [1]},
    "search": {"num_requests": 400, "curves": False, "uncertainty": 0.0, "levers": False},
}


def test_a_gpu_and_its_system_add_price_models_instead_of_replacing_one() -> None:
    u = UseCase.model_validate({**FAST, "prices": {"h100-sxm": CLOUD, "dgx-h100": OWNED}})
    winner = plan(u).winner
    assert winner is not None and winner.cost is not None
    assert [c.source for c in winner.price_models] == ["cloud quote", "capex"]
    assert winner.cost.source == "cloud quote"  # the first ranks
    owned, cloud = winner.price_models[1].usd_per_month, winner.price_models[0].usd_per_month
    assert winner.break_even_utilisation == pytest.approx(owned / cloud)
    text = plan_text(plan_data(plan(u)))
    assert "Price models on h100-sxm" in text and "capex" in text


def test_electricity_is_billed_around_the_clock() -> None:
    base = Price(server_usd=400000, depreciation_years=4)
    powered = Price(server_usd=400000, depreciation_years=4, power_usd_per_kwh=0.1)
    args = (8, 1, 10.0, 1000.0, 200.0, 8.0)
    extra = cost_of(powered, *args, server_power_kw=5.6).usd_per_month
    extra -= cost_of(base, *args, server_power_kw=5.6).usd_per_month
    assert extra == pytest.approx(5.6 * HOURS_PER_YEAR * 0.1 / 12)


def test_break_even_needs_one_of_each() -> None:
    cloud = cost_of(Price(usd_per_gpu_hour=2.0), 8, 1, 1.0, 100.0, 100.0, 8.0)
    owned = cost_of(Price(server_usd=200000), 8, 1, 1.0, 100.0, 100.0, 8.0)
    assert break_even_utilisation((cloud,)) is None
    assert break_even_utilisation((cloud, owned)) == pytest.approx(
        owned.usd_per_month / cloud.usd_per_month
    )


def test_power_settings_belong_to_owned_servers() -> None:
    bad = {"usd_per_gpu_hour": 3.0, "power_usd_per_kwh": 0.1}
    with pytest.raises(pydantic.ValidationError, match="apply to server_usd"):
        UseCase.model_validate({**FAST, "prices": {"h100-sxm": bad}})
