"""The worker counts of an exported disaggregated AIC row, read from the InferenceX sweep
that launched it.

The `source_file=` rows leave `{pool}_num_workers` empty and write one worker's GPUs as
`{pool}_tp_size` (`llmsizer.calibrate.aic_disagg`). Rows whose run is also in the dump take
its pool columns (`llmsizer.calibrate.aic_twins`); the others are read here as the sweep of
InferenceX's Dynamo config that ran them: `data/inferencex_sweeps.csv`, every NVIDIA
multi-node disaggregated config (`dynamo-trt`, `dynamo-sglang`) at each revision of
`.github/configs/nvidia-master.yaml` that changed it, transcribed by
`bench/inferencex_sweeps.py` from SemiAnalysisAI/InferenceX (each line names its config and
commit). A row's sweep (`llmsizer.calibrate.aic_sweeps.find_sweep`):

- **config**: engine (`trtllm` is `dynamo-trt`, `sglang` is `dynamo-sglang`), system
  (`b200_sxm` is runner `b200`, ...), model (`deepseek-ai/DeepSeek-R1` is prefix `dsr1`, ...),
  precision (`fp4`, `fp8`) and lengths;
- **revision**: in force at the row's `measured=` time, else the first later one (a pull
  request's run), else the newest earlier one;
- **sweep**: its `conc-list` holds the row's `silicon_concurrency` and its prefill and decode
  workers have the row's `prefill_tp_size` and `decode_tp_size` GPUs. The rows do not say
  whether a run used MTP speculative decoding: sweeps without it are tried first; a row
  only an MTP sweep ran (232 of the rows) gets that sweep's pools, its launch label saying
  `MTP` so reports can tell, and its `mtp` / `mtp_tokens` cells (the sweep's draft tokens
  per step: `DECODE_MTP_SIZE`, or `mtpN` in its TensorRT-LLM recipe's name), which
  `llmsizer.calibrate.aic_disagg` turns into the decode pool's speculative decoding
  (`llmsizer.calibrate.aic_launch.mtp_speculation`).
- **several sweeps** of one revision fit (the same clients on workers of the same size, in
  fleets of different sizes): the smallest fleet (fewest GPUs, then the first listed), the
  reading closest to the one worker of each pool these rows were priced on before; the
  launch label says how many fit.

A row no sweep names keeps one worker of each pool (`workers_given` False).

**Decode batch.** A TensorRT-LLM sweep's srt-slurm recipe is named
`ctx{P}_gen{D}_{layout}_batch{N}_eplb{E}_mtp{K}.yaml`, `N` its decode workers'
`max_batch_size` (per attention-DP rank: InferenceX `ctx1dep4_gen1dep16_batch32_...yaml`
sets `decode: max_batch_size: 32, enable_attention_dp: true` and runs 615 clients on its
16 x 32 = 512 slots; `ctx1dep4_gen5tep4_batch1_...yaml`, `max_batch_size: 1`). A row that
sweep ran gets it as `decode_batch_size`: the launched rows, whose cell is empty, and the
dump rows (and their exported twins), whose cell is not the launch's but AIConfigurator's
`concurrency // (workers x attention DP)` (`sdk/config_adapter/inferencex.py`: "InferenceX
disaggregated prefill batch defaults to 1", decode batch the clients spread over the ranks),
when a sweep with their worker counts and GPUs ran their clients. InferenceX runs more
clients than decode slots (6 on 3 x 1, 60 on 3 x 16, 615 on 512): the rest wait for a slot
(`llmsizer.fleet.disagg`: before their first token). docs/aic_measurement.md section 19.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

from llmsizer.calibrate.aic_sglang_recipes import recipe_columns, sglang_recipe
from llmsizer.calibrate.aic_sweeps import (
    Pool,
    Sweep,
    Versions,
    clients,
    decode_batch_columns,
    find_sweep,
    measured_at,
    mtp_columns,
)
from llmsizer.calibrate.aic_twins import workers_given

TABLE = "data/inferencex_sweeps.csv"
SYSTEMS = {"b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200", "gb300": "gb300",
           "h100_sxm": "h100"}  # fmt: skip
MODELS = {"deepseek-ai/DeepSeek-R1": "dsr1", "moonshotai/Kimi-K2.5": "kimik2.5",
          "zhipuai/GLM-5": "glm5"}  # fmt: skip
Key = tuple[str, str, str, str, int, int]  # engine, system, model prefix, precision, isl, osl
DUMP_MODELS = {**MODELS, "deepseek-ai/DeepSeek-V3": "dsr1"}  # the dump names dsr1 runs V3
_RECIPE_BATCH = re.compile(r"_batch(\d+)_eplb")


def recipe_decode_batch(engine: str, recipe: str) -> int | None:
    """The decode `max_batch_size` a TensorRT-LLM srt-slurm recipe's name carries (module
    docstring), or None."""
    found = _RECIPE_BATCH.search(recipe.rsplit("/", 1)[-1]) if engine == "trtllm" else None
    return int(found.group(1)) if found else None


def _pool(line: Mapping[str, str], role: str) -> Pool:
    return Pool(
        int(line[f"{role}_workers"]),
        int(line[f"{role}_tp"]),
        line[f"{role}_dp_attn"] == "1",
        int(line[f"{role}_ep"]),
    )


@cache
def inferencex_sweeps() -> dict[Key, list[Versions]]:
    """The table (module docstring): per config key, each config's sweeps by revision."""
    configs: dict[Key, dict[str, dict[str, list[Sweep]]]] = defaultdict(dict)
    text = resources.files("llmsizer.calibrate").joinpath(TABLE).read_text()
    for line in csv.DictReader(text.splitlines()):
        key = (line["engine"], line["system"], line["model_prefix"], line["precision"],
               int(line["isl"]), int(line["osl"]))  # fmt: skip
        sweep = Sweep(
            tuple(int(c) for c in line["clients"].split()),
            _pool(line, "prefill"),
            _pool(line, "decode"),
            mtp=line["mtp"] == "1",
            source=f"{line['config']} @{line['commit']}",
            mtp_tokens=int(line["mtp_tokens"]) if line["mtp_tokens"] else None,
            decode_batch=recipe_decode_batch(line["engine"], line["recipe"]),
            recipe=line["recipe"],
        )
        by_since = configs[key].setdefault(line["config"], {})
        by_since.setdefault(line["since"], []).append(sweep)
    return {
        key: [sorted((s, tuple(sw)) for s, sw in by.items()) for by in named.values()]
        for key, named in configs.items()
    }


