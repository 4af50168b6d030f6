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
  `silicon_concurrency` clients (from `silicon_data_source`, else decode batch x decode
  workers), 10 c requests, lengths uniform in [int(0.8 L), L]; all c start at t = 0.
- **Link.** All workers inside the system's NVLink domain (an 8-GPU node, an NVL72 rack):
  `nvlink`; otherwise `network` (the system's InfiniBand NICs). Routers: least outstanding
  requests in both pools (Dynamo's default load balancing).
- **Skipped.** Expert parallelism or attention data parallelism in either pool, pipeline
  parallelism, GPUs, systems and models outside the catalog, deployments the model rejects,
  and pools wider than `WIDEST_TP` GPUs. Those are GB200 NVL72 rows of 20-72 GPUs per pool
  whose ids name them `tpN_ep` (InferenceX's wide expert parallelism with data-parallel
  attention) while the CSV's columns say pure TP (`moe_ep_size` 1): pricing them as one
  tensor-parallel group of 20-72 GPUs (an all-reduce over every GPU twice a layer, the
  attention heads split 72 ways) would be a different deployment. `DeploymentSpec` has no
  attention data parallelism, so they are refused, not mispriced.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsizer.calibrate.aic import AIC_GPUS, LENGTH_RATIO, PROMPTS_PER_CLIENT, AicSkipped
from llmsizer.instance import DeploymentSpec, PredictSpec
from llmsizer.instance.disagg import Link, make_disaggregated
from llmsizer.metrics import summarize
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
WIDEST_TP = 16  # the widest dense TP group in the rows: two 8-GPU H100 nodes (SGLang)
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


class _Skip(Exception):
    """Raised while mapping a row: the message is the reason it is skipped."""


def load_aic_disagg(path: Path) -> list[AicDisaggCase | AicSkipped]:
    """Every disaggregated row of the CSV at `path`, mapped, in file order."""
    with path.open(newline="") as f:
        return [map_disagg_row(r) for r in csv.DictReader(f) if r["mode"] == "disagg"]


def map_disagg_row(row: Mapping[str, str]) -> AicDisaggCase | AicSkipped:
    try:
        return _map(row)
    except _Skip as reason:
        return AicSkipped(row["id"], row["backend"], str(reason))


def _int(row: Mapping[str, str], column: str, default: int = 1) -> int:
    text = row[column].strip()
    return int(text) if text else default


def _map(row: Mapping[str, str]) -> AicDisaggCase:
    for pool in ("prefill", "decode"):
        for column, what in (
            ("moe_ep_size", "expert parallelism"),
            ("attention_dp_size", "attention data parallelism"),
            ("pp_size", "pipeline parallelism"),
        ):
            if _int(row, f"{pool}_{column}") > 1:
                raise _Skip(f"{what} ({pool}_{column} {row[f'{pool}_{column}']}) not modelled yet")
        tp = _int(row, f"{pool}_tp_size")
        if tp > WIDEST_TP:
            raise _Skip(
                f"wide-EP / attention-DP layout ({pool}_tp_size {tp} > {WIDEST_TP}: "
                "module docstring) not modelled"
            )
    gpu, system_key = AIC_GPUS.get(row["system"]), AIC_SYSTEMS.get(row["system"])
    if gpu is None or system_key is None:
        raise _Skip(f"GPU {row['system']} not in the catalog")
    try:
        model = get_model(row["model_path"]).name
    except (ValueError, OSError) as e:
        raise _Skip(f"model {row['model_path']} not in the catalog") from e
    precision = _precision(row)
    found = _CONCURRENCY.search(row["silicon_data_source"])
    num_decode = _int(row, "decode_num_workers")
    if found is None and not row["decode_batch_size"].strip():
        raise _Skip("concurrency not given (no silicon_concurrency, no decode_batch_size)")
    concurrency = int(found.group(1)) if found else _int(row, "decode_batch_size") * num_decode
    base: dict[str, Any] = {
        "model": model,
        "gpu": gpu,
        "precision": precision.value,
        "kv_cache_dtype": "fp8" if precision in _FP8_KV else None,
        "engine": row["backend"],
    }
    isl, osl = int(row["isl"]), int(row["osl"])
    prefill = PredictSpec.model_validate(
        {
            **base,
            "tp": _int(row, "prefill_tp_size"),
            **_batch(row, "prefill_batch_size"),
            "isl": isl,
            "osl": osl,
            "concurrency": concurrency,
            "num_requests": PROMPTS_PER_CLIENT * concurrency,
            "length_ratio": LENGTH_RATIO,
        }
    )
    decode = DeploymentSpec.model_validate(
        {**base, "tp": _int(row, "decode_tp_size"), **_batch(row, "decode_batch_size")}
    )
    num_prefill = _int(row, "prefill_num_workers")
    gpus = num_prefill * prefill.tensor_parallel_size + num_decode * decode.tensor_parallel_size
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
    )


def _batch(row: Mapping[str, str], column: str) -> dict[str, int]:
    """`max_num_seqs` from a pool's batch-size column; the preset's when the cell is empty."""
    text = row[column].strip()
    return {"max_num_seqs": int(text)} if text else {}


def _precision(row: Mapping[str, str]) -> Precision:
    try:
        gemm = quant_mode_precision(row["gemm_quant_mode"])
    except ValueError as e:
        raise _Skip(str(e)) from e
    if gemm is not None:
        return gemm
    column = row["precision"].strip()
    return Precision.parse(column) if column else Precision.BF16


def predict_disagg(case: AicDisaggCase) -> dict[str, float]:
    """Simulate `case` on its two pools: the summary (`mean_ttft_ms`, `mean_tpot_ms`, ...).
    Raises ValueError when the model rejects a pool (weights that do not fit, ...)."""
    spec = case.prefill
    fleet = make_disaggregated(
        spec,
        case.decode,
        num_prefill=case.num_prefill,
        num_decode=case.num_decode,
        link=case.link,
        system=get_system(AIC_SYSTEMS[case.system]),
        max_model_len=spec.isl + spec.osl,
    )
    workload = make_workload(spec.workload_spec(spec.num_requests or 1))
    res = fleet.run(workload)
    return summarize(res.records, num_gpus=fleet.num_gpus)
