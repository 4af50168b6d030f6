"""The SGLang worker settings of the srt-slurm recipe an InferenceX Dynamo SGLang sweep ran.

InferenceX's `dynamo-sglang` sweeps name their srt-slurm recipe (`CONFIG_FILE=`,
`llmsizer.calibrate.aic_launches`); the recipe's `backend.sglang_config.{prefill,decode}` are
the workers' SGLang server arguments. `data/srt_slurm_sglang.csv` holds those that size a
worker's batches, per recipe and InferenceX revision, each line naming the file and commit it
was read at (`bench/srt_slurm_recipes.py`: NVIDIA/srt-slurm, the `sa-submission-q1-2026`
branch as merged in 5063eb432 for the sweeps InferenceX ran on it). A row an SGLang sweep
launched gets them as its pool cells (`recipe_columns`), read per attention-DP rank as
SGLang 0.5.x applies them:

- `max-running-requests` is the worker's: each attention-DP rank runs at most
  `max_running_requests // dp_size` (`ModelRunner.max_running_requests`, `dp_size` the
  server's with `--enable-dp-attention`, else 1; sglang 0.5.9 `model_executor/
  model_runner.py`) -> `{pool}_batch_size`, the pool's `max_num_seqs` per rank. A dump
  row's cells are AIConfigurator's (`prefill_batch_size` 1, the decode batch the clients
  spread over the ranks: `sdk/config_adapter/inferencex.py`), not the launch's, and are
  replaced; where the recipe sets none the cell is emptied: SGLang's own default (by KV
  memory, `max_total_num_tokens // 2`), the preset's "left to memory".
- `chunked-prefill-size` is divided the same way (`ServerArgs._handle_data_parallelism`:
  `chunked_prefill_size // dp_size` under DP attention) -> `prefill_chunked_prefill_size`,
  the prefill pool's `max_num_batched_tokens` per rank; -1 (chunked prefill off) is not
  carried (no prefill pool in the table sets it).
- `mem-fraction-static` -> `{pool}_mem_fraction_static`, the pool's
  `gpu_memory_utilization` in SGLang's meaning (weights and KV).
- `cuda-graph-max-bs` (per rank: `cuda_graph_runner.get_batch_sizes_to_capture` compares it
  with one rank's batch) -> `decode_cuda_graph_max_bs`, the decode pool's
  `max_cudagraph_capture_size`. Prefill workers run `--disable-cuda-graph` in these recipes:
  prompt steps are eager in SGLang anyway (`llmsizer.perf.cuda_graphs`).
- `moe-a2a-backend: deepep` on a pool with DP attention -> `{pool}_moe_a2a_backend`, the
  pool's `moe_a2a_backend` (`llmsizer.perf.moe_comm`): `deepep-mode` `low_latency` is
  `deepep_low_latency`, `normal` `deepep_high_throughput`, and `auto` (SGLang's default)
  each pool's own: `DeepEPMode.resolve` picks normal for a batch with prompt work, low
  latency for a decode batch (sglang 0.5.x `layers/moe/utils.py`), so the prefill pool's
  normal and the decode pool's low latency. Other backends (`megamoe`, `flashinfer`) and
  pools without DP attention are left to the gather (not priced as an all-to-all).

`recipe` names the file and commit. Another setting the recipe leaves out keeps the preset's.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

TABLE = "data/srt_slurm_sglang.csv"
POOLS = ("prefill", "decode")


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """One pool's settings as one attention-DP rank runs them (module docstring); None
    where the recipe does not set it."""

    max_running_requests: int | None = None
    chunked_prefill_size: int | None = None
    mem_fraction_static: float | None = None
    cuda_graph_max_bs: int | None = None
    moe_a2a_backend: str | None = None


@dataclass(frozen=True, slots=True)
class SglangRecipe:
    """A recipe's two pools and where it was read (`path @commit`)."""

    source: str
    prefill: PoolSettings
    decode: PoolSettings


def _int(text: str) -> int | None:
    return int(float(text)) if text.strip() else None


def pool_settings(line: Mapping[str, str], pool: str) -> PoolSettings:
    """A table line's `pool` settings per attention-DP rank (module docstring)."""
    cell = {k.removeprefix(f"{pool}_"): v for k, v in line.items() if k.startswith(f"{pool}_")}
    dp_size = _int(cell["dp_size"]) or 1
    ranks = dp_size if cell["dp_attention"].strip() == "1" else 1
    running, chunk = _int(cell["max_running_requests"]), _int(cell["chunked_prefill_size"])
    fraction = cell["mem_fraction_static"].strip()
    return PoolSettings(
        max_running_requests=None if running is None else running // ranks,
        chunked_prefill_size=None if chunk is None or chunk <= 0 else chunk // ranks,
        mem_fraction_static=float(fraction) if fraction else None,
        cuda_graph_max_bs=_int(cell["cuda_graph_max_bs"]),
        moe_a2a_backend=_a2a(cell, pool) if ranks > 1 else None,
    )


def _a2a(cell: Mapping[str, str], pool: str) -> str | None:
    """A DP-attention pool's DeepEP exchange (module docstring), else None."""
    if cell.get("moe_a2a_backend", "").strip() != "deepep":
        return None
    mode = cell.get("deepep_mode", "").strip() or "auto"
    if mode == "auto":
        mode = "normal" if pool == "prefill" else "low_latency"
    return {"low_latency": "deepep_low_latency", "normal": "deepep_high_throughput"}[mode]


@cache
def sglang_recipes() -> dict[tuple[str, str], SglangRecipe]:
    """The table: (recipe as the sweep names it, InferenceX commit) -> its settings."""
    text = resources.files("llmsizer.calibrate").joinpath(TABLE).read_text()
    return {
        (line["recipe"], line["inferencex_commit"]): SglangRecipe(
            f"{line['read_from']} @{line['read_commit']}",
            pool_settings(line, "prefill"),
            pool_settings(line, "decode"),
        )
        for line in csv.DictReader(text.splitlines())
    }


def sglang_recipe(recipe: str, commit: str) -> SglangRecipe | None:
    """The settings of `recipe` as the sweep of InferenceX revision `commit` ran it, or
    None where the table has no such line."""
    return sglang_recipes().get((recipe, commit))


def recipe_columns(recipe: SglangRecipe) -> dict[str, str]:
    """The AIC row cells a row launched with `recipe` gets (module docstring)."""
    cells = {"recipe": recipe.source}
    for pool in POOLS:
        s: PoolSettings = getattr(recipe, pool)
        running = s.max_running_requests
        cells[f"{pool}_batch_size"] = "" if running is None else str(running)
        if s.mem_fraction_static is not None:
            cells[f"{pool}_mem_fraction_static"] = str(s.mem_fraction_static)
        if s.moe_a2a_backend is not None:
            cells[f"{pool}_moe_a2a_backend"] = s.moe_a2a_backend
    if recipe.prefill.chunked_prefill_size is not None:
        cells["prefill_chunked_prefill_size"] = str(recipe.prefill.chunked_prefill_size)
    if recipe.decode.cuda_graph_max_bs is not None:
        cells["decode_cuda_graph_max_bs"] = str(recipe.decode.cuda_graph_max_bs)
    return cells
