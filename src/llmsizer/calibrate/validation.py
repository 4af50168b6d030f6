"""How well the GPU model predicts published measurements, per source and overall.

`validate` predicts every case of a `CalibrationSet` under each named set of efficiency
factors (the unfitted priors, the fitted ones) and compares each measured metric with its
prediction; `ValidationReport.to_markdown` renders, per source and overall, the number of
rows and the median (MdAPE) and mean (MAPE) absolute percentage error of output
throughput, TTFT and ITL/TPOT, the issue's bars, the worst rows and every skipped row.

Predictions are `predict`'s: each case is simulated (`record_trace`) and re-priced per
factor set (`llmsizer.calibrate.replay`), which equals `predict` exactly for offline and
closed-loop cases under any factors; Poisson cases are simulated once per factor set.

The shipped fit prices each row as its runtime ran (`shipped_factors`): a row of
TensorRT-LLM's C++ runtime (TensorRT engines, no CUDA graphs) with the C++ runtime's own
general fit (`calibrate/data/calibrated_trtllm_cpp.yaml`, written with the engine's general
fit by `bench/validate_perf.py --fit`), every other row as `predict` prices it
(`calibrated_for`: the PyTorch backend's, which `llmsizer predict` and the AIC rows use).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from llmsizer.calibrate.fit import predictions
from llmsizer.calibrate.gpu_fit import LATENCY_METRICS
from llmsizer.calibrate.measurements import Measurement, Skipped, load_measurements
from llmsizer.calibrate.record import record_traces
from llmsizer.calibrate.replay import ScheduleTrace
from llmsizer.errors import parse_yaml
from llmsizer.instance import PredictSpec, calibrated_for
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.calibrated import CalibrationFile, packaged_calibration, parse_calibration
from llmsizer.perf.efficiency import EnginePreset, default_efficiency
from llmsizer.sweep import Sweep

FactorSet = Callable[[Measurement], EfficiencyFactors]  # a row -> the factors that price it
CPP_RUNTIME_FILE = "calibrated_trtllm_cpp.yaml"  # in llmsizer/calibrate/data
GROUPS = {
    "output_throughput": "throughput",
    "output_throughput_per_gpu": "throughput",
    "request_throughput": "throughput",
    "mean_ttft_ms": "ttft",
    "mean_tpot_ms": "itl",
    "mean_itl_ms": "itl",
}
GROUP_TITLES = {
    "throughput": "Output throughput (tok/s; per GPU or req/s where the source says so)",
    "ttft": "TTFT (mean, ms)",
    "itl": "ITL / TPOT (mean, ms)",
}
BAR_SOURCES = ("TRTLLM_PERF_v0.17", "TRTLLM_PERF_v1.0")
ONLINE_SOURCE = "TRTLLM_ONLINE_v0.14"


def is_bar_offline(m: Measurement) -> bool:
    """The issue's first bar set: TensorRT-LLM offline throughput, FP8/BF16, H100/H200."""
    s = m.spec
    return (
        m.source_id in BAR_SOURCES
        and s.offline
        and s.precision in ("fp8", "bf16")
        and s.gpu in ("h100-sxm", "h200-sxm")
    )


def is_online(m: Measurement) -> bool:
    return m.source_id == ONLINE_SOURCE


@dataclass(frozen=True, slots=True)
class Comparison:
    """One measured metric of one row and its prediction under each factor set."""

    measurement: Measurement
    metric: str
    measured: float
    predicted: Mapping[str, float]

    @property
    def group(self) -> str:
        return GROUPS[self.metric]

    def ape_pct(self, factor_set: str) -> float:
        return 100.0 * abs(self.predicted[factor_set] / self.measured - 1.0)


@dataclass(frozen=True, slots=True)
class ErrorStats:
    num_rows: int
    median_ape_pct: float
    mean_ape_pct: float


@dataclass(frozen=True, slots=True)
class Bar:
    """A bar of the issue: rows selected, a metric group, and the MdAPE allowed."""

    name: str
    select: Callable[[Measurement], bool]
    group: str
    max_median_ape_pct: float


