"""The disaggregated rows in the cross-validated accuracy report of `bench/fit_aic.py`.

A disaggregated row (`llmsizer.calibrate.aic_disagg`) is a fleet whose two pools meet on one
clock, so its schedule depends on the step times and cannot be recorded once and re-priced
as the aggregated rows are: each row is simulated in full under each set of factors that
prices it, and the result kept in a cache keyed by (row, its mapping, the factors' digest).
Rows priced by the same factors in two runs (a GPU without aggregated rows is held out of
no fit: its leave-one-GPU-out factors are the shipped ones) are simulated once.

- **shipped**: the row's (engine, architecture) fit on the aggregated rows, else the
  engine's general fit, as `Recorded.shipped` prices the aggregated rows;
- **leave one GPU out / leave one model out**: the factors fitted on the aggregated rows of
  its group without its GPU (model), as `Recorded.leave_one_out` fits each fold
  (`Recorded.fold_factors`: with too few of them, or for a group whose fits do not ship,
  the engine's general fit; either with what the engine's other fits carry).
"""

from __future__ import annotations

import csv
import hashlib
import pickle
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from validate_aic import METRICS, say, summary_line, table

from llmsizer.calibrate.aic import AicSkipped
from llmsizer.calibrate.aic_carry import shipped_factors
from llmsizer.calibrate.aic_disagg import AicDisaggCase, load_aic_disagg, predict_disagg
from llmsizer.calibrate.fit import FitResult
from llmsizer.instance import DeploymentSpec
from llmsizer.perf import EfficiencyFactors
from llmsizer.specs import get_gpu

RUNS = ("shipped", "leave one GPU out", "leave one model out")
Outcome = dict[str, float] | str  # the predicted means, or why the model rejected the row
Cache = dict[tuple[str, str, str], Outcome]
FoldFactors = dict[tuple[str, str, str], EfficiencyFactors]  # (engine, arch, held) -> factors
SAVE_EVERY_S = 60.0


@dataclass(frozen=True, slots=True)
class DisaggRow:
    """A predicted disaggregated row under one run's factors."""

    case: AicDisaggCase
    predicted: dict[str, float]

    def error_pct(self, metric: str) -> float:
        return 100.0 * (self.predicted[metric] / self.case.measured[metric] - 1.0)


def architecture(case: AicDisaggCase) -> str:
    return get_gpu(case.prefill.gpu).architecture


class Folds:
    """The factors that price a disaggregated row in each run (module docstring)."""

    def __init__(
        self,
        fits: Mapping[tuple[str, str], FitResult],
        folds: tuple[FoldFactors, FoldFactors],
    ) -> None:
        """`folds`: the factors `Recorded.leave_one_out` fitted, by GPU and by model: one
        for every group and every GPU (model) of its aggregated rows."""
        self.fits = fits
        self.folds: dict[tuple[str, str, str, str], EfficiencyFactors] = {
            (*key[:2], by, key[2]): factors
            for by, fitted in zip(("system", "model"), folds, strict=True)
            for key, factors in fitted.items()
        }

    def shipped(self, case: AicDisaggCase) -> EfficiencyFactors:
        """The group's fit, else the general fit with what the engine's fits carry (as
        `Recorded.shipped`: `aic_carry`)."""
        return shipped_factors(self.fits, (case.backend, architecture(case)))

    def held_out(self, case: AicDisaggCase, by: str) -> EfficiencyFactors:
        """The fold without the aggregated rows sharing the case's `by` (`system`, `model`),
        as `Recorded.leave_one_out` fitted it; a value none of the group's aggregated rows
        has holds nothing out: the group's shipped factors."""
        key = (case.backend, architecture(case), by, getattr(case, by))
        return self.folds[key] if key in self.folds else self.shipped(case)

    def factors(self, case: AicDisaggCase) -> dict[str, EfficiencyFactors]:
        return {
            RUNS[0]: self.shipped(case),
            RUNS[1]: self.held_out(case, "system"),
            RUNS[2]: self.held_out(case, "model"),
        }


def digest(factors: EfficiencyFactors) -> str:
    return hashlib.sha256(repr(sorted(factors.as_dict().items())).encode()).hexdigest()[:16]


def case_digest(case: AicDisaggCase) -> str:
    text = "|".join(
        (case.prefill.model_dump_json(), case.decode.model_dump_json(),
         f"{case.num_prefill}:{case.num_decode}:{case.link}")
    )  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _simulate(job: tuple[AicDisaggCase, EfficiencyFactors]) -> Outcome:
    case, factors = job
    try:
        return predict_disagg(case, factors)
    except ValueError as e:  # the model rejects a pool: weights that do not fit, ...
        return str(e).split(":")[0]