def _smallest(found: list[Sweep]) -> Sweep:
    return min(found, key=lambda s: s.num_gpus)  # min keeps the first of equals


def inferencex_sweep(row: Mapping[str, str], workers: tuple[int, int] | None = None) -> Sweep | str:
    """The sweep that launched an exported row without worker counts (module docstring), or
    why none can be named; `workers` (prefill, decode): a dump row's, read as its
    workers' GPUs (`tp x attention DP`) and counts."""
    models = MODELS if workers is None else DUMP_MODELS
    key = (row["backend"], SYSTEMS.get(row["system"], ""), models.get(row["model_path"], ""),
           row["precision"], int(row["isl"]), int(row["osl"]))  # fmt: skip
    configs = inferencex_sweeps().get(key)
    measured, concurrency = measured_at(row), clients(row)
    if configs is None or measured is None or concurrency is None:
        return "no InferenceX config for this engine, system, model, precision and lengths"
    gpus = (int(row["prefill_tp_size"]), int(row["decode_tp_size"]))
    if workers is not None:
        gpus = (_gpus(row, "prefill"), _gpus(row, "decode"))
    for mtp in (False, True):

        def fits(s: Sweep, mtp: bool = mtp) -> bool:
            counts = workers is None or (s.prefill.workers, s.decode.workers) == workers
            return s.mtp == mtp and (s.prefill.gpus, s.decode.gpus) == gpus and counts

        found = find_sweep(configs, measured, concurrency, fits, _smallest)
        if isinstance(found, Sweep):
            return found
    return (
        f"no InferenceX sweep ran {concurrency} clients on {gpus[0]}-GPU prefill and "
        f"{gpus[1]}-GPU decode workers"
    )


