"""Bring a `bench/fit_aic.py --cache` pickle recorded before CUDA graphs were priced up to date,
without simulating again.

    .venv/bin/python bench/regraph_cache.py OLD.pkl NEW.pkl [--check K]

A closed loop's schedule does not depend on the step cost (arrivals come at finishes, and no
scheduler setting reads the clock), so a recorded trace's steps stay; only their features
change: a step now runs the layers' parts at its padded size, and pays the eager launch
(the `prefill_layers_overhead_s` column) where it is not replayed from a full graph. Both
depend only on one rank's token count and on whether the step has prompt work, which each
feature row gives back: its step count (`step_overhead_s` column), its tokens (the
`linear_compute_s` column over one token's) and its prompt work (a `prefill_layers_overhead_s`
column above zero, which the old features gave every step with prompt work and no other).
Each row gets count x (the new features - the old) of a step of that shape at no context
(attention, the output projection and the experts' weights do not change with padding).

Rows are mapped again from the calibration file (their specs now carry the launches'
`cudagraph_*` settings); a row whose spec differs in anything else is left out, so that
`fit_aic.py --cache NEW.pkl` records it afresh, and so is a row with attention data
parallelism (its padded experts see every rank's padded batch, which depends on the whole
batch's size, not only the busiest rank's that the row gives back). `--check K` records
every K-th kept row again and reports the largest relative difference of its features from
the converted ones.
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from validate_aic import CSV, say

from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.calibrate.aic_fit import Recorded
from llmsizer.calibrate.features import FEATURES, STEPS, StepFeaturizer
from llmsizer.calibrate.record import record_trace
from llmsizer.calibrate.replay import ScheduleTrace
from llmsizer.instance import PredictSpec, make_instance
from llmsizer.perf import calibrated_efficiency

_GRAPH_FIELDS = (
    "cudagraph_mode",
    "cudagraph_capture_sizes",
    "max_cudagraph_capture_size",
    "cudagraph_padding",
)
_LINEAR = FEATURES.index("linear_compute_s")
_EAGER = FEATURES.index("prefill_layers_overhead_s")


def _without_graphs(spec: PredictSpec) -> dict[str, object]:
    data = spec.model_dump(exclude_defaults=True)
    engine = data.get("engine")
    if isinstance(engine, dict):
        data["engine"] = {k: v for k, v in engine.items() if k not in _GRAPH_FIELDS}
    return data


def _shape(t: int, prompt: bool) -> np.ndarray:
    """Aggregates of a step of `t` tokens at no context, with prompt work or decoding only."""
    row = np.zeros(10)
    row[0] = t  # num_tokens
    row[1] = 1 if prompt else t  # num_sampled: one chunk, or every sequence
    row[2] = t if prompt else 0  # num_prefill_tokens
    row[7] = 0 if prompt else t  # num_decode_seqs
    return row


def regraph(trace: ScheduleTrace, new: StepFeaturizer) -> ScheduleTrace:
    """`trace` (featurised without CUDA graphs) with `new`'s features (module docstring)."""
    old = StepFeaturizer(new.deployment)
    rows = trace.features
    count = rows[:, STEPS]
    per_token = old.features(_shape(1, False))[0, _LINEAR]
    tokens = np.rint(rows[:, _LINEAR] / np.maximum(count, 1) / per_token).astype(np.int64)
    prompt = rows[:, _EAGER] > 0
    out = rows.copy()
    for t, p in {(int(t), bool(p)) for t, p in zip(tokens, prompt, strict=True)}:
        shape = _shape(t, p)
        delta = new.features(shape)[0] - old.features(shape)[0]
        if np.any(delta):
            mask = (tokens == t) & (prompt == p)
            out[mask] += count[mask, None] * delta
    fields = {f: getattr(trace, f) for f in trace.__dataclass_fields__}
    return ScheduleTrace(**(fields | {"features": out}))


def write_checked(
    path: Path, cases: Sequence[AicCase], traces: Sequence[ScheduleTrace], check: int
) -> None:
    """Write the converted cache to `path`; with `check` K, record every K-th row again and
    say the largest relative difference of its features from the converted ones."""
    path.write_bytes(pickle.dumps(Recorded(tuple(cases), tuple(traces))))
    say(f"wrote {path}")
    if not check:
        return
    worst = 0.0
    for case, trace in list(zip(cases, traces, strict=True))[::check]:
        fresh = record_trace(case.spec, calibrated_efficiency(case.backend))
        a, b = fresh.features, trace.features
        if a.shape != b.shape:
            raise SystemExit(f"{case.row_id}: its schedule changed; record it again")
        scale = np.maximum(np.abs(a).max(axis=0), 1e-300)
        worst = max(worst, float((np.abs(a - b) / scale).max()))
    say(f"checked {len(cases[::check])} rows: largest relative difference {worst:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--csv", type=Path, default=CSV)
    parser.add_argument("--check", type=int, default=0, help="record every K-th row again")
    args = parser.parse_args()
    if args.new.resolve() == args.old.resolve():
        parser.error("NEW must be another file than OLD")
    recorded = pickle.loads(args.old.read_bytes())
    mapped = {m.row_id: m for m in load_aic(args.csv) if isinstance(m, AicCase)}
    cases, traces, dropped = [], [], 0
    for case, trace in zip(recorded.cases, recorded.traces, strict=True):
        now = mapped.get(case.row_id)
        if (
            now is None
            or now.spec.attention_dp_size > 1
            or _without_graphs(now.spec) != _without_graphs(case.spec)
        ):
            dropped += 1
            continue
        inst = make_instance(now.spec, max_model_len=now.spec.isl + now.spec.osl)
        cases.append(now)
        traces.append(regraph(trace, StepFeaturizer(inst.deployment, inst.step.cuda_graphs)))
    say(f"{len(cases)} rows converted, {dropped} left out (to be recorded again)")
    write_checked(args.new, cases, traces, args.check)


if __name__ == "__main__":
    main()
