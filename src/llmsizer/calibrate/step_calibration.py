"""Calibration files holding a fitted step cost: what `llmsizer calibrate` writes.

A calibration file is YAML whose `kind` says what it calibrates:

- `kind: fitted_step_cost` (this module): a step cost fitted to measurements of a server
  the GPU model cannot describe (`llmsizer.calibrate.step_fit`), the batching configuration
  it was measured with, what it was fitted on and the fit's residuals. A complete engine:
  `simulate` and `predict` run it as is.
- any other kind: efficiency factors for the GPU performance model
  (`llmsizer.perf.calibrated.load_calibration`).

    kind: fitted_step_cost
    description: reference vLLM on 2 CPU cores, tiny model
    step_cost: {base_ms: 5.1, per_prefill_token_ms: 0.03, per_decode_seq_ms: 0.8,
                per_context_token_ms: 0.0}
    first_token_delay_ms: 180.0
    engine: {max_num_seqs: 128, max_num_batched_tokens: 2048, block_size: 128, ...}
    fitted_on: [{label: concurrency1, source: sweep.json, num_requests: 96, ...}, ...]
    residuals: [{label: concurrency1, metric: mean_ttft_ms, measured: 250.1, ...}, ...]

Unknown keys and bad values are errors naming the key and the value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llmsizer.calibrate.step_fit import MeasuredPoint, StepFit
from llmsizer.errors import format_validation_error, read_yaml_mapping
from llmsizer.metrics import summarize
from llmsizer.output import write_atomic
from llmsizer.perf import EfficiencyFactors
from llmsizer.sim import Engine, EngineConfig, LinearStepCost
from llmsizer.units import MS
from llmsizer.workload import fixed_length_load, make_workload

KIND = "fitted_step_cost"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class StepCostFile(_Strict):
    """step = base + per_prefill_token x prompt tokens + per_decode_seq x decoding sequences
    + per_context_token x KV tokens read by attention (all in ms)."""

    base_ms: float = Field(ge=0, description="Fixed cost of every engine step in ms.")
    per_prefill_token_ms: float = Field(ge=0, description="ms per prompt token computed.")
    per_decode_seq_ms: float = Field(ge=0, description="ms per decoding sequence.")
    per_context_token_ms: float = Field(ge=0, description="ms per KV-cache token read.")

    def build(self) -> LinearStepCost:
        return LinearStepCost(
            self.base_ms * MS,
            self.per_prefill_token_ms * MS,
            self.per_decode_seq_ms * MS,
            self.per_context_token_ms * MS,
        )


class FittedPoint(_Strict):
    """One measured run the fit used."""

    label: str = Field(description="The run's name, e.g. concurrency4 or rate2.")
    source: str = Field(description="The result file it was read from.")
    num_requests: int = Field(ge=1, description="Successful requests in the run.")
    concurrency: int | None = Field(None, ge=1, description="Closed-loop concurrency, if any.")
    mean_isl: float = Field(gt=0, description="Mean prompt length in tokens.")
    mean_osl: float = Field(gt=0, description="Mean output length in tokens.")


class ResidualRow(_Strict):
    """A measured mean beside the fitted simulator's (ms, or req/s for throughput)."""

    label: str
    metric: str
    measured: float
    predicted: float
    error_pct: float = Field(description="100 x (predicted / measured - 1).")


class StepCalibration(_Strict):
    """A fitted step cost plus the engine it was measured on (see the module notes)."""

    kind: Literal["fitted_step_cost"] = Field(description="What the file calibrates.")
    description: str = Field("", description="The server and conditions, in words.")
    step_cost: StepCostFile
    first_token_delay_ms: float = Field(
        0.0, ge=0, description="Time the API server holds each stream's first chunk, in ms."
    )
    engine: EngineConfig = Field(description="The measured server's batching configuration.")
    fitted_on: tuple[FittedPoint, ...] = ()
    residuals: tuple[ResidualRow, ...] = ()

    def build_engine(self, engine: EngineConfig | None = None) -> Engine:
        """The calibrated engine; `engine` (when given) replaces the file's batching."""
        return Engine(engine or self.engine, self.step_cost.build(), self.first_token_delay_ms * MS)


