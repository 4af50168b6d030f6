"""The validation report: predictions equal `predict`, errors are what they say, and the
markdown shows every source, the bars, the worst rows and the skipped rows."""

import pytest

from llmsizer.calibrate.measurements import Measurement, Skipped
from llmsizer.calibrate.validation import BARS, validate
from llmsizer.instance import PredictSpec, predict
from llmsizer.perf import default_efficiency

SLOW = default_efficiency("trtllm").replace(gemm_bandwidth_efficiency=0.5)


def measurement(row_id: int, source: str, spec: PredictSpec, **measured: float) -> Measurement:
    return Measurement(row_id, source, spec, measured, "A", "cpp")


@pytest.fixture(scope="module")
def report():
    offline = PredictSpec(
        model="llama-3.1-8b",
        gpu="h100",
        precision="fp8",
        kv_precision="fp8",
        isl=512,
        osl=64,
        offline=True,
        engine="trtllm",
        num_requests=100,
    )
    online = PredictSpec(model="llama-3.1-8b", gpu="h200", isl=300, osl=40, request_rate=8.0,
                         engine="trtllm", num_requests=60)  # fmt: skip
    rows = [
        measurement(1, "TRTLLM_PERF_v0.17", offline, output_throughput=10000.0),
        measurement(2, "TRTLLM_ONLINE_v0.14", online, mean_ttft_ms=20.0, mean_tpot_ms=7.0),
    ]
    skipped = [Skipped(3, "COURSE", "not one configuration's measurement (ratio)")]
    factor_sets = {"default": lambda m: default_efficiency(m.spec.preset), "slow": lambda _: SLOW}
    return validate(rows, factor_sets, skipped, fitted_rows=frozenset({1}))


def test_predictions_are_predicts(report):
    for c in report.comparisons:
        for name, eff in (("default", default_efficiency("trtllm")), ("slow", SLOW)):
            expected = predict(c.measurement.spec, eff).summary[c.metric]
            assert c.predicted[name] == pytest.approx(expected, rel=1e-9)


def test_errors_and_stats(report):
    c = report.comparisons[0]
    assert c.ape_pct("slow") == pytest.approx(100 * abs(c.predicted["slow"] / 10000.0 - 1))
    stats = report.stats("slow", "throughput")
    assert stats is not None and stats.num_rows == 1
    assert stats.median_ape_pct == pytest.approx(c.ape_pct("slow"))
    assert report.stats("slow", "ttft", lambda m: m.source_id == "COURSE") is None


def test_the_markdown_shows_every_source_bar_and_skip(report):
    text = report.to_markdown("preamble text")
    assert "preamble text" in text
    for source in ("TRTLLM_PERF_v0.17", "TRTLLM_ONLINE_v0.14", "COURSE"):
        assert source in text
    for bar in BARS:
        assert bar.name in text
    assert "MdAPE % default | MdAPE % slow" in text
    assert "rows held out" in text
    assert "1: not one configuration's measurement (ratio)" in text
