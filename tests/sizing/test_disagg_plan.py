"""`plan --disaggregated`: aggregated against disaggregated pools, checked on the whole fleet,
with the crossover's direction held against the physics."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from llmsizer.cli import app
from llmsizer.sizing.disagg_plan import compare_disaggregated, search_disaggregated
from llmsizer.sizing.disagg_search import Layout, layouts, pool_rate, pool_spec
from llmsizer.sizing.disagg_spec import DisaggregatedSpec
from llmsizer.sizing.plan import PlanResult, _efficiency_function, plan, search_space
from llmsizer.sizing.probe import Lengths
from llmsizer.sizing.rate_search import RateSearch
from llmsizer.sizing.search import make_probe
from llmsizer.sizing.usecase import UseCase
from tests.cli_run import refusal

runner = CliRunner()

USECASE: dict[str, Any] = {
    "name": "long prompts, tight TPOT",
    "model": "llama-3.1-8b",
    "input": {"user": 4000},
    "output": 200,
    "load": {"peak_rps": 8},
    "limits": {"ttft_ms": 2000, "tpot_ms": 25},
    "candidates": {
        "gpus": ["h100-sxm"],
        "precisions": ["bf16"],
        "engines": ["vllm"],
        "tensor_parallel_sizes": [1],
    },
    "search": {"num_requests": 600, "curves": False, "levers": False},
    "prices": {"h100-sxm": {"usd_per_gpu_hour": 3.0}},
}


def _usecase(**changes: Any) -> UseCase:
    return UseCase.model_validate({**USECASE, **changes})


@pytest.fixture(scope="module")
def result() -> PlanResult:
    return plan(_usecase(), quick=True)


def test_the_spec_reads_shorthands_and_refuses_bad_ratios_and_links() -> None:
    assert DisaggregatedSpec.model_validate("auto").mode == "auto"
    assert DisaggregatedSpec.model_validate(True).mode == "on"  # YAML's bare `on`
    assert _usecase(disaggregated="on").disaggregated.enabled
    assert DisaggregatedSpec.model_validate({"ratio": "3:1"}).fixed_ratio() == (3, 1)
    for bad, message in [
        ({"ratio": "0:1"}, "needs >= 1 prefill and >= 1 decode worker"),
        ({"ratio": "2:0"}, "with no decode worker nothing is served"),
        ({"ratio": "two to one"}, "two whole numbers"),
        ({"kv_link": 1.0}, "slower than every link in the system catalog"),
        ({"mode": "maybe"}, "auto"),
    ]:
        with pytest.raises(ValueError, match=message):
            DisaggregatedSpec.model_validate(bad)


def test_the_answer_is_the_first_whole_fleet_run_that_meets_every_limit(
    result: PlanResult,
) -> None:
    spec = DisaggregatedSpec(mode="auto")
    search = search_disaggregated(result, spec, _efficiency_function(None))
    assert search.planned is not None and search.layout is not None
    assert search.runs[0].layout == search.planned
    meets = [run.meets for run in search.runs]
    assert meets[-1] and not any(meets[:-1])  # grown until it held, then stopped
    assert search.layout == search.runs[-1].layout
    grown = search.layout.num_prefill + search.layout.num_decode
    planned = search.planned.num_prefill + search.planned.num_decode
    assert planned <= grown <= planned * 1.5
    # each pool was sized from its own worker's rate at the planning load
    rates = {r.role: r.rate for r in search.rates}
    assert rates["prefill"] and rates["decode"]
    assert search.planned.num_prefill == int(np.ceil(8 / rates["prefill"] - 1e-9))
    assert search.planned.num_decode == int(np.ceil(8 / rates["decode"] - 1e-9))


def test_a_fixed_ratio_scales_both_pools_together() -> None:
    p = pool_rate_stub("prefill", 2.0)
    d = pool_rate_stub("decode", 10.0)
    (free,) = layouts([p], [d], 8.0, None)
    (fixed,) = layouts([p], [d], 8.0, (1, 1))
    assert (free.num_prefill, free.num_decode) == (4, 1)
    assert (fixed.num_prefill, fixed.num_decode) == (4, 4)  # 4:4 keeps 1:1


def pool_rate_stub(role: str, rate: float):  # type: ignore[no-untyped-def]
    from llmsizer.instance import DeploymentSpec
    from llmsizer.sizing.disagg_search import PoolRate

    spec = DeploymentSpec.model_validate({"model": "llama-3.1-8b", "gpu": "h100-sxm"})
    return PoolRate(role, spec, rate)  # type: ignore[arg-type]


def test_compare_names_a_winner_by_gpus_and_dollars(result: PlanResult) -> None:
    c = compare_disaggregated(result, DisaggregatedSpec(mode="on"), crossover=False)
    assert c.aggregated is not None and c.disaggregated.layout is not None
    a_gpus, d_gpus = c.aggregated[1].num_gpus, c.disaggregated.layout.num_gpus
    expected = "disaggregated" if d_gpus < a_gpus else "aggregated"
    assert c.winner == expected
    assert c.recommended == "disaggregated"  # mode on: recommended whichever wins
    assert c.disaggregated_cost is not None and c.aggregated[2] is not None
    # the same cloud price per GPU hour: cost in proportion to GPUs
    ratio = c.disaggregated_cost.usd_per_month / c.aggregated[2].usd_per_month
    assert ratio == pytest.approx(d_gpus / a_gpus)


def test_longer_prompts_favour_disaggregation_at_a_fixed_tpot_limit(result: PlanResult) -> None:
    """Aggregated, every prompt chunk rides in the decode steps of the running requests, so
    under a TPOT limit a longer prompt costs an aggregated instance more rate than the
    prompt's own compute; disaggregated, decode steps never carry prompts. The GPUs per
    req/s of disaggregated over aggregated (no rounding) must fall as prompts grow."""
    space = search_space(result.usecase)
    efficiency = _efficiency_function(None)
    config = pool_spec(space.configs[0], 1)

    def ratio(factor: float) -> float:
        prompt = np.full(50, int(4000 * factor))
        lengths = Lengths(prompt, np.full(50, 200), "fixed")
        at = dataclasses.replace(space, lengths=lengths, num_requests=600)
        agg = RateSearch(make_probe(at, config, efficiency), at.limits).run().rate
        p = pool_rate("prefill", config, at, efficiency).rate
        d = pool_rate("decode", config, at, efficiency).rate
        assert agg and p and d
        return (1 / p + 1 / d) / (1 / agg)

    # Llama 3.1 8B on one H100, p95 TPOT <= 25 ms: 0.85 at 1,000-token prompts, 0.67 at
    # 4,000, 0.56 at 8,000 (measured when written)
    ratios = [ratio(f) for f in (0.25, 1.0, 2.0)]
    assert ratios == sorted(ratios, reverse=True)
    assert ratios[-1] < 0.9 * ratios[0]


def test_plan_disaggregated_auto_from_the_command_line(tmp_path: Path) -> None:
    path, out = tmp_path / "uc.yaml", tmp_path / "plan.json"
    path.write_text(yaml.safe_dump(USECASE))
    args = ["plan", str(path), "--disaggregated", "auto", "--json", str(out)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "Aggregated or disaggregated" in r.output and "Recommended:" in r.output
    data = json.loads(out.read_text())["disaggregated"]
    assert data["mode"] == "auto" and data["winner"] in ("aggregated", "disaggregated")
    assert data["recommended"] == data["winner"]
    assert data["disaggregated"]["fleet_runs"][-1]["meets"]
    rows = data["crossover"]["rows"]
    assert [r["isl_factor"] for r in rows] == [0.25, 0.5, 1.0, 2.0, 4.0]
    assert all(len(r["gpus"]) == len(data["crossover"]["load_factors"]) for r in rows)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("--disaggregated on --pd-ratio 0:1", "needs >= 1 prefill and >= 1 decode worker"),
        ("--disaggregated auto --kv-link 0.5", "slower than every link in the system catalog"),
        ("--disaggregated sometimes", "mode = 'sometimes': Input should be 'auto', 'on' or 'off'"),
        ("--pd-ratio 2:1", "give --disaggregated on or auto"),
        ("--router prefix", "a plan's requests carry none"),
        ("--router fastest", "unknown router 'fastest'"),
    ],
)
def test_bad_disaggregated_flags_are_one_clear_error_before_any_search(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    flags: str,
    message: str,
) -> None:
    path = tmp_path / "uc.yaml"
    path.write_text(yaml.safe_dump(USECASE))
    assert message in refusal(monkeypatch, capsys, ["plan", str(path), *flags.split()])


def test_an_offline_use_case_is_not_disaggregated() -> None:
    offline = _usecase(mode="offline", limits={})
    res = plan(offline, quick=True)
    with pytest.raises(ValueError, match="offline use case has no latency limits"):
        compare_disaggregated(res, DisaggregatedSpec(mode="auto"))


def test_layouts_are_fewest_gpus_first() -> None:
    p1, p2 = pool_rate_stub("prefill", 3.0), pool_rate_stub("prefill", 5.0)
    d = pool_rate_stub("decode", 20.0)
    p2 = dataclasses.replace(p2, spec=p2.spec.model_copy(update={"tensor_parallel_size": 2}))
    found = layouts([p1, p2], [d], 6.0, None)
    assert [lay.num_gpus for lay in found] == sorted(lay.num_gpus for lay in found)
    assert found[0] == Layout(p1.spec, d.spec, 2, 1)  # 2 + 1 GPUs against 2x TP2 + 1 = 5
    # a tie on GPUs goes to fewer workers: 1x TP2 (7 req/s) + 1 against 2x TP1 + 1
    p3 = dataclasses.replace(p2, rate=7.0)
    assert layouts([p1, p3], [d], 6.0, None)[0] == Layout(p3.spec, d.spec, 1, 1)


def test_the_kv_link_is_nvlink_inside_one_nvlink_domain_else_the_network() -> None:
    from llmsizer.sizing.disagg_search import resolve_link
    from llmsizer.sizing.servers import server_for

    dgx = server_for("h100-sxm")  # DGX H100: 8 GPUs on NVLink
    assert resolve_link("auto", 8, dgx) == "nvlink"
    assert resolve_link("auto", 14, dgx) == "network"  # two pools over two servers
    assert resolve_link("network", 2, dgx) == "network"  # as asked
    assert resolve_link(100e9, 2, dgx) == 100e9