def calibration_from_fit(
    fit: StepFit,
    engine: EngineConfig,
    fitted_on: tuple[FittedPoint, ...],
    description: str = "",
) -> StepCalibration:
    """The calibration file's content for a fit made with `engine`'s batching."""
    c = fit.step_cost
    return StepCalibration(
        kind=KIND,
        description=description,
        step_cost=StepCostFile(
            base_ms=c.a_s / MS,
            per_prefill_token_ms=c.b_s_per_prefill_token / MS,
            per_decode_seq_ms=c.c_s_per_decode_seq / MS,
            per_context_token_ms=c.d_s_per_context_token / MS,
        ),
        first_token_delay_ms=fit.first_token_delay_s / MS,
        engine=engine,
        fitted_on=fitted_on,
        residuals=tuple(
            ResidualRow(
                label=r.label,
                metric=r.metric,
                measured=r.measured,
                predicted=r.predicted,
                error_pct=100.0 * r.error,
            )
            for r in fit.residuals
        ),
    )


def fitted_point(point: MeasuredPoint, source: str) -> FittedPoint:
    w = point.workload
    return FittedPoint(
        label=point.label,
        source=source,
        num_requests=w.num_requests,
        concurrency=w.concurrency,
        mean_isl=float(w.num_prompt_tokens.mean()),
        mean_osl=float(w.num_output_tokens.mean()),
    )


def save_step_calibration(calibration: StepCalibration, path: Path) -> None:
    data = calibration.model_dump(mode="json")
    data["engine"] = calibration.engine.model_dump(mode="json", exclude_none=True)
    write_atomic(path, yaml.safe_dump(data, sort_keys=False, width=100))


def _read(path: Path) -> dict[str, Any]:
    return read_yaml_mapping(path, "calibration file")


def calibration_kind(path: Path) -> str | None:
    """The file's `kind` key (None when it has none)."""
    kind = _read(path).get("kind")
    return None if kind is None else str(kind)


def load_step_calibration(path: Path) -> StepCalibration:
    """Read and validate a `kind: fitted_step_cost` file; `ValueError` names each bad key."""
    data = _read(path)
    if data.get("kind") == "efficiency_factors":  # perf.calibrated's kind
        raise ValueError(
            f"calibration file '{path}' is a kind: {data['kind']} file; this needs a kind: "
            f"{KIND} file (written by llmsizer calibrate)"
        )
    try:
        return StepCalibration.model_validate(data)
    except ValidationError as e:
        raise ValueError(format_validation_error(e, f"calibration file '{path}'")) from e


def load_any_calibration(path: Path) -> StepCalibration | EfficiencyFactors:
    """A calibration file of either kind: a fitted step cost (this module) or efficiency
    factors for the GPU model (`llmsizer.calibrate.gpu_fit`)."""
    if calibration_kind(path) == KIND:
        return load_step_calibration(path)
    from llmsizer.perf.calibrated import load_calibration

    return load_calibration(path)


def predict_calibrated(
    calibration: StepCalibration,
    *,
    isl: int,
    osl: int,
    concurrency: int | None = None,
    request_rate: float | None = None,
    num_requests: int = 200,
    seed: int = 0,
) -> dict[str, float]:
    """`llmsizer predict` for a fitted step cost: the calibrated engine at a closed-loop
    `concurrency` or Poisson `request_rate` (req/s), with fixed lengths; the vLLM-style
    summary (`llmsizer.metrics.summarize`). With the seed a benchmark used, the Poisson
    arrivals are the ones it sent (`BenchSpec.workload_spec`)."""
    if (concurrency is None) == (request_rate is None):
        raise ValueError("give exactly one load: concurrency or request_rate")
    spec = fixed_length_load(
        isl,
        osl,
        num_requests=num_requests,
        concurrency=concurrency,
        request_rate=request_rate,
        seed=seed,
    )
    result = calibration.build_engine().run(make_workload(spec))
    return summarize(result.records)
