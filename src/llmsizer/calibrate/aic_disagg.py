"""AIConfigurator's disaggregated silicon rows (`mode` disagg) as fleets to simulate.

`map_disagg_row` turns a row into an `AicDisaggCase` (one prefill worker's deployment with
the row's load, one decode worker's deployment, the worker counts and the KV link) or an
`AicSkipped` with its reason; `predict_disagg` simulates it on the disaggregated pools
(`llmsizer.fleet.simulate_disaggregated`) and returns the mean TTFT and TPOT. The rules
follow the aggregated mapping (`llmsizer.calibrate.aic`, `docs/aic_measurement.md`):

- **Deployment.** Model, GPU and the engine preset named by `backend` as there; each pool
  its own `prefill_tp_size` / `decode_tp_size`, `max_num_seqs` = its `*_batch_size` (the
  most requests a worker runs at once, as srt-slurm recipes set it; the preset's default
  where the cell is empty). FP8 and NVFP4 weights
  get an FP8 KV cache; the weight precision is `gemm_quant_mode` (else `precision`).
- **Load.** The InferenceX multi-node client (srt-slurm sa-bench): a closed loop of
  `silicon_concurrency` clients (from `silicon_data_source`, else decode batch per
  attention-DP rank x ranks x decode workers), 10 c requests, lengths uniform in
  [int(0.8 L), L]; all c start at t = 0.
- **Link.** All workers inside the system's NVLink domain (an 8-GPU node, an NVL72 rack):
  `nvlink`; otherwise `network` (the system's InfiniBand NICs). Routers: least outstanding
  requests in both pools (Dynamo's default load balancing).
- **Expert parallelism.** Each pool's layout is read from its own columns
  (`layout_columns`, the helper the aggregated mapping reads `tp_size` ... with):
  `{pool}_moe_ep_size` is the pool's `expert_parallel_size`, its experts split whole over
  that many of the `{pool}_tp_size` ranks and each over `{pool}_moe_tp_size` of them
  (`moe_tp x moe_ep = tp`; a row where it does not hold is refused). The aggregated
  mapping's reading of layouts written as products (`aic._layout`) does not apply: it
  rests on single-node runs, and a disaggregated worker may span nodes (srt-slurm launches
  16-GPU H100 workers over two).
- **Attention data parallelism.** `{pool}_attention_dp_size` D is the spec's
  `attention_dp_size`: D ranks of `{pool}_tp_size` GPUs for attention, the experts over
  all `tp x D` = `moe_tp x moe_ep` GPUs (TensorRT-LLM `enable_attention_dp`, SGLang
  `--enable-dp-attention`; `llmsizer.calibrate.aic` reads the aggregated rows so).
- **Wide pools.** The exported (`source_file=`) rows leave the worker counts and batch
  sizes empty and write the GPUs of one worker as `{pool}_tp_size`, with the prefill pool's
  expert parallelism. Where the same run is in the `db-dump` export too (same system,
  engine, lengths and clients, TTFT and TPOT within a few %), the dump names a
  data-parallel attention worker for every such pool wider than a node: an exported
  `decode_tp_size` 32 is one DEP32 worker (`attention_dp_size` 32, `moe_ep_size` 32), 16 is
  DEP16. A pool wider than `WIDEST_TP` GPUs is therefore read as one worker of that many
  attention-DP ranks with the experts split over all of them (pricing it as one
  tensor-parallel group of 20-72 GPUs, an all-reduce over every GPU twice a layer, would
  be a different deployment).
- **GB200 runs without a layout.** InferenceX GB200 rows whose prefill and decode `tp_size`
  are the same wide number (the GPUs of both pools together), whose pool columns are all
  1, or that are recorded as `agg` with both pools' GPUs as `tp_size`, are read as the
  InferenceX sweep that launched them (`llmsizer.calibrate.aic_launch_gb200`); a row no
  single sweep names is refused with the reason.
- **Memory fraction.** The preset's 0.9, but SGLang DeepSeek FP8 pools of 4 GPUs get
  `--mem-fraction-static` 0.95, as InferenceX launches DeepSeek FP8 on 4 GPUs with SGLang
  (`dsr1_fp8_b200.sh` at TP4, `llmsizer.calibrate.aic_launch`). Their weights are 182.6 GB
  per GPU under attention data parallelism (every rank holds attention, dense layers and
  embeddings) of a GB200's 198.7 GB: 0.9 (or SGLang 0.5.5's own default, about 0.81 here,
  `ServerArgs._handle_gpu_memory_settings`) leaves no KV cache, yet these runs ran, so
  their launches set a fraction we cannot read; 0.95, InferenceX's where FP8 DeepSeek fits.
- **Expert layout not set.** `{pool}_moe_tp_size` and `{pool}_moe_ep_size` both 0 (two
  vLLM gap-analysis rows, ids `..._tpnone_epnone_...`: the launch named neither) is the
  engine's default: no expert parallelism, the experts tensor parallel over the pool's
  `tp x attention_dp` GPUs (vLLM without `--enable-expert-parallel`).
- **Skipped.** Pipeline parallelism, GPUs, systems and models outside the catalog,
  deployments the model rejects, and the rows above. Precision as `llmsizer.calibrate.aic`.
- **Worker counts.** Where `{pool}_num_workers` is empty (the `source_file=` rows), the
  pool columns of the row's twin in the dump are used (`llmsizer.calibrate.aic_twins`: the
  same run in the other export); a row without a twin gets those of the InferenceX sweep
  that launched it (`llmsizer.calibrate.aic_launches`: the Dynamo config in force when it
  was measured that ran its clients on workers of its GPUs); a row neither names is
  simulated with one worker of each pool (`workers_given` False): the dump's runs have
  1-15 prefill and 1-5 decode workers, so such a row is priced on a fleet smaller than,
  or equal to, the measured one.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from llmsizer.calibrate.aic import (
    AIC_GPUS,
    LENGTH_RATIO,
    PROMPTS_PER_CLIENT,
    AicSkipped,
    layout_columns,
    weight_precision,
)
from llmsizer.calibrate.aic_launch import mtp_speculation
from llmsizer.calibrate.aic_launch_gb200 import is_inferencex_gb200, with_launched_layouts
from llmsizer.calibrate.aic_launches import WIDEST_TP, with_inferencex_launches
from llmsizer.calibrate.aic_twins import with_twin_layouts, workers_given
from llmsizer.calibrate.engine_kernels import linear_kernel
from llmsizer.instance import DeploymentSpec, PredictSpec, make_instance
from llmsizer.instance.disagg import Link, make_disaggregated
from llmsizer.perf import EfficiencyFactors
from llmsizer.records import RequestRecord
from llmsizer.specs import get_model, get_system
from llmsizer.specs.dtypes import Precision, quant_mode_precision
from llmsizer.workload import make_workload

AIC_SYSTEMS = {  # AIC `system` -> catalog system (the NVLink domain and NICs around it)
    "h100_sxm": "dgx-h100",
    "b200_sxm": "dgx-b200",
    "b300_sxm": "hgx-b300",
    "gb200": "gb200-nvl72",
    "gb300": "gb300-nvl72",
}
_FP8_KV = (Precision.FP8, Precision.FP8_BLOCK, Precision.FP4)
SGLANG_DEEPSEEK_FP8_4GPU_FRACTION = 0.95  # InferenceX dsr1_fp8_b200.sh at TP4 (docstring)
_CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")


@dataclass(frozen=True, slots=True)
class AicDisaggCase:
    """A disaggregated row: `prefill` is one prefill worker with the row's load, `decode`
    one decode worker; the worker counts, the link, the measured means."""

    row_id: str
    backend: str
    system: str
    model: str
    prefill: PredictSpec
    decode: DeploymentSpec
    num_prefill: int
    num_decode: int
    link: Link
    measured: dict[str, float]
    workers_given: bool = True  # False: the worker counts were empty, one of each simulated
    twin: str = ""  # the dump row whose pool columns an exported row took (`aic_twins`)
    launch: str = ""  # the InferenceX sweep that ran a row without a layout or worker counts


class _Skip(Exception):
    """Raised while mapping a row: the message is the reason it is skipped."""


def load_aic_disagg(path: Path, *, check_fit: bool = True) -> list[AicDisaggCase | AicSkipped]:
    """Every disaggregated row of the CSV at `path`, and every InferenceX GB200 agg row
    (disaggregated runs: `aic_launch_gb200`), mapped, in file order; `check_fit` as in
    `map_disagg_row`."""
    with path.open(newline="") as f:
        rows = [
            r
            for r in csv.DictReader(f)
            if r["mode"] == "disagg" or (r["mode"] == "agg" and is_inferencex_gb200(r))
        ]
    rows = with_inferencex_launches(with_twin_layouts(with_launched_layouts(rows)))
    return [map_disagg_row(r, check_fit=check_fit) for r in rows]


def map_disagg_row(row: Mapping[str, str], *, check_fit: bool = True) -> AicDisaggCase | AicSkipped:
    """One row as a case, or the reason it is skipped (module docstring). `check_fit`
    builds both pools' instances (no simulation) to reject deployments the model cannot
    hold, so a refusal is known without simulating the row."""
    try:
        case = _map(row)
        if check_fit:
            _check_fit(case)
        return case
    except _Skip as reason:
        return AicSkipped(row["id"], row["backend"], str(reason))


def _int(row: Mapping[str, str], column: str, default: int = 1) -> int:
    text = row[column].strip()
    return int(text) if text else default


def _pool_layout(row: Mapping[str, str], pool: str) -> dict[str, int]:
    """A pool's `tp`, `attention_dp_size` and `expert_parallel_size` as its columns say, a
    pool wider than `WIDEST_TP` read as one data-parallel attention worker (module
    docstring), or the reason it is skipped."""
    tp, dp, moe_tp, ep = layout_columns(row, f"{pool}_")
    if moe_tp == ep == 0:  # not set (the ids say `tpnone_epnone`): the engine's default
        moe_tp, ep = tp * dp, 1
    if _int(row, f"{pool}_pp_size") > 1:
        raise _Skip(f"pipeline parallelism ({pool}_pp_size {row[f'{pool}_pp_size']}) not modelled")
    if tp > WIDEST_TP:
        other = "decode" if pool == "prefill" else "prefill"
        if _int(row, f"{other}_tp_size") == tp:
            raise _Skip(
                f"layout not recorded (prefill_tp_size = decode_tp_size = {tp}: the GPUs of "
                "both pools together, module docstring)"
            )
        return {"tp": 1, "attention_dp_size": tp, "expert_parallel_size": tp}
    if ep > 1 and moe_tp * ep != tp * dp:
        raise _Skip(
            f"{pool} layout inconsistent: moe_tp_size {moe_tp} x moe_ep_size {ep} != "
            f"tp_size {tp} x attention_dp_size {dp}"
        )
    return {"tp": tp, "attention_dp_size": dp, "expert_parallel_size": ep}


def _map(row: Mapping[str, str]) -> AicDisaggCase:
    launch = row.get("launch", "")
    if launch.startswith("unknown: "):
        raise _Skip(f"layout not recorded and not named by a launch script: {launch[9:]}")
    layouts = {pool: _pool_layout(row, pool) for pool in ("prefill", "decode")}
    gpu, system_key = AIC_GPUS.get(row["system"]), AIC_SYSTEMS.get(row["system"])
    if gpu is None or system_key is None:
        raise _Skip(f"GPU {row['system']} not in the catalog")
    try:
        model = get_model(row["model_path"]).name
    except (ValueError, OSError) as e:
        raise _Skip(f"model {row['model_path']} not in the catalog") from e
    precision, version = _precision(row), row.get("backend_version", "")
    found = _CONCURRENCY.search(row["silicon_data_source"])
    num_decode = _int(row, "decode_num_workers")
    if found is None and not row["decode_batch_size"].strip():
        raise _Skip("concurrency not given (no silicon_concurrency, no decode_batch_size)")
    per_worker = _int(row, "decode_batch_size") * layouts["decode"]["attention_dp_size"]
    concurrency = int(found.group(1)) if found else per_worker * num_decode
    base: dict[str, Any] = {
        "model": model,
        "gpu": gpu,
        "precision": precision.value,
        "kv_cache_dtype": "fp8" if precision in _FP8_KV else None,
        "engine": row["backend"],
        "linear_kernel": linear_kernel(row["backend"], gpu, precision.value, version),
    }
    isl, osl = int(row["isl"]), int(row["osl"])
    try:
        prefill = PredictSpec.model_validate(
            {
                **base,
                **layouts["prefill"],
                **_memory_fraction(row, model, layouts["prefill"], "prefill"),
                **_batch(row, "prefill_batch_size"),
                **_recipe_engine(row, "prefill"),
                "isl": isl,
                "osl": osl,
                "concurrency": concurrency,
                "num_requests": PROMPTS_PER_CLIENT * concurrency,
                "length_ratio": LENGTH_RATIO,
            }
        )
        decode = DeploymentSpec.model_validate(
            {
                **base,
                **layouts["decode"],
                **_memory_fraction(row, model, layouts["decode"], "decode"),
                **_batch(row, "decode_batch_size"),
                **_recipe_engine(row, "decode"),
                **_mtp(row, model),
            }
        )
    except ValidationError as e:  # a layout the spec refuses (a 0 cell, ...)
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise _Skip(f"rejected by the model: {where} {first['input']!r}: {first['msg']}") from e
    num_prefill = _int(row, "prefill_num_workers")
    gpus = num_prefill * prefill.gpus_per_instance + num_decode * decode.gpus_per_instance
    link: Link = "nvlink" if gpus <= get_system(system_key).nvlink_domain_size else "network"
    measured = {
        "mean_ttft_ms": float(row["silicon_ttft_ms"]),
        "mean_tpot_ms": float(row["silicon_tpot_ms"]),
    }
    return AicDisaggCase(
        row["id"],
        row["backend"],
        row["system"],
        model,
        prefill,
        decode,
        num_prefill,
        num_decode,
        link,
        measured,
        workers_given(row),
        row.get("twin", ""),
        launch,
    )


def _check_fit(case: AicDisaggCase) -> None:
    """Raise `_Skip` when the model rejects a pool (weights that do not fit, ...)."""
    for pool, spec in (("prefill", case.prefill), ("decode", case.decode)):
        try:
            make_instance(spec, max_model_len=case.prefill.isl + case.prefill.osl)
        except ValueError as e:
            first = str(e).split(": per GPU")[0].split(". ")[0]  # the sentence, not the sums
            raise _Skip(f"rejected by the model: {pool}: {first}") from e


def _memory_fraction(
    row: Mapping[str, str], model: str, layout: dict[str, int], pool: str
) -> dict[str, float]:
    """`gpu_memory_utilization`: the pool's `mem-fraction-static` where its SGLang recipe
    sets it (`llmsizer.calibrate.aic_sglang_recipes`), else 0.95 for an SGLang DeepSeek FP8
    pool of 4 GPUs (module docstring), else nothing (the preset's 0.9)."""
    recipe = row.get(f"{pool}_mem_fraction_static", "").strip()
    if recipe:
        return {"gpu_memory_utilization": float(recipe)}
    gpus = layout["tp"] * layout["attention_dp_size"]
    fp8 = row["gemm_quant_mode"].strip() == "fp8"
    if row["backend"] == "sglang" and model.startswith("deepseek") and fp8 and gpus == 4:
        return {"gpu_memory_utilization": SGLANG_DEEPSEEK_FP8_4GPU_FRACTION}
    return {}


def _mtp(row: Mapping[str, str], model: str) -> dict[str, Any]:
    """The decode pool's MTP speculative decoding where an MTP sweep ran the row
    (`llmsizer.calibrate.aic_launches`). SGLang speculates one step ahead only with
    `SGLANG_ENABLE_SPEC_V2` (`llmsizer.sim.config`), which the DeepSeek-R1 MTP recipes set
    (InferenceX `srt-slurm-recipes/sglang/dsr1/*/mtp/*.yaml` @ 843c6254f)."""
    if row.get("mtp") != "1":
        return {}
    spec = mtp_speculation(row["backend"], model, row.get("mtp_tokens", ""))
    ahead = {"overlap_scheduler": True} if row["backend"] == "sglang" else {}
    return {"speculative": spec, **ahead}


def _recipe_engine(row: Mapping[str, str], pool: str) -> dict[str, Any]:
    """A pool's settings from its SGLang recipe's cells (`aic_sglang_recipes`), per
    attention-DP rank: the prefill pool's `chunked-prefill-size` as `max_num_batched_tokens`,
    the decode pool's `cuda-graph-max-bs` as `max_cudagraph_capture_size`, each pool's DeepEP
    all-to-all as `moe_a2a_backend`; nothing where the cells are empty."""
    cells = {"prefill": ("prefill_chunked_prefill_size", "max_num_batched_tokens"),
             "decode": ("decode_cuda_graph_max_bs", "max_cudagraph_capture_size")}  # fmt: skip
    column, key = cells[pool]
    text, a2a = row.get(column, "").strip(), row.get(f"{pool}_moe_a2a_backend", "").strip()
    if pool == "decode" and row["backend"] == "trtllm":
        return _trtllm_decode_graphs(row)
    return ({key: int(text)} if text else {}) | ({"moe_a2a_backend": a2a} if a2a else {})


def _trtllm_decode_graphs(row: Mapping[str, str]) -> dict[str, Any]:
    """A TensorRT-LLM decode pool's CUDA graphs: padded, up to its batch per rank. Every
    srt-slurm TensorRT-LLM recipe's decode worker sets `cuda_graph_config: {enable_padding:
    true, batch_sizes: [...]}` whose largest size is its `max_batch_size` (NVIDIA/srt-slurm
    `recipes/trtllm/*/*/*/*.yaml` at c88ef731, e.g. `b200-fp4/1k1k/mtp/
    ctx3_gen4_dep8_batch128_eplb0_mtp1.yaml`: 1, 2, 4, ..., 64, 122, 124, 126, 128; the
    preset's 128 unpadded ran more eager). Batch: the recipe's, or AIC's clients per rank."""
    text = row["decode_batch_size"].strip()
    if not text:
        return {}
    return {"cudagraph_padding": True, "max_cudagraph_capture_size": int(text)}


def _batch(row: Mapping[str, str], column: str) -> dict[str, int]:
    """`max_num_seqs` from a pool's batch-size column; the preset's when the cell is empty."""
    text = row[column].strip()
    return {"max_num_seqs": int(text)} if text else {}


def _precision(row: Mapping[str, str]) -> Precision:
    try:
        gemm = quant_mode_precision(row["gemm_quant_mode"])
    except ValueError as e:
        raise _Skip(str(e)) from e
    return weight_precision(gemm, row)  # as the aggregated rows read it


def predict_disagg(
    case: AicDisaggCase, efficiency: EfficiencyFactors | None = None
) -> dict[str, float]:
    """Simulate `case` on its two pools: `mean_ttft_ms`, `mean_tpot_ms` (the client's run
    means, as `llmsizer.metrics.summarize` takes them) and `completed`. `efficiency` prices
    both pools instead of the shipped factors (a cross-validation fold's). Raises ValueError
    when the model rejects a pool (weights that do not fit, ...)."""
    spec = case.prefill
    fleet = make_disaggregated(
        spec,
        case.decode,
        num_prefill=case.num_prefill,
        num_decode=case.num_decode,
        link=case.link,
        system=get_system(AIC_SYSTEMS[case.system]),
        max_model_len=spec.isl + spec.osl,
        efficiency=None if efficiency is None else (efficiency, efficiency),
    )
    workload = make_workload(spec.workload_spec(spec.num_requests or 1))
    return run_means(fleet.run(workload).records)


def run_means(records: Sequence[RequestRecord]) -> dict[str, float]:
    """Mean TTFT and TPOT (ms) of the successful records and how many there were: the two
    means of `summarize` without its percentiles, which cost more than a large fleet's
    simulation."""
    ok = [r for r in records if r.ok]
    if not ok:
        raise ValueError("no request of the run completed")
    ttft = np.fromiter((r.token_times_s[0] - r.arrival_s for r in ok), np.float64, len(ok))
    multi = [r for r in ok if r.num_output_tokens > 1]
    tpot = np.fromiter(
        ((r.token_times_s[-1] - r.token_times_s[0]) / (r.num_output_tokens - 1) for r in multi),
        np.float64,
        len(multi),
    )
    return {
        "mean_ttft_ms": 1e3 * float(ttft.mean()),
        "mean_tpot_ms": 1e3 * float(tpot.mean()) if len(tpot) else float("nan"),
        "completed": float(len(ok)),
    }
