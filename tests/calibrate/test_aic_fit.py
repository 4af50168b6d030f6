"""Fitting per engine and GPU architecture on AIC rows, and cross-validating the fit."""

from __future__ import annotations

import dataclasses
from operator import attrgetter

import numpy as np
import pytest

from llmsizer.calibrate import aic_prior
from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.calibrate.aic_fit import (
    FIRST_USE,
    FIRST_USE_PRIOR_S,
    METRICS,
    MOE_HOLD,
    MOE_HOLD_ENGINES,
    PROMPT,
    SPLIT,
    Memo,
    Recorded,
    group_of,
    measurement_cases,
    ships,
)
from llmsizer.calibrate.aic_prior import CANDIDATES, FitPrior
from llmsizer.calibrate.measurements import load_measurements
from llmsizer.instance import DeploymentSpec, make_instance, measured_uncertainty
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.calibrated import (
    calibrated_efficiency,
    carried_calibration,
    packaged_architectures,
    packaged_calibration,
)
from llmsizer.perf.efficiency import SPLIT_FROM
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def recorded() -> Recorded:
    """Six small vLLM MiniMax rows, three on B200 and three on B300 (one group: Blackwell)."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    cases = [
        c
        for c in load_aic(path)
        if isinstance(c, AicCase) and c.model == "minimax-m2.5" and c.backend == "vllm"
        and (c.spec.concurrency or 0) <= 8 and c.spec.isl == 1024
    ]  # fmt: skip
    chosen = [c for c in cases if c.system == "b200_sxm"][:3]
    chosen += [c for c in cases if c.system == "b300_sxm"][:3]
    return Recorded.record(chosen)


def log_errors(recorded: Recorded, predicted: dict[int, dict[str, float]]) -> np.ndarray:
    return np.array(
        [
            np.log(predicted[i][m] / recorded.cases[i].measured[m])
            for i in predicted
            for m in METRICS
        ]
    )


@pytest.mark.shared
def test_the_group_fit_beats_the_engine_wide_fit_on_its_own_rows(recorded: Recorded) -> None:
    assert {group_of(c) for c in recorded.cases} == {("vllm", "blackwell")}
    indices = list(range(len(recorded.cases)))
    start = recorded.predict(indices, calibrated_efficiency("vllm"))
    fitted = recorded.shipped(recorded.fit_groups())
    assert np.sum(log_errors(recorded, fitted) ** 2) < np.sum(log_errors(recorded, start) ** 2)


@pytest.mark.shared
def test_leave_one_gpu_out_predicts_each_gpu_without_its_own_rows(recorded: Recorded) -> None:
    memo: Memo = {}
    held = recorded.leave_one_out(lambda c: c.system, {"blackwell"}, min_rows=1, memo=memo)
    assert sorted(held) == list(range(len(recorded.cases)))
    b300 = [i for i, c in enumerate(recorded.cases) if c.system == "b300_sxm"]
    b200 = [i for i, c in enumerate(recorded.cases) if c.system == "b200_sxm"]
    # the B300 rows are priced by factors fitted on the B200 rows alone, under the first
    # candidate prior (one model: nothing to choose on)
    expected = recorded.predict(b300, recorded.fit(b200, "vllm", CANDIDATES[0]).factors)
    for i in b300:
        assert held[i] == pytest.approx(expected[i], rel=1e-12)
    assert (
        memo[("vllm", tuple(b200), CANDIDATES[0])].factors
        == recorded.fit(b200, "vllm", CANDIDATES[0]).factors
    )


@pytest.mark.shared
def test_a_fold_with_too_few_rows_predicts_with_the_general_fit(recorded: Recorded) -> None:
    """Three rows left for ten factors: the fold is priced by the engine's general fit."""
    held = recorded.leave_one_out(lambda c: c.system, {"blackwell"}, min_rows=4)
    everything = range(len(recorded.cases))
    assert held == recorded.predict(list(everything), calibrated_efficiency("vllm"))


