"""`plan --disaggregated`: the flags folded into the use case, and the comparison printed."""

from __future__ import annotations

from pydantic import ValidationError

from llmsizer.cli.common import out
from llmsizer.config import ConfigError
from llmsizer.errors import format_validation_error
from llmsizer.sizing.disagg_plan import LOAD_FACTORS, Comparison
from llmsizer.sizing.disagg_spec import DisaggregatedSpec
from llmsizer.sizing.limits import Limits
from llmsizer.sizing.usecase import UseCase


def with_disaggregated(
    usecase: UseCase, *, mode: str | None, kv_link: str | None, ratio: str | None
) -> UseCase:
    """`usecase` with the flags over its `disaggregated` field (flags win, key by key)."""
    given = {k: v for k, v in (("mode", mode), ("kv_link", kv_link), ("ratio", ratio)) if v}
    if not given:
        return usecase
    current = usecase.disaggregated.model_dump(exclude_defaults=True)
    try:
        spec = DisaggregatedSpec.model_validate({**current, **given})
    except ValidationError as e:
        where = "--disaggregated / --kv-link / --pd-ratio"
        raise ConfigError(format_validation_error(e, where)) from None
    if spec.ratio is not None and not spec.enabled:
        raise ConfigError(
            "--pd-ratio fixes the disaggregated pools: give --disaggregated on or auto"
        )
    return usecase.model_copy(update={"disaggregated": spec})


def print_comparison(c: Comparison, limits: Limits) -> None:
    """The two answers, the pools' rates, the whole-fleet check and the crossover table."""
    s = c.disaggregated
    out.print("Aggregated or disaggregated", style="bold", highlight=False)
    if c.aggregated is not None:
        config, sizing, _ = c.aggregated
        out.print(
            f"  aggregated: {sizing.num_instances}x {config.label()} = {sizing.num_gpus} GPUs",
            highlight=False,
        )
    for r in s.rates:
        rate = f"{r.rate:.2f} req/s per worker" if r.rate is not None else r.reason
        out.print(f"  {r.role} TP{r.spec.tensor_parallel_size}: {rate}", highlight=False)
    for run in s.runs:
        judged = ", ".join(
            f"{lim.describe()}: {lim.value_s(run.latencies) * 1e3:,.0f} ms"
            for lim in limits.limits()
        )
        verdict = "meets" if run.meets else "misses"
        out.print(
            f"  {run.layout.label()} = {run.layout.num_gpus} GPUs: {verdict} ({judged})",
            highlight=False,
        )
    out.print(f"  KV handoff: {s.link}", highlight=False)
    if c.crossover:
        head = " | ".join(f"{g:g}x load" for g in LOAD_FACTORS)
        out.print(
            f"  GPUs aggregated / disaggregated, mean prompt x load: | {head}", highlight=False
        )
        for row in c.crossover:
            cells = " | ".join(f"{_n(a)} / {_n(d)}" for a, d in row.gpus)
            out.print(f"  {row.mean_prompt:>9,.0f} tokens: | {cells}", highlight=False)
    out.print(f"- {c.summary}", highlight=False)
    out.print(f"- Recommended: {c.recommended or 'neither'}", highlight=False)


def _n(x: int | None) -> str:
    return "-" if x is None else str(x)
