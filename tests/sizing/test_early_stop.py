"""A probe stopped once it is certain to miss its limit (`sizing.early_stop`) gives the whole
run's verdict, a run that is not stopped is the whole run, and the lever table, which stops
its failing probes early, is the table it was, in fewer engine steps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llmsizer.instance import calibrated_for
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.sizing import early_stop
from llmsizer.sizing.early_stop import MissWatch, run_watched
from llmsizer.sizing.limits import Limits
from llmsizer.sizing.plan import plan, search_space
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.probe import Probe
from llmsizer.sizing.search import make_probe
from llmsizer.sizing.usecase import UseCase

CASE: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 40},
    "limits": {"ttft_ms": 300},
    "candidates": {"gpus": ["h100-sxm"], "precisions": ["bf16"], "tensor_parallel_sizes": [1, 2]},
    "search": {"num_requests": 400, "curves": False, "uncertainty": 0.0},
}
# The same with speculative decoding (3 draft tokens, a head): watched in verify steps
SPECULATING: dict[str, Any] = {
    **CASE,
    "candidates": {**CASE["candidates"], "speculative_tokens": [3]},
}


def _probe(case: dict[str, Any] = CASE) -> Probe:
    space = search_space(UseCase.model_validate(case))
    return make_probe(space, space.configs[0], calibrated_for)


def test_a_run_that_is_never_certain_to_miss_is_the_whole_run() -> None:
    probe = _probe()
    rate = 0.9 * probe.capacity()
    n = probe._num_at(0.9)
    workload = probe._workload(probe._unit_arrivals[:n] * (probe.pp / rate))
    loose = Limits(ttft_s=1e6)
    watch = MissWatch.of(loose, n, int(0.1 * n))
    assert watch is not None
    watched, stopped = run_watched(probe.engine, workload, watch)
    whole = probe.engine.run(workload)
    assert not stopped and watched.steps.num_steps == whole.steps.num_steps
    assert watched.records.request_id.tolist() == whole.records.request_id.tolist()  # type: ignore[attr-defined]
    np.testing.assert_array_equal(watched.records.first_token_s(), whole.records.first_token_s())  # type: ignore[attr-defined]
    np.testing.assert_array_equal(watched.records.last_token_s(), whole.records.last_token_s())  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("case", "limit"),
    [
        (CASE, {"ttft_s": 0.15}),
        (CASE, {"ttft_s": 0.3}),
        (CASE, {"ttft_s": 0.6}),
        (SPECULATING, {"ttft_s": 0.15}),
        (SPECULATING, {"ttft_s": 0.3}),
        (SPECULATING, {"e2el_s": 2.0}),
    ],
)
def test_a_stopped_probe_has_the_verdict_of_its_whole_run(
    case: dict[str, Any], limit: dict[str, float]
) -> None:
    """Rates from the middle of the grid to past capacity: each stopped probe fails, as its
    whole run does, and a probe that was not stopped is the whole run, point for point
    (speculating probes too: their runs are watched in verify steps, whose first and last
    token times are the tokens')."""
    limits = Limits(**limit)
    early, whole = _probe(case), _probe(case)
    assert (early.speculative is not None) == (case is SPECULATING)
    stops = 0
    for fraction in (0.5, 0.7, 0.8, 0.9, 0.95, 1.1, 1.5, 3.0):
        rate = fraction * early.capacity()
        point, full = early.at_rate(rate, stop_for=limits), whole.at_rate(rate)
        assert full.complete
        assert limits.met_by(point.latencies) == limits.met_by(full.latencies), fraction
        if point.complete:
            assert point == full
        else:
            stops += 1
            assert point.stopped_for == limits.limits()[0] and not limits.met_by(full.latencies)
            assert point.summary["completed"] < full.summary["completed"]
    assert stops > 0  # the tight limits stop some probes (else this test checks nothing)


@pytest.mark.parametrize("case", [CASE, SPECULATING])
def test_a_run_put_aside_at_every_slice_and_resumed_is_the_run_never_put_aside(
    case: dict[str, Any],
) -> None:
    """`Probe.at_rate_or_pause` with a pause after every slice returns nothing until the
    run is decided, each call resuming the run put aside; its point is then the point of a
    run watched without a pause, stopped (a tight limit) or whole (a loose one)."""
    paused, fresh = _probe(case), _probe(case)
    seen = []
    for limits, fraction in ((Limits(ttft_s=0.15), 1.5), (Limits(ttft_s=0.6), 0.8)):
        rate = fraction * paused.capacity()
        calls, point = 0, None
        while point is None:
            calls += 1
            point = paused.at_rate_or_pause(rate, limits, lambda run: seen.append(run) is None)
        assert calls > 2 and point == fresh.at_rate(rate, stop_for=limits)
        assert point.complete == (fraction < 1) and not paused._paused
    assert all(run is seen[0] for run in seen[: seen.index(seen[-1])])  # one run, resumed


def test_a_stopped_point_is_simulated_again_when_a_whole_one_is_asked() -> None:
    limits = Limits(ttft_s=0.15)
    probe = _probe()
    rate = 1.5 * probe.capacity()
    assert not probe.at_rate(rate, stop_for=limits).complete
    again = probe.at_rate(rate)
    assert again.complete and again == _probe().at_rate(rate)
    assert probe.at_rate(rate, stop_for=limits) is again  # a whole point serves every search
    watch_other = Limits(ttft_s=0.2)
    assert probe.at_rate(rate, stop_for=watch_other) is again


def test_a_run_judged_on_two_limits_or_on_tpot_is_not_watched() -> None:
    assert MissWatch.of(Limits(ttft_s=0.3, tpot_s=0.05), 100, 10) is None
    assert MissWatch.of(Limits(tpot_s=0.05), 100, 10) is None
    assert MissWatch.of(Limits(e2el_s=2.0), 100, 10) is not None


def test_the_lever_table_stops_failing_probes_and_is_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stops = [0, 0]  # plain, speculating
    advance = early_stop.WatchedRun.advance

    def counted(run: early_stop.WatchedRun) -> Any:
        outcome = advance(run)
        if outcome is not None:
            stops[isinstance(run.run.cost, SpeculativeStepCost)] += outcome[1]
        return outcome

    monkeypatch.setattr(early_stop.WatchedRun, "advance", counted)
    usecase = UseCase.model_validate({**CASE, "limits": {"ttft_ms": 150}})  # lever fails
    early = plan_data(plan(usecase))
    assert stops[0] > 0 and stops[1] > 0  # some lever probes stopped early, speculating too
    whole = plan_data(plan(usecase, probes=_never_stopping))
    assert early["levers"] == whole["levers"] and early == whole


def _never_stopping(space: Any, config: Any, efficiency: Any) -> Probe:
    """Probes whose runs are never watched: the table as it was before early stops."""
    probe = make_probe(space, config, efficiency)
    probe._watch = lambda rate, stop_for: None  # type: ignore[method-assign]
    return probe
