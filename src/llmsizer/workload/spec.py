"""`WorkloadSpec`: the user-facing description of a workload, validated strictly.

The spec is the schema at the boundary (YAML scenario files, CLI flags): unknown keys and
impossible values are rejected with a message naming the key, the value and what is allowed,
and each field's description is its `--help` text. `make_workload` (in `build`) turns a valid
spec into a `Workload`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Self, TypeVar

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from llmsizer.workload import lengths
from llmsizer.workload.lengths import MAX_TOKENS
from llmsizer.workload.traces import detect_trace_format

DEFAULT_NUM_REQUESTS = 1000  # as `vllm bench serve --num-prompts`
DEFAULT_ISL = 1000  # the course notebook's scenario: 1000 prompt tokens, 100 output tokens
DEFAULT_OSL = 100

T = TypeVar("T")


def _existing_file(path: Path) -> Path:
    if not path.is_file():
        raise ValueError(f"trace file '{path}' does not exist or is not a file")
    return path


TraceFile = Annotated[Path, AfterValidator(_existing_file)]
"""A path that must name an existing file (any trace a schema accepts)."""
ArrivalKind = Literal["burst", "poisson", "gamma", "closed_loop", "trace"]
LengthKind = Literal["fixed", "uniform", "normal", "lognormal", "trace"]


def _parameters_of(kind: LengthKind) -> tuple[str, ...]:
    """The `LengthSpec` fields that `kind` needs (and the only ones it accepts)."""
    match kind:
        case "fixed":
            return ("value",)
        case "uniform":
            return ("low", "high")
        case "normal" | "lognormal":
            return ("mean", "std")
        case "trace":
            return ()


class LengthSpec(BaseModel):
    """A distribution of token counts for prompts or outputs (see `llmsizer.workload.lengths`).

    Each kind takes exactly its own parameters; `max_tokens` caps any kind.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: LengthKind = Field(
        default="fixed",
        description="Distribution: fixed (value), uniform (low to high), normal or lognormal "
        "(mean and std of the lengths), or trace (lengths from the trace file).",
    )
    value: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS, description="Tokens, for kind fixed."
    )
    low: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="Shortest length in tokens, for kind uniform.",
    )
    high: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="Longest length in tokens (included), for kind uniform.",
    )
    mean: float | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        allow_inf_nan=False,
        description="Mean length in tokens, for normal/lognormal.",
    )
    std: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Standard deviation of the lengths in tokens, for normal/lognormal.",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="Cap in tokens: longer draws are cut to it (any kind).",
    )

    @model_validator(mode="after")
    def _check_parameters(self) -> Self:
        needed = _parameters_of(self.kind)
        parameters = ("value", "low", "high", "mean", "std")
        given = {name for name in parameters if getattr(self, name) is not None}
        missing = [name for name in needed if name not in given]
        if missing:
            raise ValueError(f"kind={self.kind!r} needs {' and '.join(missing)}")
        unused = sorted(given - set(needed))
        if unused:
            takes = " and ".join(needed) or "no parameters"
            raise ValueError(f"kind={self.kind!r} takes {takes}, not {' and '.join(unused)}")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"uniform needs low <= high, got low={self.low}, high={self.high}")
        return self

    def sample(
        self,
        num_requests: int,
        rng: np.random.Generator,
        trace_lengths: np.ndarray | None = None,
    ) -> np.ndarray:
        """`num_requests` token counts, read-only int64, each >= 1 and <= `max_tokens`.

        Kind trace takes them from `trace_lengths` (the trace's lengths for these requests, in
        order) and needs it; the other kinds draw from `rng` and ignore it.
        """
        cap = self.max_tokens
        match self.kind:
            case "fixed":
                return lengths.fixed_lengths(num_requests, _given(self.value), max_tokens=cap)
            case "uniform":
                low, high = _given(self.low), _given(self.high)
                return lengths.uniform_lengths(num_requests, low, high, rng, max_tokens=cap)
            case "normal":
                mean, std = _given(self.mean), _given(self.std)
                return lengths.normal_lengths(num_requests, mean, std, rng, max_tokens=cap)
            case "lognormal":
                mean, std = _given(self.mean), _given(self.std)
                return lengths.lognormal_lengths(num_requests, mean, std, rng, max_tokens=cap)
            case "trace":
                if trace_lengths is None or trace_lengths.shape[0] != num_requests:
                    raise ValueError(f"kind 'trace' needs the trace's {num_requests} lengths")
                return lengths.cap_lengths(trace_lengths, cap)

    def describe(self) -> str:
        """The distribution in a few words, for reports: `lognormal mean 1000 std 500`."""
        match self.kind:
            case "fixed":
                words = f"fixed {self.value}"
            case "uniform":
                words = f"uniform {self.low}-{self.high}"
            case "normal" | "lognormal":
                words = f"{self.kind} mean {self.mean:g} std {self.std:g}"
            case "trace":
                words = "from the trace"
        return words if self.max_tokens is None else f"{words}, max {self.max_tokens}"


