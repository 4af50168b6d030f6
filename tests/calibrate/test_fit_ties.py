"""A split factor tied to its parent (`fit_factors(ties=...)`): it follows the parent where
the rows cannot tell them apart, and leaves it where they can."""

import pytest

from llmsizer.calibrate.fit import fit_factors
from llmsizer.calibrate.record import record_trace
from llmsizer.instance import PredictSpec, predict
from llmsizer.perf import default_efficiency
from llmsizer.perf.efficiency import SPLIT_FROM

PRIOR = default_efficiency("trtllm")
FIT = ("gemm_bandwidth_efficiency", "experts_bandwidth_efficiency")


def cases(model: str, truth, tp: int = 1):
    traces, targets = [], []
    for i, c in enumerate((1, 8, 32)):
        spec = PredictSpec(model=model, gpu="h100", tp=tp, isl=256, osl=64, concurrency=c,
                           engine="trtllm", num_requests=3 * c)  # fmt: skip
        traces.append(record_trace(spec, PRIOR))
        targets.append((i, "mean_tpot_ms", predict(spec, truth).summary["mean_tpot_ms"]))
    return traces, targets


def test_a_tied_factor_follows_its_parent_where_the_rows_are_blind_to_it():
    """A dense model has no experts: untied, their factor stays at its start; tied, it
    moves with the dense GEMMs' factor the rows do fix."""
    truth = PRIOR.replace(gemm_bandwidth_efficiency=0.5)
    traces, targets = cases("llama-3.1-8b", truth)
    free = fit_factors(traces, targets, PRIOR.resolved(), FIT)
    tied = fit_factors(traces, targets, PRIOR.resolved(), FIT, ties=SPLIT_FROM)
    for fit in (free, tied):
        assert fit.factors.gemm_bandwidth_efficiency == pytest.approx(0.5, rel=0.05)
    assert free.factors.experts_bandwidth_efficiency == pytest.approx(
        PRIOR.gemm_bandwidth_efficiency
    )
    assert tied.factors.experts_bandwidth_efficiency == pytest.approx(0.5, rel=0.05)


def test_a_tied_factor_leaves_its_parent_where_the_rows_tell_them_apart():
    truth = PRIOR.replace(experts_bandwidth_efficiency=0.4)
    traces, targets = cases("mixtral-8x7b", truth, tp=2)
    tied = fit_factors(traces, targets, PRIOR.resolved(), FIT[1:], ties=SPLIT_FROM)
    assert tied.factors.experts_bandwidth_efficiency == pytest.approx(0.4, rel=0.05)