BARS = (
    Bar("TRT-LLM offline throughput, FP8/BF16, H100/H200", is_bar_offline, "throughput", 15.0),
    Bar("TRT-LLM online table (v0.14): ITL", is_online, "itl", 15.0),
    Bar("TRT-LLM online table (v0.14): TTFT", is_online, "ttft", 25.0),
)


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """Every comparison, the factor sets compared (the last is the one judged against the
    bars), the skipped rows, and which rows the judged factors were fitted on."""

    comparisons: tuple[Comparison, ...]
    factor_sets: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    fitted_rows: frozenset[int] = frozenset()

    def stats(
        self,
        factor_set: str,
        group: str,
        select: Callable[[Measurement], bool] = lambda _: True,
    ) -> ErrorStats | None:
        """Errors of `group` metrics over the rows `select` keeps (None: no such rows)."""
        ape = np.array(
            [
                c.ape_pct(factor_set)
                for c in self.comparisons
                if c.group == group and select(c.measurement)
            ]
        )
        if ape.size == 0:
            return None
        return ErrorStats(int(ape.size), float(np.median(ape)), float(ape.mean()))

    def sources(self) -> list[str]:
        found = {c.measurement.source_id for c in self.comparisons}
        return sorted(found | {s.source_id for s in self.skipped})

    def bar_met(self, bar: Bar, factor_set: str) -> bool:
        s = self.stats(factor_set, bar.group, bar.select)
        return s is not None and s.median_ape_pct <= bar.max_median_ape_pct

    def to_markdown(self, preamble: str = "", num_worst: int = 15) -> str:
        """Bars, per-source error tables, the worst rows and the skipped rows."""
        return "\n".join(
            [
                "# The performance model against published measurements",
                "",
                preamble,
                *_bars_section(self),
                *(line for g in GROUP_TITLES for line in _group_section(self, g)),
                *_held_out_section(self),
                *_worst_section(self, num_worst),
                *_coverage_section(self),
            ]
        )


def validate(
    measurements: Sequence[Measurement],
    factor_sets: Mapping[str, FactorSet],
    skipped: Sequence[Skipped] = (),
    *,
    fitted_rows: frozenset[int] = frozenset(),
    workers: int | Sweep = 1,
    progress: Callable[[str], None] | None = None,
) -> ValidationReport:
    """Predict every measurement under each factor set and compare (module docstring)."""
    say = progress or (lambda _: None)
    specs = [m.spec for m in measurements]
    latencies = [bool(LATENCY_METRICS & set(m.measured)) for m in measurements]
    targets = [(i, k, v) for i, m in enumerate(measurements) for k, v in m.measured.items()]
    predicted: dict[str, list[float]] = {}
    traces: dict[int, ScheduleTrace] = {}
    for name, factor_set in factor_sets.items():
        eff = [factor_set(m) for m in measurements]
        redo = [i for i, s in enumerate(specs) if i not in traces or s.request_rate is not None]
        say(f"{name}: simulating {len(redo)} cases")
        traces.update(_record(specs, redo, latencies, eff, workers))
        predicted[name] = [
            predictions([traces[i]], [(0, metric, value)], eff[i])[0]
            for i, metric, value in targets
        ]
    comparisons = tuple(
        Comparison(measurements[i], metric, value, {n: p[j] for n, p in predicted.items()})
        for j, (i, metric, value) in enumerate(targets)
    )
    return ValidationReport(comparisons, tuple(factor_sets), tuple(skipped), fitted_rows)


def _priors(m: Measurement) -> EfficiencyFactors:
    return default_efficiency(m.spec.preset)


@cache
def cpp_runtime_calibration() -> CalibrationFile:
    """The C++ runtime's general fit, shipped in `calibrate/data/` (module docstring)."""
    text = resources.files("llmsizer.calibrate").joinpath("data", CPP_RUNTIME_FILE).read_text()
    return parse_calibration(parse_yaml(text), CPP_RUNTIME_FILE)


def shipped_factors(m: Measurement) -> EfficiencyFactors:
    """The shipped factors that price row `m` as its runtime ran it (module docstring)."""
    if m.runtime == "cpp":
        return cpp_runtime_calibration().efficiency()
    return calibrated_for(m.spec)


def validate_calibration_set(
    csv_path: Path, *, workers: int | Sweep = 1, progress: Callable[[str], None] | None = None
) -> ValidationReport:
    """The published calibration set under the priors ("default") and the shipped fit
    ("fitted"), with the rows the shipped fit used marked: what `bench/validate_perf.py`
    renders and a `llmsizer validate` command can call."""
    data = load_measurements(csv_path)
    fits = (packaged_calibration(EnginePreset.TRTLLM), cpp_runtime_calibration())
    ids = " ".join(str(f.fitted_on.get("row_ids", "")) for f in fits)
    return validate(
        data.measurements,
        {"default": _priors, "fitted": shipped_factors},
        data.skipped,
        fitted_rows=frozenset(int(i) for i in ids.split()),
        workers=workers,
        progress=progress,
    )


