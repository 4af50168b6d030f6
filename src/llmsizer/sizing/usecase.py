"""`UseCase`: the course's sizing questions, validated strictly (the boundary of `plan`).

The course's questions (intro slides, "Questions for a Sizing Use Case"): which model; how
long the prompt is, system prompt, retrieved documents and chat history included; how long
the output is; how many requests per second at the peak; what latency limit (first token or
last token); which GPUs. Added here: the load as an average or as daily users, percentiles,
online or offline use, the search space, prices and headroom.

Prices are user inputs. No price is built in: the examples ship illustrative prices, labelled
as such, in their own files.

Every field's description is its documentation and its `--help`. Errors name the field:
`pydantic.ValidationError` gives the path of a bad value (`load.peak_rps`, `candidates.gpus`);
checks across fields say which fields they compare.
"""

from __future__ import annotations

from typing import Any, Literal, Self

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llmsizer.instance import check_context
from llmsizer.sizing.arrivals import ArrivalKind, ArrivalPattern
from llmsizer.sizing.candidates import CandidatesSpec
from llmsizer.sizing.cost import Price
from llmsizer.sizing.disagg_spec import DisaggregatedSpec
from llmsizer.sizing.limits import Limits
from llmsizer.sizing.peak import dau_average_rps, poisson_peak_rps
from llmsizer.specs import get_gpu, get_model
from llmsizer.units import MS
from llmsizer.workload.lengths import MAX_TOKENS
from llmsizer.workload.spec import TraceFile

COURSE_WORDS_PER_TOKEN = 0.75  # course: "For English one token is approximately 0.75 of a word"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class InputSpec(_Strict):
    """The prompt's parts; their sum is the input length (in the use case's `unit`)."""

    system_prompt: float = Field(
        0, ge=0, le=MAX_TOKENS, description="System prompt sent with every request."
    )
    documents: float = Field(
        0, ge=0, le=MAX_TOKENS, description="Retrieved documents (RAG) per request."
    )
    history: float = Field(
        0, ge=0, le=MAX_TOKENS, description="Chat history carried into each request."
    )
    user: float = Field(0, ge=0, le=MAX_TOKENS, description="The user's own text per request.")

    @property
    def total(self) -> float:
        return self.system_prompt + self.documents + self.history + self.user


class LoadSpec(_Strict):
    """How much traffic: exactly one of a peak rate, an average rate, or daily active users."""

    peak_rps: float | None = Field(None, gt=0, description="Peak requests per second to serve.")
    average_rps: float | None = Field(
        None,
        gt=0,
        description="Average requests per second; the planning peak is its Poisson "
        "percentile `peak_percentile` over `window_s`.",
    )
    daily_active_users: float | None = Field(
        None,
        gt=0,
        description="Users a day, each sending `requests_per_user` requests spread "
        "over `working_hours`; the planning peak is the Poisson percentile of that average.",
    )
    requests_per_user: float = Field(
        3.0, gt=0, description="Requests per user per day (course example: 3)."
    )
    working_hours: float = Field(
        8.0, gt=0, le=24, description="Hours a day the load lasts (course: an 8-hour working day)."
    )
    peak_percentile: float = Field(
        95.0,
        gt=0,
        lt=100,
        description="Percentile of Poisson arrivals taken as the planning "
        "peak (course: the 95th of a mean of 64 req/s is 77).",
    )
    window_s: float = Field(
        1.0, gt=0, description="Seconds over which arrivals are counted for the Poisson peak."
    )
    arrival: ArrivalKind = Field(
        "poisson",
        description="How requests arrive at the planned rate: poisson, gamma (with "
        "`burstiness`), or trace (`arrival_trace`'s own gaps scaled to the rate).",
    )
    burstiness: float = Field(
        1.0,
        gt=0,
        le=100,
        description="Gamma arrivals' shape (vLLM --burstiness): 1 Poisson, < 1 burstier.",
    )
    arrival_trace: TraceFile | None = Field(
        None, description="Trace (Azure .csv, Mooncake .jsonl) whose inter-arrival gaps to use."
    )

    @model_validator(mode="after")
    def _arrival_settings(self) -> Self:
        if (self.arrival == "trace") != (self.arrival_trace is not None):
            raise ValueError("load.arrival_trace is given exactly when load.arrival is trace")
        if self.burstiness != 1.0 and self.arrival != "gamma":
            raise ValueError("load.burstiness applies to gamma arrivals: set load.arrival gamma")
        return self

    def arrival_pattern(self) -> ArrivalPattern:
        """The probes' arrival pattern at unit rate (`sizing.arrivals`)."""
        return ArrivalPattern.of(self.arrival, self.burstiness, self.arrival_trace)

    @model_validator(mode="after")
    def _one_load(self) -> Self:
        given = [k for k in ("peak_rps", "average_rps", "daily_active_users") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of peak_rps, average_rps or daily_active_users, got "
                f"{', '.join(given) or 'none'}"
            )
        return self

    @property
    def average(self) -> float | None:
        """Average req/s over the working hours, when known."""
        if self.daily_active_users is not None:
            return dau_average_rps(
                self.daily_active_users, self.requests_per_user, self.working_hours
            )
        return self.average_rps

    def planning_peak_rps(self) -> float:
        """The peak rate to size for, req/s (`peak_rps`, or the Poisson percentile)."""
        if self.peak_rps is not None:
            return self.peak_rps
        average = self.average
        assert average is not None  # _one_load
        return poisson_peak_rps(average, self.peak_percentile, self.window_s)


