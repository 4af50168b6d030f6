"""The serving simulator against AIConfigurator's silicon measurements: the honest baseline.

    .venv/bin/python bench/validate_aic.py                 # every mapped row
    options: --csv PATH (default ../shared/calibration/aic_silicon_calibration.csv),
             --sample K (every K-th mapped row), --limit N (the first N of those),
             --workers N (processes, default 2), --out CSV (one line per predicted row),
             --report PATH (default examples/validation/aic_baseline.md)

Every row is mapped to a closed-loop `PredictSpec` or skipped with a reason
(`llmsizer.calibrate.aic`); each mapped row is simulated by `predict` with the shipped
factors, and its mean TTFT and TPOT compared with the measured ones. The report gives, per
engine, GPU, model, lengths and concurrency: rows, the median and p90 absolute percentage
error and the median signed error (bias: + means predicted too high) of each metric, and the
skipped rows by reason.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from llmsizer.calibrate.aic import AicCase, AicSkipped, load_aic
from llmsizer.instance import predict

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "calibration" / "aic_silicon_calibration.csv"
REPORT = REPO / "examples" / "validation" / "aic_baseline.md"
METRICS = ("mean_ttft_ms", "mean_tpot_ms")


@dataclass(frozen=True, slots=True)
class Result:
    case: AicCase
    predicted: dict[str, float]

    def error_pct(self, metric: str) -> float:
        """Signed: + when the prediction is above the measurement."""
        return 100.0 * (self.predicted[metric] / self.case.measured[metric] - 1.0)


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _predict(case: AicCase) -> dict[str, float]:
    summary = predict(case.spec).summary
    return {m: summary[m] for m in METRICS}


def run(cases: Sequence[AicCase], workers: int) -> list[Result]:
    results: list[Result] = []
    with ProcessPoolExecutor(workers) as pool:
        for i, (case, predicted) in enumerate(zip(cases, pool.map(_predict, cases), strict=True)):
            results.append(Result(case, predicted))
            if (i + 1) % 50 == 0:
                say(f"{i + 1}/{len(cases)} rows")
    return results


class Scored(Protocol):
    """A predicted row: a `Result`, or a disaggregated fleet's (`fit_aic_disagg.DisaggRow`)."""

    def error_pct(self, metric: str) -> float: ...


S = TypeVar("S", bound=Scored)


def stats(results: Sequence[Scored], metric: str) -> str:
    err = np.array([r.error_pct(metric) for r in results])
    ape = np.abs(err)
    return f"{np.median(ape):.0f} | {np.percentile(ape, 90):.0f} | {np.median(err):+.0f}"


def summary_line(name: str, results: Sequence[Scored]) -> str:
    """One run's row of a report's summary table: per metric, median / p90 of the absolute
    error and the median signed error (bias)."""
    if not results:
        return f"| {name} | 0 | - | - |"
    cells = []
    for metric in METRICS:
        err = np.array([r.error_pct(metric) for r in results])
        cells.append(
            f"{np.median(np.abs(err)):.0f} % / {np.percentile(np.abs(err), 90):.0f} % "
            f"({np.median(err):+.0f} %)"
        )
    return f"| {name} | {len(results)} | {cells[0]} | {cells[1]} |"