@pytest.mark.shared
def test_a_thin_fold_is_priced_as_a_generation_never_seen(recorded: Recorded) -> None:
    """Two of the B300 rows read as H100 rows (Hopper): holding B200 out leaves one
    Blackwell row, fewer than `min_rows` 3, so the fold is the engine's general fit, not a
    fit on the engine's rows of other generations (whose Hopper rows would then set the
    Blackwell factors); with `min_rows` 1 the one row is fitted."""
    cases = list(recorded.cases)
    for i in [i for i, c in enumerate(cases) if c.system == "b300_sxm"][1:]:
        spec = cases[i].spec.model_copy(update={"gpu": "h100-sxm"})
        cases[i] = dataclasses.replace(cases[i], system="h100_sxm", spec=spec)
    mixed = Recorded(tuple(cases), recorded.traces)
    b200 = [i for i, c in enumerate(cases) if c.system == "b200_sxm"]
    b300 = [i for i, c in enumerate(cases) if c.system == "b300_sxm"]
    hopper = [i for i, c in enumerate(cases) if c.system == "h100_sxm"]
    assert {group_of(cases[i]) for i in hopper} == {("vllm", "hopper")}
    system = attrgetter("system")
    blackwell = mixed.groups()[("vllm", "blackwell")]
    assert mixed.fold_rows(blackwell, system, "b200_sxm", min_rows=3) == []
    assert mixed.fold_rows(blackwell, system, "b200_sxm", min_rows=1) == b300
    # the only GPU of its architecture held out: a generation never seen, the general fit
    assert mixed.fold_rows(hopper, system, "h100_sxm", min_rows=1) == []
    held = mixed.leave_one_out(system, {"blackwell"}, min_rows=3)
    general = calibrated_efficiency("vllm")
    assert {i: held[i] for i in b200 + hopper} == mixed.predict(b200 + hopper, general)
    factors, prior = mixed.fold_factors(("vllm", "blackwell"), system, "b200_sxm", {"blackwell"}, 3)
    assert (factors, prior) == (general, None)


def test_a_group_ships_by_its_architecture_or_by_name() -> None:
    assert ships(("sglang", "blackwell"), {"blackwell", "vllm:hopper"})
    assert ships(("vllm", "hopper"), {"blackwell", "vllm:hopper"})
    assert not ships(("trtllm", "hopper"), {"blackwell", "vllm:hopper"})


@pytest.mark.shared
def test_only_the_rows_the_fit_prices_join_it_not_the_cpp_runtimes() -> None:
    """TensorRT-LLM's Hopper tables are mostly the C++ runtime's (v0.17, the online v0.14),
    priced by their own file: only the v1.0 table (PyTorch backend, H100 and H200) joins a
    TensorRT-LLM Hopper fit; every Blackwell row is the v1.0 table's."""
    measurements = load_measurements(shared_path("calibration", "measurements.csv")).measurements
    hopper = measurement_cases(measurements, {"trtllm:hopper"})
    cpp = [m for m in measurements if m.runtime == "cpp" and m.spec.gpu in ("h100-sxm", "h200-sxm")]
    assert len(cpp) > 200  # what a filter on the architecture alone would let in
    assert len(hopper) == 60
    assert {c.note for c in hopper} == {"TRTLLM_PERF_v1.0"}
    assert {c.system for c in hopper} == {"h100_sxm", "h200-sxm"}  # AIC names H100 only
    blackwell = measurement_cases(measurements, {"blackwell"})
    assert len(blackwell) == 80 and {c.note for c in blackwell} == {"TRTLLM_PERF_v1.0"}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_blackwell_ships_every_engines_fit_and_hopper_those_with_h100_rows(engine: str) -> None:
    """Blackwell ships every engine's AIC fit; Hopper vLLM's and TensorRT-LLM's (the latter
    its weight streaming alone, the rest held at the general fit: docs/aic_measurement.md
    section 32); SGLang has no H100 rows."""
    blackwell = packaged_calibration(engine, "blackwell")
    assert blackwell.fitted_on["data"].endswith("aic_silicon_calibration.csv")
    hopper = packaged_calibration(engine, "hopper")
    b200 = make_instance(DeploymentSpec(model="llama-3.1-70b", gpu="b200", tp=4, engine=engine))
    h100 = make_instance(DeploymentSpec(model="llama-3.1-70b", gpu="h100", tp=4, engine=engine))
    assert b200.step.efficiency == blackwell.efficiency()
    if engine in ("vllm", "trtllm"):
        assert packaged_architectures(engine) == ("blackwell", "hopper")
        assert hopper.fitted_on["data"].endswith("aic_silicon_calibration.csv")
        assert h100.step.efficiency == hopper.efficiency()
    else:  # the general fit, with what the Blackwell fit carries (calibrate.aic_carry)
        assert packaged_architectures(engine) == ("blackwell",)
        assert hopper == carried_calibration(packaged_calibration(engine))
        assert h100.step.efficiency == calibrated_efficiency(engine).replace(
            verify_sequence_overhead_s=blackwell.efficiency().verify_sequence_overhead_s
        )