def with_inferencex_launches(rows: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """`rows` (file order), each exported disaggregated row still without worker counts
    (no twin in the dump) given the pool columns of the sweep that launched it and a
    `launch` key naming it (`MTP` after the layout when only an MTP sweep ran it); a row no
    sweep names is left as it is."""
    out = []
    for r in rows:
        row = {**r}
        row.setdefault("launch", "")
        if r["mode"] == "disagg" and not workers_given(r) and not row["launch"]:
            sweep = inferencex_sweep(r)
            if isinstance(sweep, Sweep):
                mtp = " MTP" if sweep.mtp else ""
                row |= {"launch": f"{sweep.label}{mtp} ({sweep.source})"}
                row |= sweep.prefill.columns("prefill") | sweep.decode.columns("decode")
                row |= mtp_columns(sweep) | decode_batch_columns(sweep) | _sglang_columns(sweep)
        elif r["mode"] == "disagg" and workers_given(r) and not row["launch"]:
            row |= _launched_batch(r)
        out.append(row | _deepep_layouts(row))
    return out


def _int(row: Mapping[str, str], column: str) -> int:
    text = row[column].strip()
    return int(text) if text else 1


def _gpus(row: Mapping[str, str], pool: str) -> int:
    """One worker's GPUs of a row that gives its layout: `tp x attention DP`."""
    return _int(row, f"{pool}_tp_size") * _int(row, f"{pool}_attention_dp_size")


def _launched_batch(row: Mapping[str, str]) -> dict[str, str]:
    """A dump row's decode batch (TensorRT-LLM) or its SGLang recipe's settings as its sweep
    launched it (module docstring), else nothing."""
    if row["backend"] not in ("trtllm", "sglang"):
        return {}
    workers = (_int(row, "prefill_num_workers"), _int(row, "decode_num_workers"))
    sweep = inferencex_sweep(row, workers)
    if not isinstance(sweep, Sweep):
        return {}
    return decode_batch_columns(sweep) | _sglang_columns(sweep)


def _sglang_columns(sweep: Sweep) -> dict[str, str]:
    """The pool cells of an SGLang sweep's srt-slurm recipe
    (`llmsizer.calibrate.aic_sglang_recipes`), else nothing."""
    commit = sweep.source.rsplit("@", 1)[-1]
    found = sglang_recipe(sweep.recipe, commit) if sweep.recipe else None
    return {} if found is None else recipe_columns(found)


# the widest dense TP group in the rows: two 8-GPU H100 nodes (SGLang); a wider pool is read
# as one attention-DP worker (`aic_disagg`)
WIDEST_TP = 16


def _deepep_layouts(row: Mapping[str, str]) -> dict[str, str]:
    """SGLang's DeepEP all-to-all splits the experts whole over all of a worker's GPUs
    (`ServerArgs._handle_a2a_moe`: `ep_size = tp_size`, sglang 0.5.x `server_args.py`), so a
    pool whose cells name one (`{pool}_moe_a2a_backend`) gets that layout where its row
    records DP attention (`attention_dp_size` > 1, or a pool wider than `WIDEST_TP`);
    where it records none, the cell is dropped (the pool is priced with its gather)."""
    out: dict[str, str] = {}
    for pool in ("prefill", "decode"):
        if not row.get(f"{pool}_moe_a2a_backend", "").strip():
            continue
        tp, dp = _int(row, f"{pool}_tp_size"), _int(row, f"{pool}_attention_dp_size")
        if dp > 1:
            out |= {f"{pool}_moe_tp_size": "1", f"{pool}_moe_ep_size": str(tp * dp)}
        elif tp <= WIDEST_TP:
            out[f"{pool}_moe_a2a_backend"] = ""
    return out
