"""A kind of work the general fit cannot see, carried to a generation whose rows lack it
(`llmsizer.calibrate.aic_carry`): in the folds, in what ships, and in `gpus --factors`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from operator import attrgetter

import pytest
from typer.testing import CliRunner

from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.calibrate.aic_carry import (
    CARRIED,
    carried_file,
    carried_fits,
    carried_values,
    with_carried,
)
from llmsizer.calibrate.aic_fit import MOE_HOLD, Recorded
from llmsizer.calibrate.fit import FitResult
from llmsizer.calibrate.gpu_fit import shipped_value
from llmsizer.cli import app
from llmsizer.cli.catalog import factor_source
from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.calibrated import (
    calibrated_efficiency,
    carried_calibration,
    packaged_calibration,
)
from tests.conftest import shared_path

VERIFY = "verify_sequence_overhead_s"


def fitted(fitted: tuple[str, ...] = (), **factors: float) -> FitResult:
    """A fit of the names in `fitted` (no rows: only its factors and names matter here)."""
    eff = EfficiencyFactors(**factors)
    return FitResult(eff, eff, fitted, (), 0, 0)


def test_a_carried_factor_is_the_mean_of_the_fits_that_fitted_it() -> None:
    """Two generations fitted the hold (80 and 100 ms): 90 ms. A third did not fit it (its
    rows hold no MoE model: the 0.5 s it carries is its start, not a measurement) and counts
    for nothing; a factor none fitted is left out."""
    fits = [
        fitted((MOE_HOLD,), moe_first_token_delay_s=0.08),
        fitted((MOE_HOLD, "gemm_compute_efficiency"), moe_first_token_delay_s=0.10),
        fitted(("gemm_compute_efficiency",), moe_first_token_delay_s=0.5),
    ]
    assert carried_values(fits) == {MOE_HOLD: pytest.approx(0.09)}
    assert set(CARRIED) == {MOE_HOLD, VERIFY}


def test_a_fit_without_the_kind_takes_the_others_and_keeps_every_other_factor() -> None:
    """A fold whose rows lack MoE models takes the other generations' hold; the factors the
    general data informs (GEMM compute here, different in the other fit) stay its own; a
    fold that fitted the hold keeps it; the general fit (no fit) takes it too."""
    others = [fitted((MOE_HOLD, "gemm_compute_efficiency"), moe_first_token_delay_s=0.09,
                     gemm_compute_efficiency=0.3)]  # fmt: skip
    dense = fitted(("gemm_compute_efficiency",), gemm_compute_efficiency=0.7)
    got = with_carried(dense, EfficiencyFactors(), others)
    assert got == dense.factors.replace(moe_first_token_delay_s=0.09)
    assert got.gemm_compute_efficiency == 0.7
    own = fitted((MOE_HOLD, VERIFY), moe_first_token_delay_s=0.05)
    assert with_carried(own, EfficiencyFactors(), others) == own.factors
    general = EfficiencyFactors(gemm_compute_efficiency=0.6)
    assert with_carried(None, general, others) == general.replace(moe_first_token_delay_s=0.09)
    assert with_carried(None, general, []) == general  # nothing to carry: the general fit

    def never() -> Iterator[FitResult]:  # the others' fits are not needed, so not fitted
        raise AssertionError("read")
        yield  # pragma: no cover

    assert with_carried(own, general, never()) == own.factors


def test_a_shipped_group_fit_takes_what_its_rows_lack_from_its_engines_other_groups() -> None:
    """A Hopper fit whose rows hold no MoE model ships Blackwell's hold (its own factors
    kept); another engine's hold never crosses over."""
    fits = {
        ("trtllm", "blackwell"): fitted((MOE_HOLD,), moe_first_token_delay_s=0.09),
        ("trtllm", "hopper"): fitted(("gemm_bandwidth_efficiency",), gemm_bandwidth_efficiency=0.9),
        ("vllm", "hopper"): fitted(("gemm_bandwidth_efficiency",)),
    }
    carried = carried_fits(fits)
    assert carried[("trtllm", "blackwell")] == fits[("trtllm", "blackwell")]
    hopper = fits[("trtllm", "hopper")].factors.replace(moe_first_token_delay_s=0.09)
    assert carried[("trtllm", "hopper")].factors == hopper
    assert carried[("vllm", "hopper")] == fits[("vllm", "hopper")]


def test_the_shipped_file_is_the_mean_of_the_generation_fits_and_says_so() -> None:
    fits = {
        ("trtllm", "blackwell"): fitted((MOE_HOLD,), moe_first_token_delay_s=0.0937),
        ("trtllm", "hopper"): fitted((MOE_HOLD,), moe_first_token_delay_s=0.0889),
        ("vllm", "blackwell"): fitted(("gemm_compute_efficiency",)),
    }
    carried = carried_file("trtllm", fits, "abc")
    assert carried is not None and carried.factors == {MOE_HOLD: pytest.approx(0.0913)}
    assert carried.fitted_on["carried_from"] == {MOE_HOLD: {"blackwell": 0.0937, "hopper": 0.0889}}
    assert carried_file("vllm", fits, "abc") is None  # no vLLM group fits a carried factor


