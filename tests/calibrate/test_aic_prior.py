"""The prior and weights of a group's fit (`aic_prior.FitPrior`), the fit's per-factor
sigmas, weights and data-only robust loss (`fit_factors`), and the nested choice of a prior
(`Recorded.choose`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from llmsizer.calibrate.aic import AicCase
from llmsizer.calibrate.aic_fit import Recorded
from llmsizer.calibrate.aic_prior import CANDIDATES, DEFAULT, FitPrior, candidates_for
from llmsizer.calibrate.fit import FitResult, _soft_l1, fit_factors
from llmsizer.calibrate.record import record_trace
from llmsizer.instance import PredictSpec, predict
from llmsizer.perf import EfficiencyFactors, default_efficiency

PRIOR = default_efficiency("trtllm")


def test_balanced_weights_give_every_model_the_same_total() -> None:
    models = ["a"] * 30 + ["b"] * 10
    weights = FitPrior(model_balance=1.0).weights(models, ["mean_tpot_ms"] * 40)
    assert sum(weights[:30]) == pytest.approx(sum(weights[30:]))
    assert np.mean(weights) == pytest.approx(1.0)
    assert FitPrior().weights(models, ["mean_tpot_ms"] * 40) == [1.0] * 40


def test_the_ttft_weight_scales_ttft_against_tpot() -> None:
    w = FitPrior(ttft_weight=0.25).weights(["a", "a"], ["mean_ttft_ms", "mean_tpot_ms"])
    assert w[0] / w[1] == pytest.approx(0.25) and np.mean(w) == pytest.approx(1.0)


def test_split_factors_get_their_own_sigma() -> None:
    sigmas = FitPrior(sigma=0.2, split_sigma=0.6).sigmas(
        ["gemm_compute_efficiency", "experts_compute_efficiency"]
    )
    assert sigmas == {"gemm_compute_efficiency": 0.2, "experts_compute_efficiency": 0.6}
    assert not DEFAULT.fits_split and "not fitted" in DEFAULT.describe()
    assert "sigma 0.2" in FitPrior(sigma=0.2).describe()


@pytest.mark.parametrize(
    ("field", "value"), [("sigma", 0.0), ("split_sigma", -1.0), ("model_balance", 2.0)]
)
def test_a_bad_prior_names_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        FitPrior(**{field: value})


@pytest.mark.parametrize("r", [0.0, 0.05, -0.3, 2.0, -7.5])
def test_the_softened_residual_costs_what_scipys_soft_l1_does(r: float) -> None:
    """Squared, it is 2 f^2 (sqrt(1 + (r / f)^2) - 1): scipy's soft_l1 cost at f_scale f
    (twice its 0.5-scaled value); near 0 it is r itself, far out 2 f |r|."""
    f = 0.3
    out = float(_soft_l1(np.array([r]), f)[0])
    assert out**2 == pytest.approx(2 * f**2 * (math.sqrt(1 + (r / f) ** 2) - 1))
    assert math.copysign(1, out) == math.copysign(1, r) or r == 0
    if abs(r) <= 0.05:
        assert out == pytest.approx(r, rel=0.01, abs=1e-12)


def _cases(truths: list[EfficiencyFactors]) -> tuple[list, list]:
    """TPOT of Llama 3.1 8B on H100 at c = 8, one trace per truth (same schedule)."""
    spec = PredictSpec(model="llama-3.1-8b", gpu="h100", tp=1, isl=256, osl=64, concurrency=8,
                       engine="trtllm", num_requests=24)  # fmt: skip
    trace = record_trace(spec, PRIOR)
    targets = [(k, "mean_tpot_ms", predict(spec, t).summary["mean_tpot_ms"])
               for k, t in enumerate(truths)]  # fmt: skip
    return [trace] * len(truths), targets


FIT = ("gemm_bandwidth_efficiency",)


def test_a_prior_keeps_its_sigma_under_the_robust_loss() -> None:
    """One row wants the factor at 0.3 (x 0.4 the start): far beyond the robust scale. A
    Gaussian prior of sigma 0.05 must hold it near the start; under a loss that softened
    the prior too, the row would drag it most of the way."""
    traces, targets = _cases([PRIOR.replace(gemm_bandwidth_efficiency=0.3)])
    free = fit_factors(traces, targets, PRIOR, FIT, robust_scale=0.3)
    held = fit_factors(traces, targets, PRIOR, FIT, robust_scale=0.3, prior_sigma={FIT[0]: 0.05})
    assert free.factors.gemm_bandwidth_efficiency == pytest.approx(0.3, rel=0.05)
    moved = math.log(PRIOR.gemm_bandwidth_efficiency / held.factors.gemm_bandwidth_efficiency)
    assert 0 < moved < 0.2  # within 4 sigma of the start, where the data alone says 0.9


def test_weights_pull_the_fit_towards_the_heavier_rows() -> None:
    truths = [PRIOR.replace(gemm_bandwidth_efficiency=e) for e in (0.4, 0.8)]
    traces, targets = _cases(truths)
    even = fit_factors(traces, targets, PRIOR, FIT).factors.gemm_bandwidth_efficiency
    heavy = fit_factors(traces, targets, PRIOR, FIT, weights=[9.0, 1.0])
    assert 0.4 < heavy.factors.gemm_bandwidth_efficiency < even < 0.8
    with pytest.raises(ValueError, match="weight"):
        fit_factors(traces, targets, PRIOR, FIT, weights=[1.0, 0.0])


class _Scripted(Recorded):
    """A recording whose fits and predictions are scripted: each prior's sigma is the
    prediction's log error on every row, so `choose` must pick the smallest, and it notes
    every row it prices."""

    priced: list[int]

    def fit(self, indices, engine, prior=DEFAULT) -> FitResult:  # type: ignore[override]
        eff = EfficiencyFactors(step_overhead_s=prior.sigma * 1e-3)
        return FitResult(eff, eff, (), (), 1, 1)

    def predict(self, indices, factors):  # type: ignore[override]
        self.priced.extend(indices)
        error = math.exp(factors.step_overhead_s * 1e3)
        return {i: {m: v * error for m, v in self.cases[i].measured.items()} for i in indices}


def test_the_prior_is_chosen_on_the_training_rows_alone() -> None:
    spec = PredictSpec(model="llama-3.1-8b", gpu="b200", isl=1024, osl=1024, concurrency=4)
    measured = {"mean_ttft_ms": 100.0, "mean_tpot_ms": 10.0}
    cases = tuple(
        AicCase(f"r{i}", "vllm", "b200_sxm", model, spec, measured)
        for i, model in enumerate(["a"] * 40 + ["b"] * 40 + ["c"] * 40)
    )
    recorded = _Scripted(cases, ())
    object.__setattr__(recorded, "priced", [])
    candidates = (FitPrior(sigma=0.5), FitPrior(sigma=0.1), FitPrior(sigma=0.3))
    train = list(range(80))  # models a and b: c is the outer fold's held-out model
    assert recorded.choose(train, "vllm", candidates) == candidates[1]
    assert recorded.priced and set(recorded.priced) <= set(train)
    one_model = list(range(40))
    assert recorded.choose(one_model, "vllm", candidates) == candidates[0]
    assert CANDIDATES[0] in CANDIDATES


def test_gpus_factors_says_the_prior_a_file_was_fitted_under(tmp_path) -> None:
    from typer.testing import CliRunner

    from llmsizer.cli import app

    prior = FitPrior(sigma=0.25)
    path = tmp_path / "fit.yaml"
    data = {
        "kind": "efficiency_factors",
        "engine": "vllm",
        "factors": {"gemm_compute_efficiency": 0.5},
        "fitted_on": {"prior": prior.describe()},
    }
    path.write_text(yaml.safe_dump(data))
    r = CliRunner().invoke(
        app, ["gpus", "--factors", "--calibration", str(path)], terminal_width=400
    )
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())  # the console wraps long lines
    assert f"fitted under a {prior.describe()}" in said


def test_a_prior_may_name_the_only_factors_its_rows_fit() -> None:
    fit = ("gemm_bandwidth_efficiency", "layer_overhead_s", "first_token_delay_s")
    assert DEFAULT.select(fit) == fit
    only = FitPrior(fitted=("gemm_bandwidth_efficiency",))
    assert only.select(fit) == ("gemm_bandwidth_efficiency",)
    assert "only gemm_bandwidth_efficiency fitted" in only.describe()
    with pytest.raises(ValueError, match=r"FitPrior\.fitted"):
        FitPrior(fitted=())


def test_tensorrt_llm_on_hopper_fits_its_weight_streaming_and_moe_hold_alone() -> None:
    """docs/aic_measurement.md sections 32 and 48: its H100 rows' TTFT holds what no factor
    models, but for the MoE model's first-token hold, which nothing else moves."""
    (prior,) = candidates_for(("trtllm", "hopper"), CANDIDATES)
    assert prior.fitted == ("gemm_bandwidth_efficiency", "moe_first_token_delay_s")
    assert prior.ttft_weight < 0.1
    assert candidates_for(("trtllm", "blackwell"), CANDIDATES) == CANDIDATES
    assert candidates_for(("vllm", "hopper"), CANDIDATES) == CANDIDATES