class LimitsSpec(_Strict):
    """Latency limits, each judged at a percentile over requests (unset: no limit)."""

    ttft_ms: float | None = Field(None, gt=0, description="Time to first token limit, ms.")
    tpot_ms: float | None = Field(
        None, gt=0, description="Time per output token (ITL in the course) limit, ms."
    )
    e2el_ms: float | None = Field(None, gt=0, description="End-to-end latency limit, ms.")
    percentile: float = Field(
        95.0, gt=0, le=100, description="Percentile every limit is judged at (default p95)."
    )
    ttft_percentile: float | None = Field(None, gt=0, le=100, description="TTFT's own.")
    tpot_percentile: float | None = Field(None, gt=0, le=100, description="TPOT's own.")
    e2el_percentile: float | None = Field(None, gt=0, le=100, description="E2E's own.")

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.e2el_ms))

    def build(self) -> Limits:
        """The limits in seconds (SI inside)."""

        def s(ms: float | None) -> float | None:
            return None if ms is None else ms * MS

        p = self.percentile
        return Limits(
            ttft_s=s(self.ttft_ms),
            tpot_s=s(self.tpot_ms),
            e2el_s=s(self.e2el_ms),
            ttft_percentile=self.ttft_percentile or p,
            tpot_percentile=self.tpot_percentile or p,
            e2el_percentile=self.e2el_percentile or p,
        )


class PriceSpec(_Strict):
    """One GPU's price, a user input: cloud per GPU hour, or an on-premises server."""

    usd_per_gpu_hour: float | None = Field(None, ge=0, description="Cloud price per GPU hour.")
    server_usd: float | None = Field(None, ge=0, description="Purchase price of one server.")
    depreciation_years: float = Field(
        4.0, gt=0, description="Years a server's price is written off over (straight line)."
    )
    power_and_hosting_usd_per_year: float = Field(
        0.0, ge=0, description="Power, cooling, space and support per server per year."
    )
    power_usd_per_kwh: float = Field(
        0.0, ge=0, description="Electricity price for on-premises servers, $/kWh."
    )
    server_power_kw: float | None = Field(
        None,
        gt=0,
        description="Power one server draws, kW (default: its GPUs' TDP, the GPUs only; "
        "DGX H100: 10.2 kW max, NVIDIA DGX H100 datasheet).",
    )
    source: str = Field("user input", description="Where the price comes from.")

    @model_validator(mode="after")
    def _one_price(self) -> Self:
        if (self.usd_per_gpu_hour is None) == (self.server_usd is None):
            raise ValueError("give exactly one of usd_per_gpu_hour (cloud) or server_usd")
        if self.usd_per_gpu_hour is not None and (self.power_usd_per_kwh or self.server_power_kw):
            raise ValueError("power_usd_per_kwh and server_power_kw apply to server_usd prices")
        return self

    def build(self) -> Price:
        return Price(**self.model_dump())


class SearchSettings(_Strict):
    """How hard the search works."""

    num_requests: int | None = Field(
        None, ge=100, description="Poisson requests per probe at high load (default 3000)."
    )
    seed: int = Field(0, ge=0, description="Seed of arrivals and sampled lengths.")
    uncertainty: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="Efficiency factors are varied by +- this fraction for the uncertainty "
        "band (0: no band; unset: the shipped fit's cross-validated error for the winner's "
        "engine and GPU architecture).",
    )
    curves: bool = Field(True, description="Simulate each GPU's latency-throughput curve.")
    levers: bool = Field(
        True, description="Search what each lever (precision, sparsity) buys on the winner's GPU."
    )