def _given(value: T | None) -> T:
    """A parameter that `_check_parameters` guarantees is set for this kind."""
    if value is None:
        raise AssertionError("LengthSpec parameter missing despite validation")
    return value


class WorkloadSpec(BaseModel):
    """What load to offer: how requests arrive and how long prompts and outputs are.

    Defaults: 1000 requests arriving as a Poisson process at 1 request/s, each with a
    1000-token prompt and 100 output tokens (the course notebook's lengths), seed 0. With a
    trace file, lengths default to the trace's own: replayed row by row for arrival trace,
    otherwise drawn with replacement one row per request, so that each prompt keeps its own
    output length. Block hashes (Mooncake `hash_ids`) survive only a replay that keeps the
    trace's prompt lengths; resampled or synthetic prompts share nothing but the system prompt.

    `isl` and `osl` accept a bare integer for a fixed length when parsed from a dict (YAML:
    `isl: 1000`); in Python write `LengthSpec(value=1000)`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    arrival: ArrivalKind = Field(
        default="poisson",
        description="How requests arrive: burst (all at t=0), poisson or gamma (at "
        "request_rate), closed_loop (concurrency requests in flight), trace (replay the file).",
    )
    num_requests: int | None = Field(
        default=None,
        ge=1,
        description=f"Number of requests; default {DEFAULT_NUM_REQUESTS}, or the whole trace "
        "for arrival trace (then the first N of it).",
    )
    request_rate: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        description="Mean arrival rate in requests per second, for arrival poisson or gamma.",
    )
    burstiness: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        description="Gamma shape of the inter-arrival gaps for arrival gamma (vLLM --burstiness): "
        "1 is Poisson, below 1 burstier; gap CV = 1/sqrt(burstiness).",
    )
    concurrency: int = Field(
        default=1,
        ge=1,
        description="Requests kept in flight for arrival closed_loop (no think time).",
    )
    isl: LengthSpec | None = Field(
        default=None,
        description=f"Prompt length in tokens: an integer, or a distribution; default "
        f"{DEFAULT_ISL}, or the trace's prompt lengths when a trace is given.",
    )
    osl: LengthSpec | None = Field(
        default=None,
        description=f"Output length in tokens: an integer, or a distribution; default "
        f"{DEFAULT_OSL}, or the trace's output lengths when a trace is given.",
    )
    system_prompt_tokens: int = Field(
        default=0,
        ge=0,
        le=MAX_TOKENS,
        description="Tokens of a system prompt shared by every request and reusable by the "
        "prefix cache, added in front of each prompt (prompts are isl + this).",
    )
    trace: TraceFile | None = Field(
        default=None,
        description="Trace file to replay or to draw lengths from: Azure .csv or Mooncake .jsonl.",
    )
    trace_format: Literal["auto", "azure", "mooncake"] = Field(
        default="auto",
        description="Format of the trace file; auto: azure for .csv, mooncake for .jsonl.",
    )
    time_scale: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        description="For arrival trace, multiply every inter-arrival gap: 10 replays 10x slower.",
    )
    rate_scale: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        description="For arrival trace, multiply the request rate instead: 2 replays 2x faster.",
    )
    seed: int = Field(
        default=0, ge=0, description="Seed of the generator behind every random draw."
    )

    @field_validator("isl", "osl", mode="before")
    @classmethod
    def _integer_means_fixed(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return {"kind": "fixed", "value": value}
        return value

    @model_validator(mode="after")
    def _check_combination(self) -> Self:
        self._check_trace_use()
        for name, arrivals_using in (
            ("request_rate", ("poisson", "gamma")),
            ("burstiness", ("gamma",)),
            ("concurrency", ("closed_loop",)),
            ("time_scale", ("trace",)),
            ("rate_scale", ("trace",)),
        ):
            value = getattr(self, name)
            if (
                value != type(self).model_fields[name].default
                and self.arrival not in arrivals_using
            ):
                raise ValueError(
                    f"{name}={value} applies only to arrival {' or '.join(arrivals_using)}, "
                    f"not {self.arrival!r}"
                )
        if self.time_scale != 1.0 and self.rate_scale != 1.0:
            raise ValueError(
                f"give time_scale ({self.time_scale}) or rate_scale ({self.rate_scale}), not both"
            )
        return self

    def _check_trace_use(self) -> None:
        uses_trace = self.arrival == "trace" or "trace" in (self.isl_used.kind, self.osl_used.kind)
        if self.trace is None:
            if self.trace_format != "auto":
                raise ValueError(f"trace_format={self.trace_format!r} needs a trace file")
            if uses_trace:
                user = "arrival 'trace'" if self.arrival == "trace" else "a length of kind 'trace'"
                raise ValueError(f"{user} needs a trace file (an Azure .csv or Mooncake .jsonl)")
            return
        if not uses_trace:
            raise ValueError(
                f"trace '{self.trace}' is unused: set arrival 'trace', or isl or osl kind 'trace'"
            )
        trace_format = self.resolved_trace_format()
        keeps_hashes = self.arrival == "trace" and self.isl_used.kind == "trace"
        if self.system_prompt_tokens and keeps_hashes and trace_format == "mooncake":
            raise ValueError(
                f"system_prompt_tokens={self.system_prompt_tokens} cannot be added to a Mooncake "
                "replay, whose hash_ids already describe the shared prefixes"
            )

    @property
    def isl_used(self) -> LengthSpec:
        """`isl`, or its default: the trace's prompt lengths with a trace, else fixed."""
        return self.isl or _default_length(self.trace, DEFAULT_ISL)

    @property
    def osl_used(self) -> LengthSpec:
        """`osl`, or its default: the trace's output lengths with a trace, else fixed."""
        return self.osl or _default_length(self.trace, DEFAULT_OSL)

    def resolved_trace_format(self) -> Literal["azure", "mooncake"]:
        """`trace_format`, with auto resolved by the file's suffix; a ValueError without one."""
        if self.trace is None:
            raise ValueError("no trace file given")
        if self.trace_format == "auto":
            return detect_trace_format(self.trace)
        return self.trace_format

    def describe(self) -> str:
        """The workload in a line, for reports (without the seed)."""
        match self.arrival:
            case "burst":
                how = "burst at t=0"
            case "poisson":
                how = f"poisson at {self.request_rate:g} req/s"
            case "gamma":
                how = f"gamma at {self.request_rate:g} req/s, burstiness {self.burstiness:g}"
            case "closed_loop":
                how = f"closed loop at concurrency {self.concurrency}"
            case "trace":
                scale = self.time_scale / self.rate_scale
                how = f"replay of {_name(self.trace)}"
                how += f", gaps x{scale:g}" if scale != 1 else ""
        parts = [how, f"isl {self.isl_used.describe()}", f"osl {self.osl_used.describe()}"]
        if self.trace is not None and self.arrival != "trace":
            parts.append(f"lengths from {_name(self.trace)}")
        if self.system_prompt_tokens:
            parts.append(f"shared system prompt {self.system_prompt_tokens} tokens")
        return "; ".join(parts)