def _record(
    specs: Sequence[PredictSpec],
    which: Sequence[int],
    latencies: Sequence[bool],
    eff: Sequence[EfficiencyFactors],
    workers: int | Sweep,
) -> dict[int, ScheduleTrace]:
    """Traces of the specs at `which`, each recorded under its own factors."""
    out: dict[int, ScheduleTrace] = {}
    for factors in dict.fromkeys(eff[i] for i in which):
        idx = [i for i in which if eff[i] == factors]
        got = record_traces([specs[i] for i in idx], factors, [latencies[i] for i in idx], workers)
        out.update(zip(idx, got, strict=True))
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _stats_cells(report: ValidationReport, group: str, select: Callable[..., bool]) -> list[str]:
    stats = [report.stats(f, group, select) for f in report.factor_sets]
    if stats[0] is None:
        return []
    medians = [_pct(s.median_ape_pct if s else None) for s in stats]
    means = [_pct(s.mean_ape_pct if s else None) for s in stats]
    return [str(stats[0].num_rows), *medians, *means]


def _header(first: str, report: ValidationReport) -> list[str]:
    sets = report.factor_sets
    cols = [first, "rows", *(f"MdAPE % {f}" for f in sets), *(f"MAPE % {f}" for f in sets)]
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]


def _bars_section(report: ValidationReport) -> list[str]:
    last = report.factor_sets[-1]
    lines = ["", "## Bars (issue 3)", "", *_header("bar (MdAPE allowed)", report)]
    lines[-2] = lines[-2][:-1] + f"| met ({last}) |"
    lines[-1] += "---|"
    for bar in BARS:
        cells = _stats_cells(report, bar.group, bar.select) or ["0"]
        met = "yes" if report.bar_met(bar, last) else "**no**"
        name = f"{bar.name} (<= {bar.max_median_ape_pct:.0f} %)"
        lines.append("| " + " | ".join([name, *cells, met]) + " |")
    return lines


def _group_section(report: ValidationReport, group: str) -> list[str]:
    lines = ["", f"## {GROUP_TITLES[group]}", "", *_header("source", report)]
    for source in report.sources():
        cells = _stats_cells(report, group, lambda m, s=source: m.source_id == s)
        if cells:
            lines.append("| " + " | ".join([source, *cells]) + " |")
    cells = _stats_cells(report, group, lambda _: True)
    lines.append("| " + " | ".join(["**all**", *cells]) + " |")
    return lines


def _held_out_section(report: ValidationReport) -> list[str]:
    if not report.fitted_rows:
        return []
    last = report.factor_sets[-1]
    lines = ["", f"## Rows the fit used and rows it did not ({last})", ""]
    lines += ["| metric | rows fitted | MdAPE % | MAPE % | rows held out | MdAPE % | MAPE % |"]
    lines += ["|---|---|---|---|---|---|---|"]

    def fitted(m: Measurement) -> bool:
        return m.row_id in report.fitted_rows

    for group in GROUP_TITLES:
        cells = [group]
        for select in (fitted, lambda m: not fitted(m)):
            s = report.stats(last, group, select)
            cells += (
                [str(s.num_rows), _pct(s.median_ape_pct), _pct(s.mean_ape_pct)]
                if s is not None
                else ["0", "-", "-"]
            )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _describe(m: Measurement) -> list[str]:
    s = m.spec
    load = (
        "offline"
        if s.offline
        else f"{s.request_rate:g} req/s"
        if s.request_rate is not None
        else f"concurrency {s.concurrency}"
    )
    layout = f"{s.tensor_parallel_size}x{s.pipeline_parallel_size}"
    return [str(m.row_id), m.source_id, s.model, s.gpu, s.precision, layout,
            f"{s.isl}/{s.osl}", load]  # fmt: skip


def _worst_section(report: ValidationReport, num: int) -> list[str]:
    last = report.factor_sets[-1]
    worst = sorted(report.comparisons, key=lambda c: -c.ape_pct(last))[:num]
    cols = ["row", "source", "model", "gpu", "precision", "tp x pp", "isl/osl", "load",
            "metric", "measured", *report.factor_sets, f"error % {last}"]  # fmt: skip
    lines = ["", f"## The {num} worst predictions ({last})", ""]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for c in worst:
        values = [f"{c.predicted[f]:.4g}" for f in report.factor_sets]
        error = 100.0 * (c.predicted[last] / c.measured - 1.0)
        cells = [*_describe(c.measurement), c.metric, f"{c.measured:.4g}", *values]
        lines.append("| " + " | ".join([*cells, f"{error:+.0f}"]) + " |")
    return lines


def _coverage_section(report: ValidationReport) -> list[str]:
    lines = ["", "## Rows used and skipped, per source", ""]
    lines += ["| source | rows used | rows skipped | why skipped |", "|---|---|---|---|"]
    for source in report.sources():
        used = {
            c.measurement.row_id for c in report.comparisons if c.measurement.source_id == source
        }
        reasons: dict[str, int] = {}
        for s in report.skipped:
            if s.source_id == source:
                reasons[s.reason] = reasons.get(s.reason, 0) + 1
        why = "; ".join(f"{n}: {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        lines.append(f"| {source} | {len(used)} | {sum(reasons.values())} | {why or '-'} |")
    return lines