def simulate_all(
    jobs: dict[tuple[str, str, str], tuple[AicDisaggCase, EfficiencyFactors]],
    cache: Cache,
    cache_path: Path | None,
    workers: int,
) -> Cache:
    """Every job not in `cache`, simulated on `workers` processes, the largest first; the
    cache written to `cache_path` about every minute, so an interrupted run resumes."""
    todo = sorted(
        (k for k in jobs if k not in cache),
        key=lambda k: -(jobs[k][0].prefill.concurrency or 0),
    )
    say(f"disaggregated: {len(jobs) - len(todo)} simulations cached, running {len(todo)}")
    saved, t0 = time.perf_counter(), time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        futures = {pool.submit(_simulate, jobs[k]): k for k in todo}
        for n, done in enumerate(as_completed(futures), 1):
            cache[futures[done]] = done.result()
            if cache_path is not None and time.perf_counter() - saved > SAVE_EVERY_S:
                cache_path.write_bytes(pickle.dumps(cache))
                saved = time.perf_counter()
                say(f"disaggregated: {n}/{len(todo)} in {saved - t0:.0f} s")
    if cache_path is not None and todo:
        cache_path.write_bytes(pickle.dumps(cache))
    return cache


def source(case: AicDisaggCase) -> str:
    """Which InferenceX export the row came from (`aic_disagg` module docstring: the
    `source_file=` rows carry no worker counts)."""
    if case.launch:  # `aic_launches` names the config and commit in parentheses
        kind = (
            "workers of its InferenceX sweep"
            if case.launch.endswith(")")
            else "layout of its InferenceX launch"
        )
        return f"export, {kind}" + (" (an MTP sweep)" if " MTP" in case.launch else "")
    if case.twin:
        return "export, layout of its dump twin"
    return "db-dump" if case.workers_given else "export, workers not given"


def section(
    csv_path: Path,
    fits: Mapping[tuple[str, str], FitResult],
    agg_skipped: Sequence[AicSkipped],
    num_agg_rows: int,
    folds: tuple[FoldFactors, FoldFactors],
    *,
    cache_path: Path | None,
    workers: int,
    sample: int = 1,
    ids: Collection[str] = (),
) -> tuple[list[str], dict[str, list[DisaggRow]]]:
    """The report's disaggregated section (markdown lines) and each run's predicted rows:
    every `sample`-th mapped row, or the rows named in `ids` (an earlier run's sample)."""
    mapped = load_aic_disagg(csv_path)
    cases = [m for m in mapped if isinstance(m, AicDisaggCase)]
    cases = [c for c in cases if c.row_id in ids] if ids else cases[::sample]
    skipped = [m for m in mapped if isinstance(m, AicSkipped)]
    folds_of = Folds(fits, folds)
    jobs: dict[tuple[str, str, str], tuple[AicDisaggCase, EfficiencyFactors]] = {}
    keys: dict[str, dict[str, tuple[str, str, str]]] = {}
    for c in cases:
        keys[c.row_id] = {}
        for run, factors in folds_of.factors(c).items():
            key = (c.row_id, case_digest(c), digest(factors))
            jobs[key] = (c, factors)
            keys[c.row_id][run] = key
    cache: Cache = {}
    if cache_path is not None and cache_path.exists():
        cache = pickle.loads(cache_path.read_bytes())
    cache = simulate_all(jobs, cache, cache_path, workers)
    runs = {
        run: [
            DisaggRow(c, out) for c in cases if isinstance(out := cache[keys[c.row_id][run]], dict)
        ]
        for run in RUNS
    }
    rejected = Counter(out for c in cases if isinstance(out := cache[keys[c.row_id][RUNS[0]]], str))
    lines = [
        "## Disaggregated rows",
        "",
        f"{len(mapped)} disaggregated runs (`mode: disagg` rows and the InferenceX GB200 "
        "`agg` rows, `llmsizer.calibrate.aic_launch_gb200`; exported rows without worker "
        "counts read as their InferenceX sweep, `llmsizer.calibrate.aic_launches`; "
        "`llmsizer.calibrate.aic_disagg`; "
        f"`bench/fit_aic_disagg.py`): {len(cases)} mapped"
        + (f" (every {sample}-th simulated)" if sample > 1 else "")
        + f", {len(runs[RUNS[0]])} predicted, {sum(rejected.values())} rejected by the "
        f"model, {len(skipped)} skipped. Each row's fleet is simulated in full under each "
        "run's factors (the aggregated rows' fits: the fold that held out its GPU or model).",
        "",
        "| run | rows | TTFT median / p90 (bias) | TPOT median / p90 (bias) |",
        "|---|---:|---:|---:|",
        *(summary_line(run, runs[run]) for run in RUNS),
        "",
    ]
    for run in RUNS[1:]:
        lines += [f"### Disaggregated, {run}", ""]
        lines += table(
            "By engine", "engine", runs[run], lambda r: r.case.backend, heading="####", order=str
        )
        lines += table(
            "By engine and GPU", "engine, GPU", runs[run],
            lambda r: f"{r.case.backend} {r.case.system}", heading="####", order=str,
        )  # fmt: skip
        lines += table(
            "By engine and source", "engine, source", runs[run],
            lambda r: f"{r.case.backend} {source(r.case)}", heading="####", order=str,
        )  # fmt: skip
    lines += whole_file(agg_skipped, num_agg_rows, mapped, rejected, len(cases), sample)
    return lines, runs