class UseCase(_Strict):
    """A customer's sizing question (module docstring). Lengths are in `unit`."""

    name: str = Field("use case", description="A name for reports.")
    model: str = Field(description="Catalog name, Hugging Face id, or path to a config.json.")
    unit: Literal["tokens", "words"] = Field("tokens", description="Unit of the lengths.")
    words_per_token: float = Field(
        COURSE_WORDS_PER_TOKEN,
        gt=0,
        le=10,
        description="English words per token, to turn words into tokens (course: 0.75).",
    )
    input: InputSpec = Field(default_factory=InputSpec, description="The prompt's parts.")
    output: float | None = Field(
        None, gt=0, le=MAX_TOKENS, description="Output length per request."
    )
    length_cv: float = Field(
        0.0,
        ge=0,
        le=3,
        description="Spread of lengths: coefficient of variation of lognormal "
        "lengths around the given means (0: every request the same).",
    )
    lengths_trace: TraceFile | None = Field(
        None, description="Trace (Azure .csv, Mooncake .jsonl) whose lengths to use instead."
    )
    load: LoadSpec = Field(description="The traffic to size for.")
    limits: LimitsSpec = Field(default_factory=LimitsSpec, description="Latency limits.")
    streaming: bool = Field(
        True,
        description="Tokens streamed as generated (TTFT matters); false: the answer is "
        "used whole, so the E2E limit matters (course: streaming vs sequential).",
    )
    mode: Literal["online", "offline"] = Field(
        "online", description="online: latency limits apply; offline: throughput only."
    )
    candidates: CandidatesSpec = Field(
        default_factory=CandidatesSpec, description="What to search over."
    )
    prices: dict[str, PriceSpec | list[PriceSpec]] = Field(
        default_factory=dict,
        description="Prices by GPU or system name (user inputs; none built in): one price "
        "model, or a list (cloud and on-premises) compared side by side; the first ranks.",
    )
    headroom: float = Field(
        0.0, ge=0, le=10, description="Capacity above the planning peak, as a fraction (0.2: 20 %)."
    )
    search: SearchSettings = Field(default_factory=SearchSettings, description="Search effort.")
    disaggregated: DisaggregatedSpec = Field(
        default_factory=DisaggregatedSpec,
        description="Weigh disaggregated prefill/decode pools: off, auto, on (or a mapping "
        "with mode, kv_link, ratio).",
    )

    @pydantic.model_serializer(mode="wrap")
    def _dump(self, handler: pydantic.SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`disaggregated` is left out while it is the default (off), so plans that do not
        use it dump (and their committed JSON reads) as before it existed."""
        data: dict[str, Any] = handler(self)
        if self.disaggregated == DisaggregatedSpec():
            data.pop("disaggregated", None)
        return data

    @field_validator("model")
    @classmethod
    def _known_model(cls, name: str) -> str:
        try:
            get_model(name)  # UnknownNameError names close matches
        except FileNotFoundError as e:  # a config.json path that is not there
            raise ValueError(str(e)) from None
        return name

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        self._check_lengths()
        self._check_limits()
        unknown = [k for k in self.prices if get_gpu(k).key not in self.candidates.gpus]
        if unknown:
            raise ValueError(f"prices: {unknown} are not among candidates.gpus")
        self._check_draft()
        empty = [k for k, v in self.prices.items() if isinstance(v, list) and not v]
        if empty:
            raise ValueError(f"prices: {empty} have an empty list of price models")
        return self

    def _check_draft(self) -> None:
        draft = self.candidates.draft_model
        if draft is None or not any(self.candidates.speculative_tokens):
            return
        d, m = get_model(draft), get_model(self.model)
        if d.total_params >= m.total_params:
            raise ValueError(
                f"candidates.draft_model {d.name} ({d.total_params / 1e9:.1f} B parameters) "
                f"is not smaller than the target {m.name} ({m.total_params / 1e9:.1f} B)"
            )

    def _check_lengths(self) -> None:
        if self.lengths_trace is not None:
            if self.input.total or self.output is not None or self.length_cv:
                raise ValueError(
                    "lengths_trace gives the lengths: leave input, output and length_cv unset"
                )
            return
        if not self.input.total:
            raise ValueError("input: give at least one part (system_prompt, documents, ...)")
        if self.output is None:
            raise ValueError("output: give the output length per request")
        words = (
            f" ({self.input.total:g} + {self.output:g} words at {self.words_per_token} "
            "words per token)"
            if self.unit == "words"
            else ""
        )
        total = self.input_tokens + self.output_tokens
        check_context(get_model(self.model), total, f"input + output{words}")

    def _check_limits(self) -> None:
        if self.mode == "offline" and self.limits.any:
            raise ValueError("limits: offline use is sized on throughput only; remove them")
        sequential = self.mode == "online" and not self.streaming
        if sequential and self.limits.any and self.limits.e2el_ms is None:
            raise ValueError(
                "limits.e2el_ms: sequential use (streaming: false) waits for the whole "
                "answer, so give an end-to-end latency limit"
            )

    def tokens(self, amount: float) -> int:
        """`amount` in `unit` as whole tokens (at least 1)."""
        value = amount / self.words_per_token if self.unit == "words" else amount
        return max(1, round(value))

    @property
    def input_tokens(self) -> int:
        return self.tokens(self.input.total)

    @property
    def output_tokens(self) -> int:
        assert self.output is not None
        return self.tokens(self.output)

    def planning_load_rps(self) -> float:
        """The planning peak times (1 + headroom): the rate the deployment is sized for."""
        return self.load.planning_peak_rps() * (1.0 + self.headroom)


def usecase_from_dict(data: dict[str, Any]) -> UseCase:
    """Validate a parsed YAML/JSON mapping (raises `pydantic.ValidationError`)."""
    return UseCase.model_validate(data)
