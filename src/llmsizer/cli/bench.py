"""`llmsizer bench`: measure an OpenAI-compatible server with the simulator's metrics."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.text import Text

from llmsizer.bench import BenchError, BenchSpec, run_benchmark
from llmsizer.bench.results import outcome_line
from llmsizer.cli.common import err, field_help, out

S = BenchSpec


def bench(
    base_url: Annotated[
        str, typer.Option(help=field_help(S, "base_url"))
    ] = "http://127.0.0.1:8000",
    model: Annotated[str | None, typer.Option(help=field_help(S, "model"))] = None,
    endpoint: Annotated[str | None, typer.Option(help=field_help(S, "endpoint"))] = None,
    isl: Annotated[int | None, typer.Option(help=field_help(S, "isl"))] = None,
    osl: Annotated[int | None, typer.Option(help=field_help(S, "osl"))] = None,
    num_prompts: Annotated[int | None, typer.Option(help=field_help(S, "num_prompts"))] = None,
    num_warmups: Annotated[int | None, typer.Option(help=field_help(S, "num_warmups"))] = None,
    concurrency: Annotated[str | None, typer.Option(help=field_help(S, "concurrency"))] = None,
    request_rate: Annotated[str | None, typer.Option(help=field_help(S, "request_rate"))] = None,
    burstiness: Annotated[float | None, typer.Option(help=field_help(S, "burstiness"))] = None,
    trace: Annotated[Path | None, typer.Option(help=field_help(S, "trace"))] = None,
    time_scale: Annotated[float | None, typer.Option(help=field_help(S, "time_scale"))] = None,
    system_prompt_tokens: Annotated[
        int | None, typer.Option(help=field_help(S, "system_prompt_tokens"))
    ] = None,
    seed: Annotated[int | None, typer.Option(help=field_help(S, "seed"))] = None,
    tokenizer: Annotated[Path | None, typer.Option(help=field_help(S, "tokenizer"))] = None,
    prompt_tokens_from: Annotated[
        str | None, typer.Option(help=field_help(S, "prompt_tokens_from"))
    ] = None,
    continuous_usage_stats: Annotated[
        bool | None, typer.Option(help=field_help(S, "continuous_usage_stats"))
    ] = None,
    timeout_s: Annotated[float | None, typer.Option(help=field_help(S, "timeout_s"))] = None,
    request_timeout_s: Annotated[
        float | None, typer.Option(help=field_help(S, "request_timeout_s"))
    ] = None,
    api_key: Annotated[str | None, typer.Option(help=field_help(S, "api_key"))] = None,
    server_metrics: Annotated[
        bool | None, typer.Option(help=field_help(S, "server_metrics"))
    ] = None,
    realtime: Annotated[bool | None, typer.Option(help=field_help(S, "realtime"))] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help=field_help(S, "result_path"))
    ] = None,
    records: Annotated[Path | None, typer.Option(help=field_help(S, "records_path"))] = None,
    overwrite: Annotated[bool, typer.Option(help=field_help(S, "overwrite"))] = False,
) -> None:
    """Benchmark an OpenAI-compatible endpoint (vLLM, SGLang, TensorRT-LLM, NIM, ...).

    Sweeps concurrency (closed loop) or request rate (Poisson, gamma with --burstiness) or
    replays a trace; every request is a record streamed to --records as it completes, so an
    interrupted run keeps what it measured. Metrics are the simulator's (vLLM's) definitions.
    """
    given: dict[str, Any] = {
        "base_url": base_url, "model": model, "endpoint": endpoint, "isl": isl, "osl": osl,
        "num_prompts": num_prompts, "num_warmups": num_warmups, "concurrency": concurrency,
        "request_rate": request_rate, "burstiness": burstiness, "trace": trace,
        "time_scale": time_scale, "system_prompt_tokens": system_prompt_tokens, "seed": seed,
        "tokenizer": tokenizer, "prompt_tokens_from": prompt_tokens_from,
        "continuous_usage_stats": continuous_usage_stats,
        "timeout_s": timeout_s, "request_timeout_s": request_timeout_s, "api_key": api_key,
        "server_metrics": server_metrics, "realtime": realtime, "result_path": json_out,
        "records_path": records, "overwrite": overwrite,
    }  # fmt: skip
    live = sys.stdout.isatty() and not os.environ.get("CI")
    try:
        spec = BenchSpec.model_validate({k: v for k, v in given.items() if v is not None})
        results = run_benchmark(spec, console=out, live_progress=live)
    except ValidationError as e:
        _exit_with(_flag_errors(e, given))
    except (ValueError, OSError, BenchError) as e:  # e.g. cannot connect: one line, no traceback
        _exit_with(str(e))
    for result in results:  # how each point ended, by error kind (also in the results file)
        _say(outcome_line(result))
    if not results:
        _say("stopped before the first point: nothing was measured")
    if not results or any(r.aborted or r.interrupted or r.failures for r in results):
        raise typer.Exit(1)


def _say(line: str) -> None:
    """A line on stderr as it is: never wrapped, and server text is never rich markup."""
    err.print(line, markup=False, highlight=False, soft_wrap=True)


def _exit_with(message: str) -> NoReturn:
    err.print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)
    raise typer.Exit(2)


_FLAGS = {"result_path": "--json", "records_path": "--records"}  # fields renamed as flags


def _flag(field: str) -> str:
    return _FLAGS.get(field, "--" + field.replace("_", "-"))


def _flag_errors(e: ValidationError, given: dict[str, Any]) -> str:
    """`invalid bench flags:` then `  --concurrency 0,4: <what is allowed>` per problem."""
    lines = ["invalid bench flags:"]
    for problem in e.errors():
        msg = problem["msg"].removeprefix("Value error, ")
        msg = re.sub(r"`(\w+)`", lambda m: _flag(m.group(1)), msg)  # `request_rate` as typed
        loc = problem["loc"]
        if not loc:
            lines.append(f"  {msg}")
            continue
        field = str(loc[0])
        if len(loc) > 1 and isinstance(loc[1], int):  # one item of a comma list
            msg = f"item {loc[1] + 1} ({problem['input']!r}): {msg}"
        value = None if field == "api_key" else given.get(field)  # never echo a secret
        lines.append(f"  {_flag(field)}{'' if value is None else f' {value}'}: {msg}")
    return "\n".join(lines)