def whole_file(
    agg_skipped: Sequence[AicSkipped],
    num_rows: int,
    disagg: Sequence[AicDisaggCase | AicSkipped],
    rejected: Counter[str],
    num_simulated: int,
    sample: int,
) -> list[str]:
    """Rows predicted and refused, with reasons, over the whole file of `num_rows` rows (the
    aggregated mapping's skips of the disaggregated rows are not refusals: they are
    mapped here)."""
    refused = Counter(
        f"agg: {s.reason.split(' (')[0]}" for s in agg_skipped if not s.reason.startswith("disagg")
    )
    refused += Counter(
        f"disagg: {s.reason.split(' (')[0]}" for s in disagg if isinstance(s, AicSkipped)
    )
    scale = len([m for m in disagg if isinstance(m, AicDisaggCase)]) / max(num_simulated, 1)
    estimated = round(sum(rejected.values()) * scale)
    n_refused = sum(refused.values()) + estimated
    lines = [
        "## Rows predicted and refused, the whole file",
        "",
        f"{num_rows} rows: {n_refused} refused ({100 * n_refused / num_rows:.1f} %), "
        f"{sum(refused.values())} by the mappings (the model's rejections included: each "
        f"deployment is built when mapped) and {estimated} in simulation"
        + (f" (estimated from the {sum(rejected.values())} of the {num_simulated} "
           f"simulated disaggregated rows, every {sample}-th)" if sample > 1 and estimated else "")
        + ". `bench/aic_refusals.py` prints this table without simulating.",
        "",
        "| reason | rows |",
        "|---|---:|",
        *(f"| {r} | {n} |" for r, n in refused.most_common()),
        *(f"| disagg: {r} | {n}" + (" (of the simulated)" if sample > 1 else "") + " |"
          for r, n in rejected.most_common()),
        "",
    ]  # fmt: skip
    return lines


def write_rows(path: Path, runs: Mapping[str, Sequence[DisaggRow]]) -> None:
    """One line per predicted disaggregated row: its fleet, measured and each run's means."""
    by_run = {run: {r.case.row_id: r.predicted for r in rows} for run, rows in runs.items()}
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(
            ["id", "backend", "system", "model", "isl", "osl", "concurrency", "prefill",
             "decode", "workers_given"]
            + [f"measured_{m}" for m in METRICS]
            + [f"{run.replace(' ', '_')}_{m}" for run in runs for m in METRICS]
        )  # fmt: skip
        for r in runs[RUNS[0]]:
            c, p, d = r.case, r.case.prefill, r.case.decode
            out.writerow(
                [c.row_id, c.backend, c.system, c.model, p.isl, p.osl, p.concurrency,
                 f"{c.num_prefill}x {_layout(p)}", f"{c.num_decode}x {_layout(d)}",
                 c.workers_given]
                + [f"{c.measured[m]:.4g}" for m in METRICS]
                + [_cell(by_run[run].get(c.row_id), m) for run in runs for m in METRICS]
            )  # fmt: skip


def _cell(predicted: dict[str, float] | None, metric: str) -> str:
    return "" if predicted is None else f"{predicted[metric]:.4g}"


def _layout(spec: DeploymentSpec) -> str:
    return f"tp{spec.tensor_parallel_size} dp{spec.attention_dp_size} ep{spec.expert_parallel_size}"