def test_the_band_uses_the_cross_validated_error_where_there_is_one() -> None:
    b200, source = measured_uncertainty(DeploymentSpec(model="llama-3.1-8b", gpu="b200"))
    held = packaged_calibration("vllm", "blackwell").fitted_on["leave_one_model_out"]
    expected = held["mean_ttft_ms"]["median_ape_pct"] + held["mean_tpot_ms"]["median_ape_pct"]
    assert b200 == pytest.approx(expected / 200) and "cross-validated" in source
    h100, source = measured_uncertainty(  # no SGLang Hopper fit: no AIC row on Hopper
        DeploymentSpec(model="llama-3.1-8b", gpu="h100", engine="sglang")
    )
    assert h100 == 0.15 and "prior" in source


@pytest.mark.shared
def test_split_factors_are_fitted_only_under_a_prior_that_holds_them(recorded: Recorded) -> None:
    """MiniMax only: the rows cannot tell the experts' GEMMs from the dense ones. The
    shipped prior leaves the split factors unset (their parents' values); one with a
    split sigma fits them, held near their parents' values in the engine's general fit
    (not tied to the group's parents, which the MoE rows move)."""
    everything = list(range(len(recorded.cases)))
    fit = recorded.fit(everything, "vllm")
    assert not set(SPLIT) & set(fit.fitted)
    for name in SPLIT:
        assert fit.factors.value(name) == fit.factors.value(SPLIT_FROM[name])
    held = recorded.fit(everything, "vllm", FitPrior(split_sigma=0.01))
    general = calibrated_efficiency("vllm")
    assert set(SPLIT) <= set(held.fitted)
    for name in SPLIT:
        assert held.factors.value(name) == pytest.approx(general.value(name), rel=0.05)


@pytest.mark.shared
def test_the_experts_prompt_compute_is_fitted_under_every_prior(recorded: Recorded) -> None:
    """The routed experts' grouped GEMM at prompt sizes (`PROMPT`) is a factor of every
    group's fit, held near its parent's value in the engine's general fit."""
    everything = list(range(len(recorded.cases)))
    general = calibrated_efficiency("vllm").value("experts_compute_efficiency")
    for prior in (FitPrior(), FitPrior(split_sigma=0.01), FitPrior(sigma=0.01)):
        fit = recorded.fit(everything, "vllm", prior)
        assert set(PROMPT) <= set(fit.fitted)
        if prior.sigma == 0.01:
            assert fit.factors.experts_compute_efficiency == pytest.approx(general, rel=0.05)