def test_a_gpu_of_a_generation_without_its_own_fit_gets_the_carried_hold() -> None:
    """TensorRT-LLM on an A100 or an L40S: the general fit, with the MoE hold the Blackwell
    and Hopper fits agree on (their mean); on an H200, Hopper's own; the general fit alone
    (the AIC fits' start, which no AIC row may inform) keeps the 0 of its data."""
    general = packaged_calibration("trtllm")
    assert general.efficiency().moe_first_token_delay_s == 0
    holds = [packaged_calibration("trtllm", a).efficiency() for a in ("blackwell", "hopper")]
    mean = shipped_value(sum(h.moe_first_token_delay_s for h in holds) / 2)  # as the file ships
    for gpu, architecture in (("a100", "ampere"), ("l40s", "ada")):
        other = packaged_calibration("trtllm", architecture)
        assert other.efficiency() == general.efficiency().replace(moe_first_token_delay_s=mean)
        assert MOE_HOLD in other.fitted_on["carried_factors"]
        spec = DeploymentSpec(model="qwen3-30b-a3b", gpu=gpu, tp=2, engine="trtllm")
        assert make_instance(spec).step.efficiency == other.efficiency()
    assert 0.08 < mean < 0.1
    assert calibrated_efficiency("trtllm", "hopper") == holds[1]
    vllm = packaged_calibration("vllm")  # no vLLM fit carries anything: the general file
    assert packaged_calibration("vllm", "ampere") == vllm == carried_calibration(vllm)


def test_gpus_factors_says_where_the_carried_hold_came_from() -> None:
    """The column of a generation without a fit of its own marks the hold carried, and its
    note names the file and the generations' values."""
    other = carried_calibration(packaged_calibration("trtllm"))
    assert factor_source(other, MOE_HOLD) == "carried over (see the note)"
    assert factor_source(other, "gemm_compute_efficiency").startswith("fit (")
    r = CliRunner().invoke(app, ["gpus", "--factors"], terminal_width=400)
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())  # the console wraps long lines
    blackwell, hopper = (packaged_calibration("trtllm", a).factors[MOE_HOLD] for a in
                         ("blackwell", "hopper"))  # fmt: skip
    note = "moe_first_token_delay_s from carried_trtllm.yaml, the mean of the AIC fits on"
    assert f"shipped trtllm: {note} blackwell {blackwell:g}, hopper {hopper:g}" in said


@pytest.fixture(scope="module")
def two_generations() -> Recorded:
    """Six small MiniMax rows (routed experts) read as TensorRT-LLM's: three on B200
    (Blackwell), three on H100 (Hopper, its only GPU), their measured TTFT 60 ms over the
    general fit's on Blackwell, so the Blackwell rows fit a MoE hold."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    cases = [
        c
        for c in load_aic(path)
        if isinstance(c, AicCase) and c.model == "minimax-m2.5" and c.backend == "vllm"
        and (c.spec.concurrency or 0) <= 8 and c.spec.isl == 1024 and c.system == "b200_sxm"
    ][:6]  # fmt: skip
    recorded = Recorded.record(cases)
    general = recorded.predict(range(6), calibrated_efficiency("trtllm"))
    out = []
    for i, c in enumerate(cases):
        h100 = i >= 3
        spec = c.spec.model_copy(update={"gpu": "h100-sxm"}) if h100 else c.spec
        later = {**c.measured, "mean_ttft_ms": general[i]["mean_ttft_ms"] + (0 if h100 else 60)}
        out.append(dataclasses.replace(c, backend="trtllm", system="h100_sxm" if h100 else
                                       c.system, spec=spec, measured=later))  # fmt: skip
    return Recorded(tuple(out), recorded.traces)


@pytest.mark.shared
def test_leave_one_gpu_out_gives_the_held_out_generation_the_others_hold(
    two_generations: Recorded,
) -> None:
    """H100, Hopper's only GPU, held out: no Hopper row left, so the general fit, with the
    MoE hold the Blackwell rows fit (no H100 row in them), every other factor the general
    fit's. Shipped, a Hopper group that does not ship is priced the same way."""
    rec, ships = two_generations, {"blackwell", "trtllm:hopper"}
    blackwell, hopper = rec.groups()[("trtllm", "blackwell")], rec.groups()[("trtllm", "hopper")]
    own = rec.fit(blackwell, "trtllm")
    assert MOE_HOLD in own.fitted and 0.03 < own.factors.moe_first_token_delay_s < 0.08
    folds: dict[tuple[str, str, str], EfficiencyFactors] = {}
    held = rec.leave_one_out(attrgetter("system"), ships, min_rows=1, folds=folds)
    general = calibrated_efficiency("trtllm")
    expected = general.replace(moe_first_token_delay_s=own.factors.moe_first_token_delay_s)
    assert folds[("trtllm", "hopper", "h100_sxm")] == expected
    assert {i: held[i] for i in hopper} == rec.predict(hopper, expected)
    assert all(held[i] != rec.predict([i], general)[i] for i in hopper)  # the hold moved them
    fits = {("trtllm", "blackwell"): own}  # Hopper ships no fit: general and carried
    shipped = rec.shipped(fits)
    assert {i: shipped[i] for i in hopper} == rec.predict(hopper, expected)
