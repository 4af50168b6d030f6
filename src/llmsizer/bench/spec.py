"""`BenchSpec`: the settings of a benchmark run, validated strictly (they become CLI flags).

A run is a sweep: one `LoadPoint` per listed concurrency, per listed request rate, or a
single trace replay. Each point gets its own workload, prompts, records and result.

Messages name a setting in backquotes (`request_rate`), which the command line shows as the
flag a user types (--request-rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llmsizer.bench.client import ClientOptions, Endpoint
from llmsizer.bench.counters import CounterChoice
from llmsizer.workload import WorkloadSpec

LoadKind = Literal["concurrency", "rate", "trace"]


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One point of a sweep: a closed-loop concurrency, an open-loop rate (req/s), or a trace."""

    kind: LoadKind
    value: float | None = None

    @property
    def label(self) -> str:
        """A short name for files and tables: "concurrency4", "rate2.5", "trace"."""
        return self.kind if self.value is None else f"{self.kind}{self.value:g}"


def _split_list(value: Any) -> Any:
    """Accept "1,4,16" (as typed on a command line) as well as a list."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class BenchSpec(BaseModel):
    """Everything `run_benchmark` needs besides the workloads. Times in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(
        default="http://127.0.0.1:8000",
        description="Server address, without the /v1 path: http://host:port.",
    )
    model: str | None = Field(
        default=None, description="Served model name; by default the first one /v1/models lists."
    )
    endpoint: Endpoint = Field(
        default=Endpoint.COMPLETIONS, description="API to call: completions or chat (completions)."
    )
    isl: int = Field(
        default=512, ge=1, description="Prompt length in tokens (when not from a trace)."
    )
    osl: int = Field(
        default=128, ge=1, description="Output length in tokens (when not from a trace)."
    )
    num_prompts: int = Field(default=200, ge=1, description="Measured requests per sweep point.")
    num_warmups: int = Field(
        default=2, ge=0, description="Unmeasured requests sent before each sweep point."
    )
    concurrency: tuple[int, ...] = Field(
        default=(),
        description="Closed-loop concurrency levels to sweep, e.g. 1,4,16 (1 if no rate or trace).",
    )
    request_rate: tuple[float, ...] = Field(
        default=(),
        description="Open-loop request rates to sweep in req/s, e.g. 2,4,8 (inf: all at once).",
    )
    burstiness: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        description="Gamma shape of inter-arrival times: 1 Poisson, <1 burstier.",
    )
    trace: Path | None = Field(
        default=None, description="Trace file to replay (arrivals and lengths)."
    )
    time_scale: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        description="Trace replay: inter-arrival gaps multiplied by this (10: 10x slower).",
    )
    system_prompt_tokens: int = Field(
        default=0,
        ge=0,
        description="Tokens of a system prompt shared by every request (prefix cache).",
    )
    seed: int = Field(
        default=0, ge=0, description="Seed of the one random generator (arrivals and prompts)."
    )
    tokenizer: Path | None = Field(
        default=None,
        description="Local tokenizer.json for exact prompt lengths (needs `tokenizers`).",
    )
    prompt_tokens_from: CounterChoice = Field(
        default="auto",
        description="How prompt tokens are counted: auto, tokenizer, tokenize-endpoint, usage.",
    )
    ignore_eos: bool = Field(
        default=True, description="Send ignore_eos so outputs have exactly osl tokens."
    )
    continuous_usage_stats: bool = Field(
        default=False,
        description="Ask vLLM for usage in every chunk: exact per-token times (vLLM only).",
    )
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        allow_inf_nan=False,
        description="Longest wait for any byte from the server before a request fails.",
    )
    request_timeout_s: float = Field(
        default=3600.0,
        gt=0,
        allow_inf_nan=False,
        description="Longest a single request may take before it fails.",
    )
    api_key: str | None = Field(
        default=None, description="Bearer token sent in the Authorization header."
    )
    server_metrics: bool = Field(
        default=False,
        description="Read vLLM's /metrics before and after each point: server-side means.",
    )
    realtime: bool = Field(
        default=False,
        description="Run the client at real-time priority (Linux SCHED_RR; root or "
        "CAP_SYS_NICE) so a server on the same machine never delays its clock.",
    )
    result_path: Path | None = Field(
        default=None, description="JSON file for the results: one object per sweep point."
    )
    records_path: Path | None = Field(
        default=None,
        description="JSONL file for per-request records (a suffix per point in a sweep).",
    )
    overwrite: bool = Field(
        default=False,
        description="Replace existing results and records files (a run refuses by default).",
    )

    _split = field_validator("concurrency", "request_rate", mode="before")(_split_list)

    @field_validator("base_url")
    @classmethod
    def _server_address(cls, url: str) -> str:
        scheme, sep, rest = url.partition("://")
        host = rest.split("/", 1)[0]
        if scheme not in ("http", "https") or not sep or not host:
            raise ValueError("give the server as http://host:port (e.g. http://127.0.0.1:8000)")
        if rest.rstrip("/").endswith("/v1"):
            raise ValueError("give the server address without /v1 (the client adds the path)")
        return url

    @field_validator("concurrency")
    @classmethod
    def _concurrency_levels(cls, levels: tuple[int, ...]) -> tuple[int, ...]:
        if any(c < 1 for c in levels):
            raise ValueError("each concurrency must be a whole number >= 1, e.g. 1,4,16")
        return levels

    @field_validator("request_rate")
    @classmethod
    def _rates(cls, rates: tuple[float, ...]) -> tuple[float, ...]:
        if any(not r > 0 for r in rates):  # nan fails too
            raise ValueError("each rate must be a number > 0 in req/s, or inf, e.g. 2,4,8")
        return rates

    @model_validator(mode="after")
    def _one_kind_of_load(self) -> BenchSpec:
        kinds = [bool(self.concurrency), bool(self.request_rate), self.trace is not None]
        if sum(kinds) > 1:
            raise ValueError("give only one of `concurrency`, `request_rate` and `trace`")
        return self

    def load_points(self) -> tuple[LoadPoint, ...]:
        """The sweep: one point per concurrency or rate, or the trace; concurrency 1 if none."""
        if self.trace is not None:
            return (LoadPoint("trace"),)
        if self.request_rate:
            return tuple(LoadPoint("rate", r) for r in self.request_rate)
        return tuple(LoadPoint("concurrency", c) for c in self.concurrency or (1,))

    def workload_spec(self, point: LoadPoint) -> WorkloadSpec:
        """The workload of a sweep point, for `llmsizer.workload.make_workload`."""
        fields: dict[str, Any] = {
            "num_requests": self.num_prompts,
            "system_prompt_tokens": self.system_prompt_tokens,
            "seed": self.seed,
        }
        if point.kind == "trace":
            fields |= {"arrival": "trace", "trace": self.trace, "time_scale": self.time_scale}
            return WorkloadSpec.model_validate(fields)
        fields |= {"isl": self.isl, "osl": self.osl}
        rate = float(point.value or 0.0)
        if point.kind == "concurrency":
            fields |= {"arrival": "closed_loop", "concurrency": int(rate)}
        elif rate == float("inf"):
            fields |= {"arrival": "burst"}  # every request at t=0
        elif self.burstiness == 1.0:
            fields |= {"arrival": "poisson", "request_rate": rate}
        else:
            fields |= {"arrival": "gamma", "request_rate": rate, "burstiness": self.burstiness}
        return WorkloadSpec.model_validate(fields)

    def client_options(self, model: str) -> ClientOptions:
        return ClientOptions(
            model=model,
            endpoint=self.endpoint,
            ignore_eos=self.ignore_eos,
            continuous_usage_stats=self.continuous_usage_stats,
            request_timeout_s=self.request_timeout_s,
        )
