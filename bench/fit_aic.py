"""Fit the efficiency factors per engine and GPU architecture on the AIC silicon rows, and
report their cross-validated accuracy (leave one GPU out, leave one model out).

    .venv/bin/python bench/fit_aic.py                     # report only
    .venv/bin/python bench/fit_aic.py --write             # also the shipped factor files
    options: --csv PATH, --workers N (default 2), --sample K (every K-th row),
             --ray / --ray-address ADDR (record the schedules on a local Ray / a cluster),
             --report PATH (default examples/validation/aic_accuracy.md),
             --plot PATH (default examples/validation/aic_accuracy.png),
             --rows PATH (per-row CSV, default examples/validation/aic_accuracy_rows.csv),
             --cache PATH (the recorded schedules: rows held with the same spec are read,
             the others recorded and added; with every row cached the fits and folds
             are the run: with more than one candidate prior, `aic_prior.CANDIDATES`,
             each fit's prior is chosen by a nested leave one model out,
             `aic_fit.Recorded.choose`, 3-5x the fits of a plain cross-validation),
             --disagg-cache PATH, --disagg-sample K, --disagg-ids ROWS, --no-disagg (the
             disaggregated rows: `bench/fit_aic_disagg.py`, each simulated per run; PATH
             keeps them, default
             the --cache path with `.disagg` added; they are most of the run time; ROWS, an
             earlier run's `_disagg.csv`, names the rows to simulate: the same sample)

Every mapped row is simulated once and its schedule re-priced for each fit
(`llmsizer.calibrate.aic_fit`). `--write` stores each (engine, architecture) group's fit as
`src/llmsizer/perf/data/calibrated_<engine>_<architecture>.yaml`, which `make_instance`
then uses for that engine on GPUs of that architecture.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import pickle
import time
from collections.abc import Sequence
from pathlib import Path

import fit_aic_disagg
import numpy as np
from validate_aic import CSV, METRICS, Result, concurrency_band, say, summary_line, table

from llmsizer.calibrate.aic import AicCase, AicSkipped, load_aic
from llmsizer.calibrate.aic_carry import carried_file, carried_fits, carried_provenance
from llmsizer.calibrate.aic_fit import (
    MIN_FIT_ROWS,
    Group,
    Memo,
    Predicted,
    Recorded,
    group_of,
    is_aic,
    measurement_cases,
    ships,
)
from llmsizer.calibrate.aic_prior import FitPrior
from llmsizer.calibrate.features import NUM_FEATURES
from llmsizer.calibrate.gpu_fit import calibration_file
from llmsizer.calibrate.measurements import load_measurements
from llmsizer.calibrate.replay import ScheduleTrace
from llmsizer.instance import PredictSpec
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.calibrated import save_calibration
from llmsizer.sweep import Sweep, open_sweep

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "examples" / "validation"
DATA = REPO / "src" / "llmsizer" / "perf" / "data"
MEASUREMENTS = CSV.with_name("measurements.csv")


def region(r: Result) -> str:
    """Load region: small or large batch (c <= 16), short or long prompt (isl <= 2048)."""
    c, isl = r.case.spec.concurrency or 0, r.case.isl  # the row's prompt
    return f"{r.case.backend} {'small' if c <= 16 else 'large'} batch, " + (
        "short prompt" if isl <= 2048 else "long prompt"
    )


def family(r: Result) -> str:
    return r.case.model.split("-")[0]


def tables(title: str, results: Sequence[Result]) -> list[str]:
    lines = [f"## {title}", ""]
    lines += table("By engine", "engine", results, lambda r: r.case.backend)
    lines += table(
        "By engine and GPU", "engine, GPU", results, lambda r: f"{r.case.backend} {r.case.system}"
    )
    lines += table(
        "By engine and model family", "engine, family", results,
        lambda r: f"{r.case.backend} {family(r)}",
    )  # fmt: skip
    lines += table("By load region", "engine, region", results, region)
    lines += table(
        "By engine and concurrency", "engine, clients", results,
        lambda r: f"{r.case.backend} {concurrency_band(r)}",
    )  # fmt: skip
    return lines


def as_results(cases: Sequence[AicCase], predicted: Predicted) -> list[Result]:
    """The AIC rows' results (`cases` come first in the recording; the measurement rows
    fitted beside them are not scored here)."""
    return [Result(cases[i], p) for i, p in sorted(predicted.items()) if i < len(cases)]


def report(
    recorded: Recorded,
    runs: dict[str, Predicted],
    skipped: Sequence[AicSkipped],
    num_rows: int,
    fits: dict[tuple[str, str], object],
) -> str:
    cases = [c for c in recorded.cases if is_aic(c)]
    lines = [
        "# Accuracy on the AIC silicon rows: fitted per engine and GPU architecture, "
        "cross-validated",
        "",
        "Produced by `bench/fit_aic.py` from `shared/calibration/aic_silicon_calibration.csv` "
        "(mapping: `llmsizer.calibrate.aic`, launch settings: `llmsizer.calibrate.aic_launch`, "
        "fits: `llmsizer.calibrate.aic_fit`). Errors are prediction / measurement - 1: "
        "median and p90 of the absolute error, and the median signed error (bias; + is "
        "predicted too high), of the run means of TTFT and TPOT. The rows report no "
        "throughput, so none is scored here (`measurements.csv` scores it: "
        "`bench/validate_perf.py`).",
        "",
        f"{num_rows} rows: {len(cases)} predicted, {len(skipped)} skipped with a reason "
        "(`aic_baseline.md` lists them). Predicted and reported but not fitted on: "
        f"{sum(c.unfitted is not None for c in cases)} rows whose prompts the server saw at "
        "another length or whose prompt count is not known (`llmsizer.calibrate.aic_clients`). "
        f"{sum(c.first_use_builds > 0 for c in cases)} rows waited for a cold server's one-off "
        "build (`first_use_build_s`).",
        "",
        "- **shipped**: every row priced by the factors that ship for it: its (engine, "
        "architecture) group's fit on these rows and the `measurements.csv` rows of the same "
        "GPUs (Blackwell), else the engine's general fit (`measurements.csv`, which covers "
        "Ampere and Hopper);",
        "- **leave one GPU out**: each GPU's rows priced by factors fitted on the other GPUs "
        "of its engine and architecture (or, when none is left, the engine's general fit);",
        "- **leave one model out**: the same, holding out each model.",
        "",
        "| run | rows | TTFT median / p90 (bias) | TPOT median / p90 (bias) |",
        "|---|---:|---:|---:|",
    ]
    for name, predicted in runs.items():
        lines.append(summary_line(name, as_results(cases, predicted)))
    lines.append("")
    for name in ("leave one GPU out", "leave one model out", "shipped"):
        lines += tables(name, as_results(cases, runs[name]))
    lines += ["## The fitted factors", ""]
    for (engine, arch), fit in sorted(fits.items()):
        lines.append(f"- `{engine}` on {arch}: {fit}")
    return "\n".join(lines) + "\n"


def plot(path: Path, results: Sequence[Result], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, metric in zip(axes, METRICS, strict=True):
        for engine in sorted({r.case.backend for r in results}):
            rs = [r for r in results if r.case.backend == engine]
            ax.scatter(
                [r.case.measured[metric] for r in rs],
                [r.predicted[metric] for r in rs],
                s=8,
                alpha=0.6,
                label=engine,
            )
        values = [v for r in results for v in (r.case.measured[metric], r.predicted[metric])]
        lo, hi = min(values), max(values)
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        for f in (0.8, 1.25):
            ax.plot([lo, hi], [lo * f, hi * f], "k:", lw=0.6)
        ax.set(xscale="log", yscale="log", xlabel=f"measured {metric}",
               ylabel=f"predicted {metric}")  # fmt: skip
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_rows(path: Path, cases: Sequence[AicCase], runs: dict[str, Predicted]) -> None:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            ["id", "backend", "system", "model", "isl", "osl", "concurrency", "tp"]
            + [f"measured_{m}" for m in METRICS]
            + [f"{run.replace(' ', '_')}_{m}" for run in runs for m in METRICS]
        )
        for i, c in enumerate(cases):
            s = c.spec
            out.writerow(
                [c.row_id, c.backend, c.system, c.model, c.isl, s.osl, s.concurrency]
                + [s.tensor_parallel_size]
                + [f"{c.measured[m]:.4g}" for m in METRICS]
                + [f"{runs[run][i][m]:.4g}" for run in runs for m in METRICS]
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="record the schedules on Ray")
    parser.add_argument("--ray-address", default=None, help="a Ray cluster to record on")
    parser.add_argument("--sample", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="write the shipped factor files")
    parser.add_argument("--report", type=Path, default=OUT / "aic_accuracy.md")
    parser.add_argument("--plot", type=Path, default=OUT / "aic_accuracy.png")
    parser.add_argument("--rows", type=Path, default=OUT / "aic_accuracy_rows.csv")
    parser.add_argument("--cache", type=Path, default=None, help="recorded schedules (pickle)")
    parser.add_argument(
        "--disagg-cache",
        type=Path,
        default=None,
        help="the disaggregated rows' simulations (pickle; default: --cache with .disagg added)",
    )
    parser.add_argument(
        "--disagg-sample", type=int, default=1, help="simulate every K-th disaggregated row"
    )
    parser.add_argument(
        "--disagg-ids", type=Path, default=None, help="simulate the rows of this _disagg.csv"
    )
    parser.add_argument("--no-disagg", action="store_true", help="leave the disaggregated out")
    parser.add_argument(
        "--architectures",
        default="blackwell,vllm:hopper,trtllm:hopper",
        help="comma-separated GPU architectures (or engine:architecture groups) whose fits "
        "ship; the others keep the engine's general fit. SGLang on Hopper has no rows; "
        "TensorRT-LLM on Hopper fits its weight streaming and a MoE model's first-token hold "
        "(aic_prior.GROUP_CANDIDATES)",
    )
    args = parser.parse_args()
    mapped = load_aic(args.csv)
    cases = [m for m in mapped if isinstance(m, AicCase)][:: args.sample]
    skipped = [m for m in mapped if isinstance(m, AicSkipped)]
    t0 = time.perf_counter()
    shipping = set(args.architectures.split(","))
    tables = measurement_cases(load_measurements(MEASUREMENTS).measurements, shipping)
    say(f"recording {len(tables)} measurements.csv rows on {sorted(shipping)} GPUs")
    with open_sweep(args.workers, ray=args.ray, ray_address=args.ray_address) as sweep:
        recorded = _recorded(cases, sweep, args.cache) + Recorded.record(tables, sweep)
    say(f"recorded in {time.perf_counter() - t0:.0f} s; fitting")
    enough = {g for g, idx in recorded.groups().items() if recorded.num_fitted(idx) >= MIN_FIT_ROWS}
    priors: dict[tuple[str, ...], FitPrior] = {}  # the prior each fit and fold chose
    memo: Memo = {}  # the folds' fits, shared (Recorded.fitted)
    fitted = recorded.fit_groups(chosen=priors, memo=memo)
    fits = carried_fits({g: f for g, f in fitted.items() if ships(g, shipping) and g in enough})
    by_gpu: dict[tuple[str, str, str], EfficiencyFactors] = {}  # each fold's factors
    by_model: dict[tuple[str, str, str], EfficiencyFactors] = {}
    runs = {
        "shipped": recorded.shipped(fits),
        "leave one GPU out": recorded.leave_one_out(
            lambda c: c.system, shipping, folds=by_gpu, chosen=priors, memo=memo
        ),
        "leave one model out": recorded.leave_one_out(
            lambda c: c.model, shipping, folds=by_model, chosen=priors, memo=memo
        ),
    }
    say(f"fitted and cross-validated in {time.perf_counter() - t0:.0f} s")
    shown = {g: _factors_text(f.factors.as_dict()) for g, f in fits.items()}
    text = report(recorded, runs, skipped, len(mapped), shown) + _priors_text(priors, fits)
    if args.write:
        digest = hashlib.sha256(args.csv.read_bytes()).hexdigest()
        for (engine, arch), fit in fits.items():
            rows = sum(1 for c in cases if group_of(c) == (engine, arch))

            def held(run: str, group: tuple[str, str] = (engine, arch)) -> list[Result]:
                return [
                    Result(c, runs[run][i]) for i, c in enumerate(cases) if group_of(c) == group
                ]

            beside = sum(1 for c in tables if group_of(c) == (engine, arch))
            fitted_on = {
                "data": "shared/calibration/aic_silicon_calibration.csv",
                "sha256": digest,
                "num_rows": rows,
                "also": f"{beside} rows of shared/calibration/measurements.csv on these GPUs",
                "by": "bench/fit_aic.py --write",
                "leave_one_gpu_out": cross_validated(held("leave one GPU out")),
                "leave_one_model_out": cross_validated(held("leave one model out")),
                "prior": priors[(engine, arch)].describe(),
            } | carried_provenance((engine, arch), fits)
            path = DATA / f"calibrated_{engine}_{arch}.yaml"
            save_calibration(path, calibration_file(fit, engine, fitted_on))
            say(f"wrote {path}")
        for engine in sorted({e for e, _ in fits}):  # what other generations get (aic_carry)
            (path := DATA / f"carried_{engine}.yaml").unlink(missing_ok=True)  # none: no file
            if carried := carried_file(engine, fits, digest):
                save_calibration(path, carried)
    # the factors, the aggregated report and its rows first: the disaggregated section
    # (most of the run time) only adds to the report
    args.report.write_text(text)
    plot(args.plot, as_results(cases, runs["leave one GPU out"]), "leave one GPU out")
    write_rows(args.rows, cases, runs)
    if not args.no_disagg:
        cache = args.disagg_cache
        if cache is None and args.cache is not None:
            cache = args.cache.with_name(args.cache.name + ".disagg")
        lines, disagg_runs = fit_aic_disagg.section(
            args.csv, fits, skipped, len(mapped), (by_gpu, by_model),
            cache_path=cache, workers=args.workers, sample=args.disagg_sample,
            ids=_ids(args.disagg_ids),
        )  # fmt: skip
        text += "\n" + "\n".join(lines)
        fit_aic_disagg.write_rows(args.rows.with_name(args.rows.stem + "_disagg.csv"), disagg_runs)
        say(f"disaggregated rows in {time.perf_counter() - t0:.0f} s")
        args.report.write_text(text)
    say(f"wrote {args.report}")


def _ids(path: Path | None) -> set[str]:
    """The row ids of an earlier run's per-row disaggregated CSV (none: sample)."""
    if path is None:
        return set()
    with path.open(newline="") as f:
        return {r["id"] for r in csv.DictReader(f)}


