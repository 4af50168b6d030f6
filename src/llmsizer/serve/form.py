"""The use-case form: flat fields (what the page and its URL hold) to and from a `UseCase`.

Every field is one query parameter, so the page's URL is the use case and a link reproduces
the plan. `usecase_from_form` validates the whole form through `UseCase` (the schema the CLI
reads) and names, per field, what is wrong; `form_from_usecase` turns a use-case mapping (a
YAML file the CLI reads) back into fields.

Lists are comma separated (`gpus=h100-sxm,h200`); prices are `gpu=price` pairs
(`usd_per_gpu_hour=h100-sxm=3,h200=4`). An empty field is unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from llmsizer.sizing.usecase import UseCase


@dataclass(frozen=True, slots=True)
class Field:
    """One form field: its query name, where it goes in a use case, label and hint."""

    name: str
    path: str  # dotted path in the use-case mapping ("" : handled by hand)
    label: str
    hint: str
    kind: str = "number"  # number, text, select, list, prices, checkbox
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    question: str
    fields: tuple[Field, ...]


F = Field
SECTIONS: tuple[Section, ...] = (
    Section(
        "Model",
        "Which model will you serve?",
        (
            F("name", "name", "Name", "A name for the report.", "text"),
            F(
                "model",
                "model",
                "Model",
                "Catalog name (type to search), or upload a config.json.",
                "text",
            ),
        ),
    ),
    Section(
        "Lengths",
        "How long are prompts and answers? System prompt, documents and history included.",
        (
            F(
                "unit",
                "unit",
                "Unit",
                "Tokens, or English words (0.75 words a token).",
                "select",
                ("tokens", "words"),
            ),
            F("system_prompt", "input.system_prompt", "System prompt", "Sent with every request."),
            F(
                "documents",
                "input.documents",
                "Documents",
                "Retrieved documents (RAG) per request.",
            ),
            F("history", "input.history", "History", "Chat history carried into each request."),
            F("user", "input.user", "User text", "The user's own text per request."),
            F("output", "output", "Output", "Output length per request."),
            F("length_cv", "length_cv", "Length spread (CV)", "0: every request the same length."),
            F(
                "lengths_trace",
                "lengths_trace",
                "Trace",
                "Or upload a trace (Azure .csv, Mooncake .jsonl) for real lengths.",
                "text",
            ),
        ),
    ),
    Section(
        "Load",
        "How many requests per second? Give one: the peak, an average, or daily users.",
        (
            F("peak_rps", "load.peak_rps", "Peak req/s", "The busiest second you must serve."),
            F(
                "average_rps",
                "load.average_rps",
                "Average req/s",
                "Planned at its Poisson percentile below.",
            ),
            F(
                "daily_active_users",
                "load.daily_active_users",
                "Daily active users",
                "Each sends the requests per user below over the working hours.",
            ),
            F(
                "requests_per_user",
                "load.requests_per_user",
                "Requests per user",
                "Per day (course: 3).",
            ),
            F(
                "working_hours",
                "load.working_hours",
                "Working hours",
                "Hours a day the load lasts (course: 8).",
            ),
            F(
                "peak_percentile",
                "load.peak_percentile",
                "Peak percentile",
                "Of Poisson arrivals per second (course: 95).",
            ),
            F("headroom", "headroom", "Headroom", "Spare capacity as a fraction (0.2: 20 %)."),
        ),
    ),
    Section(
        "Limits",
        "What latency can users accept? First token for streaming, the whole answer otherwise.",
        (
            F("ttft_ms", "limits.ttft_ms", "TTFT limit (ms)", "Time to first token."),
            F(
                "tpot_ms",
                "limits.tpot_ms",
                "TPOT limit (ms)",
                "Time per output token (ITL in the course).",
            ),
            F(
                "e2el_ms",
                "limits.e2el_ms",
                "E2E limit (ms)",
                "Whole answer; needed when not streaming.",
            ),
            F(
                "percentile",
                "limits.percentile",
                "Percentile",
                "Every limit is judged at it (95: p95).",
            ),
            F(
                "mode",
                "mode",
                "Mode",
                "Offline: throughput only, no limits.",
                "select",
                ("online", "offline"),
            ),
            F(
                "streaming",
                "streaming",
                "Streaming",
                "Tokens shown as generated (TTFT matters).",
                "select",
                ("true", "false"),
            ),
        ),
    ),
    Section(
        "GPUs and prices",
        "Which GPUs may you use, what do they cost, and which levers may the plan pull?",
        (
            F(
                "gpus",
                "candidates.gpus",
                "GPUs",
                "Comma separated: h100-sxm, h200, l40s, dgx-h100, ...",
                "list",
            ),
            F(
                "precisions",
                "candidates.precisions",
                "Precisions",
                "Weights: bf16, fp8, ...",
                "list",
            ),
            F(
                "tp",
                "candidates.tensor_parallel_sizes",
                "Tensor parallel",
                "Sizes to try: 1,2,4,8.",
                "list",
            ),
            F("engines", "candidates.engines", "Engines", "vllm, trtllm, sglang.", "list"),
            F(
                "usd_per_gpu_hour",
                "",
                "Cloud prices",
                "gpu=USD per GPU hour, comma separated.",
                "prices",
            ),
            F(
                "server_usd",
                "",
                "Server prices",
                "gpu=USD per server (on premises), comma separated.",
                "prices",
            ),
            F(
                "depreciation_years",
                "",
                "Depreciation (years)",
                "Server prices written off over (4).",
            ),
            F(
                "power_and_hosting_usd_per_year",
                "",
                "Power and hosting",
                "USD per server per year (0).",
            ),
            F("source", "", "Price source", "Where the prices come from (for the report).", "text"),
        ),
    ),
)
FIELDS: dict[str, Field] = {f.name: f for s in SECTIONS for f in s.fields}
GENERAL = "form"  # the key of errors that belong to no one field
SERVER_PRICE_KEYS = ("depreciation_years", "power_and_hosting_usd_per_year")
SHARED_PRICE_KEYS = ("source",)  # one value for every price


def clean_form(params: Mapping[str, str]) -> dict[str, str]:
    """The known, non-empty fields of a query, stripped, in form order."""
    out = {}
    for name in FIELDS:
        value = params.get(name)
        if value is not None and value.strip():
            out[name] = value.strip()
    return out


def usecase_dict(form: Mapping[str, str]) -> dict[str, Any]:
    """The nested use-case mapping a form sets (values still strings: `UseCase` parses)."""
    data: dict[str, Any] = {}
    for name, value in clean_form(form).items():
        field = FIELDS[name]
        if not field.path:
            continue
        parsed: Any = value
        if field.kind == "list":
            parsed = [v.strip() for v in value.split(",") if v.strip()]
        *parents, key = field.path.split(".")
        node = data
        for p in parents:
            node = node.setdefault(p, {})
        node[key] = parsed
    prices = _prices(form)
    if prices:
        data["prices"] = prices
    return data


def _prices(form: Mapping[str, str]) -> dict[str, dict[str, str]]:
    prices: dict[str, dict[str, str]] = {}
    for kind in ("usd_per_gpu_hour", "server_usd"):
        for gpu, price in _pairs(form.get(kind, "")):
            prices.setdefault(gpu, {})[kind] = price
            if kind == "server_usd":
                for key in SERVER_PRICE_KEYS:
                    if form.get(key, "").strip():
                        prices[gpu][key] = form[key].strip()
    for key in SHARED_PRICE_KEYS:
        if form.get(key, "").strip():
            for spec in prices.values():
                spec[key] = form[key].strip()
    return prices


def _pairs(text: str) -> list[tuple[str, str]]:
    """`a=1, b=2` as pairs; a part without `=` keeps an empty price (the schema names it)."""
    pairs = []
    for part in text.split(","):
        if part.strip():
            gpu, _, price = part.partition("=")
            pairs.append((gpu.strip(), price.strip()))
    return pairs


def usecase_from_form(form: Mapping[str, str]) -> tuple[UseCase | None, dict[str, str]]:
    """The validated use case, or `None` and a message per field (`GENERAL`: the rest)."""
    try:
        return UseCase.model_validate(usecase_dict(form)), {}
    except ValidationError as e:
        errors: dict[str, str] = {}
        for problem in e.errors():
            loc = tuple(str(p) for p in problem["loc"])
            msg = problem["msg"].removeprefix("Value error, ")
            if problem["type"] == "missing":
                msg = "required"
            name = field_of(loc, msg)
            errors[name] = f"{errors[name]}; {msg}" if name in errors else msg
        return None, errors


PREFIXES = (  # a check across fields says which field it is about in its first words
    ("lengths_trace", "lengths_trace"),
    ("input + output", "output"),
    ("input", "user"),
    ("output", "output"),
    ("limits.e2el_ms", "e2el_ms"),
    ("limits", "ttft_ms"),
    ("prices", "usd_per_gpu_hour"),
    ("give exactly one of peak_rps", "peak_rps"),
    ("give exactly one of usd_per_gpu_hour", "usd_per_gpu_hour"),
)


def field_of(loc: tuple[str, ...], msg: str) -> str:
    """The form field a pydantic error location (and message, for checks across fields)
    belongs to."""
    if loc and loc[0] == "prices":
        kind = loc[2] if len(loc) > 2 else ""
        return kind if kind in FIELDS else "usd_per_gpu_hour"
    for name, field in FIELDS.items():
        if field.path and ".".join(loc).startswith(field.path):
            return name
    for prefix, name in PREFIXES:
        if msg.startswith(prefix):
            return name
    return GENERAL


def form_from_usecase(data: Mapping[str, Any]) -> dict[str, str]:
    """Form fields from a use-case mapping (a YAML file the CLI reads); keys the form has
    no field for are dropped (the page says which)."""
    form: dict[str, str] = {}
    for name, field in FIELDS.items():
        node: Any = data
        for key in field.path.split(".") if field.path else ():
            node = node.get(key) if isinstance(node, Mapping) else None
        if field.path and node is not None:
            is_list = isinstance(node, list)
            form[name] = ",".join(str(v) for v in node) if is_list else _text(node)
    prices = data.get("prices")
    if isinstance(prices, Mapping):
        for kind in ("usd_per_gpu_hour", "server_usd", *SERVER_PRICE_KEYS, *SHARED_PRICE_KEYS):
            pairs = [
                (gpu, p[kind]) for gpu, p in prices.items() if isinstance(p, Mapping) and kind in p
            ]
            if pairs and kind in (*SERVER_PRICE_KEYS, *SHARED_PRICE_KEYS):
                form[kind] = _text(pairs[0][1])
            elif pairs:
                form[kind] = ",".join(f"{gpu}={_text(v)}" for gpu, v in pairs)
    return form


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def unused_keys(data: Mapping[str, Any]) -> list[str]:
    """Dotted keys of a use-case mapping that `form_from_usecase` cannot show."""
    known = {f.path for f in FIELDS.values() if f.path} | {"prices"}
    found = []

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if path in known:
                continue
            if isinstance(value, Mapping) and any(k.startswith(f"{path}.") for k in known):
                walk(value, f"{path}.")
            else:
                found.append(path)

    walk(data, "")
    return found