def _default_length(trace: Path | None, tokens: int) -> LengthSpec:
    return LengthSpec(kind="trace") if trace is not None else LengthSpec(value=tokens)


def _name(path: Path | None) -> str:
    return "no file" if path is None else path.name


def fixed_length_load(
    isl: int,
    osl: int,
    *,
    num_requests: int,
    concurrency: int | None = None,
    request_rate: float | None = None,
    seed: int = 0,
) -> WorkloadSpec:
    """The load `predict` and calibration offer: fixed lengths, and a closed loop at
    `concurrency`, Poisson arrivals at `request_rate` req/s, or (neither) every request at
    t = 0. Every path that predicts a load builds its workload here, so one seed gives one
    set of arrivals (the ones `llmsizer bench --seed` sends)."""
    if concurrency is not None and request_rate is not None:
        raise ValueError("give one load: concurrency or request_rate, not both")
    load: dict[str, Any] = {"arrival": "burst"}
    if concurrency is not None:
        load = {"arrival": "closed_loop", "concurrency": concurrency}
    elif request_rate is not None:
        load = {"arrival": "poisson", "request_rate": request_rate}
    return WorkloadSpec.model_validate(
        {**load, "isl": isl, "osl": osl, "num_requests": num_requests, "seed": seed}
    )