def cross_validated(results: Sequence[Result]) -> dict[str, dict[str, float]]:
    """Per metric: median and p90 absolute % error of the held-out predictions (what
    `plan`'s uncertainty band reads: `llmsizer.instance.measured_uncertainty`)."""
    out = {}
    for metric in METRICS:
        ape = np.abs([r.error_pct(metric) for r in results])
        out[metric] = {
            "median_ape_pct": round(float(np.median(ape)), 1),
            "p90_ape_pct": round(float(np.percentile(ape, 90)), 1),
        }
    return out


def _recorded(cases: Sequence[AicCase], workers: Sweep, cache: Path | None) -> Recorded:
    """The cases' recorded schedules: from `cache` for every row it holds with the same spec
    (by id and spec), the rest recorded and added to it. A closed loop's schedule does not
    depend on the factors, but the features do depend on the step formula: the cache is the
    user's to delete when `llmsizer.perf` changes (a row recorded with another number of
    feature columns, a `StepTerms` column added since, is recorded again)."""
    held: dict[str, tuple[PredictSpec, ScheduleTrace]] = {}
    if cache is not None and cache.exists():
        recorded = pickle.loads(cache.read_bytes())
        if isinstance(recorded, Recorded):
            held = {
                c.row_id: (c.spec, t) for c, t in zip(recorded.cases, recorded.traces, strict=True)
            }
    fresh = [c for c in cases if c.row_id not in held or not _current(held[c.row_id], c.spec)]
    say(f"{len(cases) - len(fresh)} rows from the cache, recording {len(fresh)}")
    if fresh:
        new = Recorded.record(fresh, workers)
        held |= {c.row_id: (c.spec, t) for c, t in zip(new.cases, new.traces, strict=True)}
        if cache is not None:
            cache.write_bytes(pickle.dumps(Recorded(tuple(cases), _traces(cases, held))))
    return Recorded(tuple(cases), _traces(cases, held))


