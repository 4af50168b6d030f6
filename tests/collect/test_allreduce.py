"""The all-reduce fit against the line the performance model prices a collective with."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")

from llmsizer.collect.allreduce import fit_allreduce, time_allreduce
from llmsizer.collect.timings import Kind, Timing
from llmsizer.perf import Deployment
from llmsizer.perf.constants import build_constants
from llmsizer.perf.efficiency import EfficiencyFactors, default_efficiency
from llmsizer.specs import Precision, get_gpu, get_model

HIDDEN = 4096


def rows(ranks: int, latency_s: float, bus_bytes_per_s: float) -> list[Timing]:
    """Exact timings of the model's line: latency + 2 (n - 1) / n m / bus bandwidth."""
    out = []
    for tokens in (1, 8, 64, 512, 4096):
        message = 2.0 * HIDDEN * tokens
        seconds = latency_s + 2 * (ranks - 1) / ranks * message / bus_bytes_per_s
        out.append(Timing(Kind.ALLREDUCE, "nccl", "bf16", tokens, ranks, 0, 0.0, message, seconds))
    return out


def test_the_fit_recovers_the_line_it_was_made_from() -> None:
    fit = fit_allreduce(rows(4, 12e-6, 300e9))
    assert fit.num_ranks == 4 and fit.backend == "nccl"
    assert fit.latency_s == pytest.approx(12e-6, rel=1e-6)
    assert fit.bus_bytes_per_s == pytest.approx(300e9, rel=1e-6)
    assert fit.median_ape_pct == pytest.approx(0.0, abs=1e-6)
    # no row reaches the asymptote: the latency slows each
    assert fit.best_bus_bytes_per_s < fit.bus_bytes_per_s


def test_the_factors_reprice_the_timings_as_the_step_model_does() -> None:
    """On an H100 SXM node (NVSwitch: 2 hops whatever the group), the fitted factors give
    back the measured time of a prefill-sized all-reduce through perf's constants."""
    gpu = get_gpu("h100-sxm")
    timings = rows(4, 12e-6, 300e9)
    fit = fit_allreduce(timings)
    assert fit.link(gpu) == (2, gpu.scale_up_bytes_per_s)
    factors = fit.factors(gpu)
    assert factors["interconnect_efficiency"] == pytest.approx(300e9 / 450e9, rel=1e-3)
    assert factors["collective_hop_latency_s"] == pytest.approx(6e-6, rel=1e-3)
    model = get_model("llama-3.1-70b")
    d = Deployment(model, gpu, Precision.BF16, tensor_parallel_size=4)
    c = build_constants(d, default_efficiency().replace(**factors))
    tokens = 4096
    priced = c.allreduce_latency_s + tokens * c.allreduce_s_per_token
    assert model.hidden_size == 8192  # twice HIDDEN: twice the bytes
    seconds = 12e-6 + 2 * 3 / 4 * 2.0 * 8192 * tokens / 300e9
    assert priced == pytest.approx(seconds, rel=2e-3)


def test_without_a_scale_up_fabric_the_group_is_a_ring_over_pcie() -> None:
    fit = fit_allreduce(rows(4, 60e-6, 20e9))
    gpu = get_gpu("l40s")
    assert fit.link(gpu) == (6, gpu.pcie_bytes_per_s)  # 2 (n - 1) hops
    assert fit.factors(gpu)["collective_hop_latency_s"] == pytest.approx(10e-6, rel=1e-3)


def test_factors_stay_inside_their_bounds() -> None:
    """A gloo hop on a CPU is slower than any fabric's; a bus faster than the link named."""
    fit = fit_allreduce(rows(2, 900e-6, 900e9))
    factors = fit.factors(get_gpu("l40s"))
    longest = EfficiencyFactors.bounds()["collective_hop_latency_s"][1]  # 100 us
    assert factors == {"interconnect_efficiency": 1.0, "collective_hop_latency_s": longest}


def test_noise_without_a_slope_still_gives_a_finite_bandwidth() -> None:
    flat = [
        Timing(Kind.ALLREDUCE, "gloo", "bf16", t, 2, 0, 0.0, 2.0 * HIDDEN * t, 1e-3)
        for t in (1, 4, 16)
    ]
    fit = fit_allreduce(flat)
    assert 0 < fit.bus_bytes_per_s < math.inf and fit.latency_s >= 0


def test_one_rank_is_refused() -> None:
    with pytest.raises(ValueError, match="needs 2 or more devices, not 1"):
        time_allreduce(1, 64, (1,), device_type="cpu", warmup=0, repeats=1, seconds=1.0)


def test_the_ranks_are_checked_before_any_timing() -> None:
    import torch

    from llmsizer.collect.device import Device
    from llmsizer.collect.run import _ranks

    cpu = Device(torch.device("cpu"), "CPU", 1e9, None)
    assert _ranks(cpu, None) == 1 and _ranks(cpu, 2) == 2  # gloo processes on the CPU
    with pytest.raises(ValueError, match="--devices 0; allowed: 1 or more"):
        _ranks(cpu, 0)
    gpus = torch.cuda.device_count()
    gpu = Device(torch.device("cuda", 0), "GPU", 1e9, None, "hopper")
    with pytest.raises(ValueError, match=f"allowed: 1 to the {gpus} GPUs this machine has"):
        _ranks(gpu, gpus + 1)


def test_a_spent_time_budget_still_times_the_two_sizes_a_line_needs() -> None:
    """With no time left after the first size (a loaded machine), the smallest and the
    largest message are still timed, so `fit_allreduce` has a line and not a point."""
    timings = time_allreduce(
        2, 64, (1, 4, 16, 64), device_type="cpu", warmup=0, repeats=1, seconds=0.0
    )
    assert sorted(t.tokens for t in timings) == [1, 64]
    fit = fit_allreduce(timings)
    assert fit.num_rows == 2 and 0 < fit.bus_bytes_per_s < math.inf
