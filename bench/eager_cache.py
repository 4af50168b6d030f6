"""Bring a `bench/fit_aic.py --cache` pickle recorded before eager launches were counted per
kind of layer (`llmsizer.perf.launches`) up to date, without simulating again.

    .venv/bin/python bench/eager_cache.py OLD.pkl NEW.pkl [--check K]

A closed loop's schedule does not depend on the step cost, so a recorded trace's steps stay;
only the `prefill_layers_overhead_s` column changes: it counted a model's layers in each
eager step and now counts its eager launches in dense layers' launches
(`eager_layer_units`), the same factor for every step of one model, so each trace's column
is scaled by `eager_layer_units(model) / num_layers`; but for an engine that compiles the
model (vLLM: `CudaGraphs.compiled`), whose eager launches are still one a layer. Rows whose
spec speculates (the drafter is a model of its own with its own units) are left out, so
that `fit_aic.py --cache NEW.pkl` records them afresh. `--check K` records every K-th kept
row again and reports the largest relative difference of its features from the converted
ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
from pathlib import Path
from typing import Any

from regraph_cache import write_checked
from validate_aic import say

from llmsizer.calibrate.features import FEATURES
from llmsizer.calibrate.replay import ScheduleTrace
from llmsizer.instance import make_instance
from llmsizer.perf.launches import eager_layer_units
from llmsizer.specs import get_model

_EAGER = FEATURES.index("prefill_layers_overhead_s")


def rescale(trace: ScheduleTrace, ratio: float) -> ScheduleTrace:
    """`trace` with its eager-launch column times `ratio`."""
    out = trace.features.copy()
    out[:, _EAGER] *= ratio
    fields = {f: getattr(trace, f) for f in trace.__dataclass_fields__}
    return ScheduleTrace(**(fields | {"features": out}))


def _with_defaults(spec: Any) -> Any:
    """`spec` as pickled, with the fields added since at their defaults (what the converted
    cache keeps, and what `--check` records again)."""
    missing = {
        name: field.get_default(call_default_factory=True)
        for name, field in type(spec).model_fields.items()
        if name not in spec.__dict__
    }
    return spec.model_copy(update=missing) if missing else spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--check", type=int, default=0, help="record every K-th row again")
    args = parser.parse_args()
    if args.new.resolve() == args.old.resolve():
        parser.error("NEW must be another file than OLD")
    recorded = pickle.loads(args.old.read_bytes())
    cases, traces, dropped = [], [], 0
    for case, trace in zip(recorded.cases, recorded.traces, strict=True):
        if case.spec.speculative is not None:
            dropped += 1
            continue
        model = get_model(case.spec.model)
        spec = _with_defaults(case.spec)
        graphs = make_instance(spec, max_model_len=spec.isl + spec.osl).step
        compiled = graphs.cuda_graphs is not None and graphs.cuda_graphs.compiled
        ratio = 1.0 if compiled else eager_layer_units(model) / model.num_layers
        cases.append(dataclasses.replace(case, spec=spec))
        traces.append(rescale(trace, ratio))
    say(f"{len(cases)} rows converted, {dropped} left out (to be recorded again)")
    write_checked(args.new, cases, traces, args.check)


if __name__ == "__main__":
    main()