@pytest.mark.shared
def test_a_group_fitting_one_factor_holds_the_rest_at_the_general_fit(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group named in `GROUP_CANDIDATES` (TensorRT-LLM on Hopper fits its weight streaming
    alone) moves that factor only: the others, the per-sequence cost too, stay the general
    fit's, in the shipped fit and in every fold."""
    only = FitPrior(fitted=("gemm_bandwidth_efficiency",))
    monkeypatch.setitem(aic_prior.GROUP_CANDIDATES, "vllm:blackwell", (only,))
    general = calibrated_efficiency("vllm")
    fits = recorded.fit_groups()
    factors = fits[("vllm", "blackwell")].factors
    assert fits[("vllm", "blackwell")].fitted == ("gemm_bandwidth_efficiency",)
    assert factors.gemm_bandwidth_efficiency != general.gemm_bandwidth_efficiency
    assert factors.replace(gemm_bandwidth_efficiency=general.gemm_bandwidth_efficiency) == general
    folds: dict[tuple[str, str, str], EfficiencyFactors] = {}
    recorded.leave_one_out(attrgetter("system"), {"blackwell"}, min_rows=3, folds=folds)
    assert set(folds) == {("vllm", "blackwell", "b200_sxm"), ("vllm", "blackwell", "b300_sxm")}
    for fold in folds.values():
        assert fold.replace(gemm_bandwidth_efficiency=general.gemm_bandwidth_efficiency) == general


@pytest.mark.shared
def test_a_row_marked_unfitted_is_predicted_but_not_trained_on(recorded: Recorded) -> None:
    """The fit on every row with one marked `unfitted` is the fit without that row, and the
    marked row is still priced (`aic_clients`: a prompt the server saw at another length)."""
    cases = list(recorded.cases)
    cases[0] = dataclasses.replace(cases[0], unfitted="prompt length unknown")
    marked = Recorded(tuple(cases), recorded.traces)
    everything = list(range(len(cases)))
    fit = marked.fit(everything, "vllm", CANDIDATES[0]).factors
    assert fit == recorded.fit(everything[1:], "vllm", CANDIDATES[0]).factors
    assert fit != recorded.fit(everything, "vllm", CANDIDATES[0]).factors
    assert marked.num_fitted(everything) == len(cases) - 1
    assert set(marked.shipped(marked.fit_groups(candidates=CANDIDATES[:1]))) == set(everything)


@pytest.mark.shared
def test_the_rows_one_off_build_is_fitted_from_their_excess(recorded: Recorded) -> None:
    """Rows whose first waves waited for a build of S = 20 s (each measured mean TTFT that
    much over the rows' fit: S x c / N, `aic_clients.first_use_builds`) move
    `first_use_build_s` from the prior's 60 s most of the way to 20 s (the wide prior keeps a
    little), the other factors as without it; a fit whose rows hold no build keeps the prior
    (its engine's rows hold one)."""
    everything = list(range(len(recorded.cases)))
    base = recorded.fit(everything, "vllm", CANDIDATES[0]).factors
    assert base.first_use_build_s == 0  # no build in the engine's rows: not fitted, no prior
    predicted = recorded.predict(everything, base)
    cold = []
    for i, case in enumerate(recorded.cases):
        excess_ms = 20e3 * (case.spec.concurrency or 0) / (case.spec.num_requests or 1)
        measured = {**case.measured, "mean_ttft_ms": predicted[i]["mean_ttft_ms"] + excess_ms}
        cold.append(dataclasses.replace(case, first_use_builds=1, measured=measured))
    marked = Recorded((*cold[:-1], recorded.cases[-1]), recorded.traces)
    assert [t.first_use_builds for t in marked.traces] == [1] * (len(cold) - 1) + [0]
    fit = marked.fit(everything[:-1], "vllm", CANDIDATES[0])
    assert 20.0 <= fit.factors.first_use_build_s < 28.0  # over 80 % of the way
    assert fit.factors.gemm_bandwidth_efficiency == pytest.approx(
        base.gemm_bandwidth_efficiency, rel=0.05
    )
    held = marked.fit(everything[-1:], "vllm", CANDIDATES[0])
    assert FIRST_USE not in held.fitted
    assert held.factors.first_use_build_s == FIRST_USE_PRIOR_S


@pytest.mark.shared
def test_a_moe_models_extra_hold_is_fitted_as_the_moe_hold(recorded: Recorded) -> None:
    """MiniMax rows (routed experts: each trace knows it) whose measured TTFT is 40 ms over
    their fit, fitted as an engine that splits the hold (`MOE_HOLD_ENGINES`; the rows priced
    from TensorRT-LLM's general fit), move `moe_first_token_delay_s` by most of the 40 ms;
    `first_token_delay_s`, which rows without a dense model cannot tell from it, is held at
    the general fit's 0. vLLM's fit does not split it: its one hold takes the 40 ms."""
    TTFT = "mean_ttft_ms"
    assert all(t.moe for t in recorded.traces)
    assert "trtllm" in MOE_HOLD_ENGINES and "vllm" not in MOE_HOLD_ENGINES
    everything = list(range(len(recorded.cases)))
    moved = {}
    for engine, hold in (("trtllm", MOE_HOLD), ("vllm", "first_token_delay_s")):
        base = recorded.fit(everything, engine, CANDIDATES[0])
        assert hold in base.fitted
        assert {MOE_HOLD, "first_token_delay_s"} - {hold} & set(base.fitted) == set()
        predicted = recorded.predict(everything, base.factors)
        later = [
            dataclasses.replace(c, measured={**c.measured, TTFT: predicted[i][TTFT] + 40.0})
            for i, c in enumerate(recorded.cases)
        ]
        fit = Recorded(tuple(later), recorded.traces).fit(everything, engine, CANDIDATES[0])
        moved[engine] = fit.factors.value(hold) - base.factors.value(hold)
    assert 0.03 <= moved["trtllm"] <= 0.045
    assert 0.03 <= moved["vllm"] <= 0.045