def table(
    title: str,
    column: str,
    results: Sequence[S],
    key: Callable[[S], str],
    *,
    heading: str = "###",
    order: Callable[[str], Any] = lambda name: _natural(name),
) -> list[str]:
    """Median, p90 and bias of TTFT and TPOT by `key`, then over all: a markdown table
    under a `heading` title, its groups sorted by `order`."""
    groups: dict[str, list[S]] = {}
    for r in results:
        groups.setdefault(key(r), []).append(r)
    lines = [
        f"{heading} {title}",
        "",
        f"| {column} | rows | TTFT median | p90 | bias | TPOT median | p90 | bias |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(groups, key=order):
        rs = groups[name]
        row = f"| {name} | {len(rs)} | {stats(rs, METRICS[0])} | {stats(rs, METRICS[1])} |"
        lines.append(row)
    rs = list(results)
    lines += [f"| all | {len(rs)} | {stats(rs, METRICS[0])} | {stats(rs, METRICS[1])} |", ""]
    return lines


def _natural(name: str) -> tuple[str, int, str]:
    """Sort `vllm c<=32` before `vllm c<=128`: by the words, then the last one's number."""
    words, _, last = name.rpartition(" ")
    digits = re.match(r"\D*(\d+)", last)
    return (words, int(digits.group(1)) if digits else 0, last)


def concurrency_band(r: Result) -> str:
    c = r.case.spec.concurrency or 0
    low = 1
    for edge in (8, 32, 128, 512):
        if c <= edge:
            return f"c{low}-{edge}"
        low = edge + 1
    return "c513+"


def report(
    results: Sequence[Result], skipped: Sequence[AicSkipped], num_rows: int, how: str
) -> str:
    lines = [
        "# The serving simulator against AIC silicon measurements: baseline",
        "",
        "Produced by `bench/validate_aic.py` (" + how + ") from "
        "`shared/calibration/aic_silicon_calibration.csv`; mapping rules in "
        "`llmsizer.calibrate.aic`. Before any accuracy work: engine presets with their "
        "defaults, shipped efficiency factors.",
        "",
        "Workload as measured (`docs/aic_measurement.md`): a closed loop of c clients that "
        "all start at t = 0 on an idle engine; InferenceX rows send 10 c requests with input "
        "and output lengths uniform in [int(0.8 L), L]; AIC gap-analysis rows send 20 c with "
        "fixed lengths. Nothing is dropped as warm-up: the client's warm-up drains before "
        "the timed run starts.",
        "",
        f"{num_rows} rows: {num_rows - len(skipped)} mapped, {len(results)} predicted here, "
        f"{len(skipped)} skipped. Errors are prediction / measurement - 1 in %: median and "
        "90th percentile of the absolute error, and the median signed error (bias; + means "
        "predicted too high). TTFT and TPOT are the run means.",
        "",
    ]
    lines += table("By engine", "engine", results, lambda r: r.case.backend)
    lines += table(
        "By engine and GPU", "engine, GPU", results, lambda r: f"{r.case.backend} {r.case.system}"
    )
    lines += table("By model", "model", results, lambda r: r.case.model)
    lines += table(
        "By engine and isl/osl",
        "engine, isl/osl",
        results,
        lambda r: f"{r.case.backend} {r.case.isl}/{r.case.spec.osl}",
    )
    lines += table(
        "By engine and concurrency",
        "engine, clients",
        results,
        lambda r: f"{r.case.backend} {concurrency_band(r)}",
    )
    lines += ["### Skipped rows by reason", "", "| reason | rows |", "|---|---:|"]
    for reason, n in Counter(s.reason for s in skipped).most_common():
        lines.append(f"| {reason} | {n} |")
    return "\n".join(lines) + "\n"


def write_rows(path: Path, results: Sequence[Result]) -> None:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            ["id", "backend", "system", "model", "isl", "osl", "concurrency", "tp"]
            + [f"{k}_{m}" for m in METRICS for k in ("measured", "predicted")]
            + ["note"]
        )
        for r in results:
            s = r.case.spec
            values = [v for m in METRICS for v in (r.case.measured[m], r.predicted[m])]
            out.writerow(
                [
                    r.case.row_id,
                    r.case.backend,
                    r.case.system,
                    r.case.model,
                    r.case.isl,
                    s.osl,
                    s.concurrency,
                    s.tensor_parallel_size,
                    *values,
                    r.case.note,
                ]
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--sample", type=int, default=1, help="every K-th mapped row")
    parser.add_argument("--limit", type=int, default=None, help="at most N rows")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="per-row CSV")
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args()
    mapped = load_aic(args.csv)
    cases = [m for m in mapped if isinstance(m, AicCase)][:: args.sample][: args.limit]
    skipped = [m for m in mapped if isinstance(m, AicSkipped)]
    say(f"{len(mapped)} rows, {len(skipped)} skipped; predicting {len(cases)}")
    t0 = time.perf_counter()
    results = run(cases, args.workers)
    say(f"predicted in {time.perf_counter() - t0:.0f} s")
    how = f"one mapped row in {args.sample}" if args.sample > 1 else "every mapped row"
    if args.limit is not None:
        how += f", at most {args.limit}"
    args.report.write_text(report(results, skipped, len(mapped), how))
    if args.out is not None:
        write_rows(args.out, results)
    say(f"wrote {args.report}")


if __name__ == "__main__":
    main()
