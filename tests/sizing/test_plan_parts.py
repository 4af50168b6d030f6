"""The plan's arithmetic, each part on its own: servers (the course's table), sizing, cost,
limits, Pareto points, efficiency variants."""

from __future__ import annotations

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.perf import EfficiencyFactors
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.cost import HOURS_PER_MONTH, Price, business_view, cost_of, monthly_cost
from llmsizer.sizing.curve import CurvePoint, pareto
from llmsizer.sizing.limits import Latencies, Limits, Metric
from llmsizer.sizing.servers import server_for
from llmsizer.sizing.uncertainty import scaled_efficiency


@pytest.mark.parametrize(("tp", "per_server"), [(8, 1), (4, 2), (2, 4), (1, 8)])
def test_instances_per_dgx_follow_the_course_table(tp: int, per_server: int) -> None:
    dgx = server_for("h100-sxm")
    assert dgx.num_gpus == 8 and "DGX H100" in dgx.name
    assert dgx.instances_per_server(tp) == per_server  # (# of instances) x TP = 8
    assert dgx.num_servers(per_server, tp) == 1
    assert dgx.num_servers(per_server + 1, tp) == 2


def test_placement_rules() -> None:
    dgx, l40s, pcie = server_for("h100-sxm"), server_for("l40s"), server_for("h100-pcie")
    assert dgx.why_not(8, 1) is None and dgx.why_not(16, 1) is not None
    assert "NVLink domain" in (pcie.why_not(4, 1) or "")  # bridged pairs only
    assert l40s.why_not(4, 1) is None and l40s.tp_over_pcie(4)  # no NVLink: TP over PCIe
    assert "tile" in (dgx.why_not(3, 1) or "")
    assert dgx.why_not(8, 2) is None and dgx.num_servers(3, 16) == 6  # PP across servers
    assert server_for("l4").num_gpus == 8  # generic 8-GPU server, as the course normalises


def test_sizing_rounds_instances_up_and_packs_servers() -> None:
    config = DeploymentSpec(model="llama-3.1-70b", gpu="h100-sxm", tensor_parallel_size=4)
    s = Sizing.of(31.0, 1.2, config, server_for("h100-sxm"))
    assert (s.num_instances, s.num_gpus, s.num_servers) == (26, 104, 13)
    assert Sizing.of(2.4, 2.4, config, server_for("h100-sxm")).num_instances == 1
    assert Sizing.of(0.001, 2.4, config, server_for("h100-sxm")).num_instances == 1


def test_cloud_and_on_premises_costs() -> None:
    cloud = Price(usd_per_gpu_hour=2.0)
    usd, basis = monthly_cost(cloud, num_gpus=10, num_servers=2)
    assert usd == pytest.approx(10 * 2.0 * HOURS_PER_MONTH) and "10 GPUs" in basis
    onprem = Price(server_usd=400_000, depreciation_years=4, power_and_hosting_usd_per_year=20_000)
    usd, basis = monthly_cost(onprem, num_gpus=10, num_servers=2)
    assert usd == pytest.approx(2 * (100_000 + 20_000) / 12) and "2 servers" in basis
    with pytest.raises(ValueError, match="exactly one"):
        Price()


def test_cost_per_million_tokens_divides_the_month_by_the_tokens_served() -> None:
    c = cost_of(
        Price(usd_per_gpu_hour=3.0),
        1,
        1,
        served_rps=1.0,
        mean_input_tokens=900,
        mean_output_tokens=100,
        working_hours=24,
    )
    tokens_per_month = 1.0 * 24 * 3600 * 30.4 * 1000
    assert c.usd_per_million_tokens == pytest.approx(3.0 * 730 / tokens_per_month * 1e6)
    assert c.usd_per_million_output_tokens == pytest.approx(10 * c.usd_per_million_tokens)


def test_business_view_of_the_course_llama_example() -> None:
    b = business_view(70.7, 1, 2000, 200, requests_per_user=3, working_hours=8)
    assert b.requests_per_day == pytest.approx(2.036e6, rel=1e-3)  # "2M requests"
    assert b.users_served == pytest.approx(679e3, rel=1e-3)  # "679k daily active users"
    assert b.input_tokens_per_day == pytest.approx(4.07e9, rel=1e-3)


def latencies(ttft_ms: float, tpot_ms: float, percentiles: tuple[float, ...]) -> Latencies:
    summary = {}
    for p in percentiles:
        k = f"p{p:g}"
        summary |= {f"{k}_ttft_ms": ttft_ms, f"{k}_tpot_ms": tpot_ms, f"{k}_e2el_ms": 9e9}
    return Latencies.from_summary(summary, percentiles)


def test_limits_judge_typed_latencies_and_name_the_binding_one() -> None:
    limits = Limits(ttft_s=0.5, tpot_s=0.05, tpot_percentile=99)
    run = latencies(400.0, 60.0, limits.percentiles)
    assert limits.active == (Metric.TTFT, Metric.TPOT)
    assert limits.ratios(run) == pytest.approx({Metric.TTFT: 0.8, Metric.TPOT: 1.2})
    assert not limits.met_by(run) and limits.binding(run) is Metric.TPOT
    assert limits.met_by(latencies(500.0, 50.0, limits.percentiles))
    assert limits.describe(Metric.TPOT) == "p99 TPOT <= 50 ms"
    # a percentile the run did not compute is an error, never a silent pass or fail
    with pytest.raises(KeyError, match="no p99 TPOT"):
        limits.met_by(latencies(400.0, 60.0, (50.0, 95.0)))
    with pytest.raises(KeyError, match="p99_ttft_ms"):
        Latencies.from_summary({"p95_ttft_ms": 1.0}, (99.0,))
    assert limits.scaled(0.5).ttft_s == pytest.approx(0.25)
    with pytest.raises(ValueError, match="percentile"):
        Limits(ttft_s=1.0, ttft_percentile=0)


def point(rate: float, ttft: float) -> CurvePoint:
    return CurvePoint("x", rate, rate, ttft, 0.0, 0.0, True)


def test_pareto_keeps_only_points_nothing_beats_on_both_axes() -> None:
    points = [
        point(0, 0.1),
        point(1, 0.2),
        point(1, 0.3),
        point(2, 0.25),
        point(3, 0.9),
        point(2.5, 1.0),
    ]
    front = pareto(points, Metric.TTFT)
    assert [(p.rate_per_gpu, p.ttft_s) for p in front] == [(0, 0.1), (1, 0.2), (2, 0.25), (3, 0.9)]


def test_efficiency_variants_scale_fractions_and_overheads() -> None:
    base = EfficiencyFactors()
    slow = scaled_efficiency(base, 0.85)
    assert slow.gemm_compute_efficiency == pytest.approx(0.85 * base.gemm_compute_efficiency)
    assert slow.step_overhead_s == pytest.approx(base.step_overhead_s / 0.85)
    fast = scaled_efficiency(base.replace(interconnect_efficiency=0.95), 1.15)
    assert fast.interconnect_efficiency == 1.0  # capped at peak
