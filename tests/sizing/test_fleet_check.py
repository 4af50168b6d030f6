"""`plan --router`: the winning fleet simulated whole behind a router."""

from __future__ import annotations

import pytest

from llmsizer.sizing.fleet_check import MAX_EXTRA, check_plan_fleet
from llmsizer.sizing.plan import PlanResult, plan
from tests.sizing.test_plan import usecase


@pytest.fixture(scope="module")
def result() -> PlanResult:
    return plan(usecase())  # 5 x TP1 H100 for 50 req/s of 2000/200, p95 TTFT <= 300 ms


def test_a_balancing_router_keeps_the_plans_answer_with_a_lower_tail(result: PlanResult) -> None:
    """Random routing is the plan's own assumption (each instance Poisson at 1/N of the
    load); joining the shortest queue does better on the same arrivals."""
    rnd = check_plan_fleet(result, "random")
    jsq = check_plan_fleet(result, "least_outstanding")
    assert result.winner is not None and result.winner.sizing is not None
    planned = result.winner.sizing.num_instances
    for check in (rnd, jsq):
        assert check.planned_instances == planned == check.points[0].num_instances
    assert jsq.num_instances == planned and "meet the limits" in jsq.reason
    key = result.limits.limits()[0]
    assert key.value_s(jsq.points[0].latencies) < key.value_s(rnd.points[0].latencies)


def test_a_router_that_herds_gets_more_instances_or_a_clear_no(result: PlanResult) -> None:
    """Least KV use alone sends every arrival within a step to one instance (waiting
    requests hold no KV): the planned fleet misses p95 TTFT and the check says so."""
    check = check_plan_fleet(result, "least_kv")
    first = check.points[0]
    assert not first.meets
    assert "miss p95 TTFT <= 300 ms" in check.reason
    assert len(check.points) >= 2
    assert check.points[-1].num_instances <= check.planned_instances * (1 + MAX_EXTRA)
    sizes = [p.num_instances for p in check.points]
    assert sizes == list(range(sizes[0], sizes[0] + len(sizes)))