def _current(held: tuple[PredictSpec, ScheduleTrace], spec: PredictSpec) -> bool:
    """A cached row still valid: the same spec, recorded with today's feature columns."""
    return _same(held[0], spec) and held[1].features.shape[-1] == NUM_FEATURES


def _same(a: PredictSpec, b: PredictSpec) -> bool:
    """The same spec, fields added since `a` was pickled taking their defaults."""
    return a.model_dump(exclude_defaults=True) == b.model_dump(exclude_defaults=True)


def _traces(
    cases: Sequence[AicCase], held: dict[str, tuple[PredictSpec, ScheduleTrace]]
) -> tuple[ScheduleTrace, ...]:
    return tuple(held[c.row_id][1] for c in cases)


def _priors_text(priors: dict[tuple[str, ...], FitPrior], fits: dict[Group, object]) -> str:
    """The report's section on the prior each shipped fit and each fold chose."""
    lines = ["", "## The priors chosen", "",
             "Among `aic_prior.CANDIDATES`, by leave one model out on each fit's own training "
             "rows (`Recorded.choose`: nested, the held-out rows never seen).", ""]  # fmt: skip
    for key, prior in sorted(priors.items()):
        if key[:2] in fits:
            what = "shipped" if len(key) == 2 else f"without {key[2]}"
            lines.append(f"- `{key[0]}` on {key[1]}, {what}: {prior.describe()}")
    return "\n".join(lines) + "\n"


def _factors_text(factors: dict[str, float]) -> str:
    return ", ".join(
        f"{k.removesuffix('_efficiency')} {v:.3g}"
        if k.endswith("efficiency")
        else f"{k.removesuffix('_rows')} {v:.0f} rows"  # a kernel's tile, not a time
        if k.endswith("_rows")
        else f"{k.removesuffix('_s')} {v * 1e6:.0f} us"
        for k, v in factors.items()
    )


if __name__ == "__main__":
    main()
