"""How InferenceX launched its GB200 DeepSeek-R1 disaggregated runs, for the AIC rows that do
not record it.

InferenceX runs GB200 NVL72 only as multi-node disaggregated deployments (Dynamo with
TensorRT-LLM or SGLang). Three kinds of AIC rows from its `source_file=2026-04-06.csv`
export lose the layout: `mode` agg rows whose `tp_size` is the GPUs of both pools together
(each repeats a disaggregated row with the same id but the mode, the same clients and
TTFT/TPOT within a few %), disaggregated rows whose `prefill_tp_size` and `decode_tp_size`
are both that total, and SGLang disaggregated rows with every pool column 1 (the config
files of the time wrote `tp: 1, ep: 1`: "tp, ep, and dp-attn do nothing because they are
hardcoded" in Dynamo's `gb200-fp8.sh`). Each is read here as launched: the sweep of the
InferenceX revision in force on the row's `measured=` date that ran its engine, precision,
lengths and client count, and (where the row gives it) its total GPUs.

`SWEEPS` transcribes them, mtp off, from
SemiAnalysisAI/InferenceX:
- `runners/launch_gb200-nv.sh` @ 450d834a (2025-11-05) and @ 175fe536 (2025-12-01): TRT-LLM
  `submit_disagg.sh mtp=off tep|dep ctx_num gen_num gen_tp ...` (each context worker one
  4-GPU node, TEP4 in `tep` runs and attention-DP in `dep` runs as the 2025-12-05 config
  writes them; `gen_num` workers of `gen_tp` GPUs); SGLang `submit_disagg.sh prefill_nodes
  prefill_workers decode_nodes decode_workers` (4 GPUs a node).
- `.github/configs/nvidia-master.yaml` @ 93e1b3ca (2025-12-05), c040b5cf (2025-12-18),
  c4cde037 (2025-12-21): the same, as `num-worker`, `PREFILL_NODES` / `DECODE_NODES`,
  `dp-attn`.
- SGLang workers are attention data parallel over all their GPUs with the experts split
  over them (DEP): Dynamo `components/backends/sglang/slurm_jobs/scripts/gb200-fp8.sh`
  launches `--tp-size $TOTAL_GPUS --dp-size $TOTAL_GPUS --enable-deepep-moe
  --ep-num-redundant-experts 32`; the FP4 8k/1k prefill workers, `dp-attn: false`, are TEP.
  The FP8 script runs `--deepep-mode low_latency` on both pools (ai-dynamo/dynamo @
  085194da), so their DEP pools get `{pool}_moe_a2a_backend` `deepep_low_latency`
  (`llmsizer.perf.moe_comm`); the FP4 sweeps read their configs from the runner's own disk
  (`CONFIG_DIR=/mnt/lustre01/artifacts/sglang-configs`, `runners/launch_gb200-nv.sh` @
  c040b5cf), which no public copy holds: their pools keep the gather.

A TensorRT-LLM row only an mtp=on sweep ran gets that sweep (labelled `MTP`), as
`llmsizer.calibrate.aic_launches` reads the other systems: the rows do not say whether MTP
ran. The lookup is `llmsizer.calibrate.aic_sweeps.find_sweep`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from llmsizer.calibrate.aic_sweeps import (
    Pool,
    Sweep,
    clients,
    find_sweep,
    measured_at,
    mtp_columns,
)

GPUS_PER_NODE = 4  # GB200 NVL72 compute tray: 4 GPUs (the scripts' NTASKS_PER_NODE=4)


def _sg(p_nodes: int, p_workers: int, d_nodes: int, d_workers: int, concs: tuple[int, ...],
        prefill_dep: bool = True) -> Sweep:  # fmt: skip
    """An SGLang sweep as the scripts write it: nodes and workers per pool."""
    return Sweep(
        concs,
        Pool(p_workers, p_nodes * GPUS_PER_NODE // p_workers, prefill_dep),
        Pool(d_workers, d_nodes * GPUS_PER_NODE // d_workers),
    )


def _trt(ctx: int, gen: int, gen_tp: int, dep: bool, concs: tuple[int, ...]) -> Sweep:
    """A TensorRT-LLM sweep: `submit_disagg.sh mtp=off tep|dep ctx gen gen_tp ... concs`.
    The clients are each listed concurrency times `gen` (the benchmark gets the number of
    generation servers; the rows' 564 = 141 x 4 and 102 = 34 x 3 clients are in no list)."""
    return Sweep(
        tuple(c * gen for c in concs), Pool(ctx, GPUS_PER_NODE, dep), Pool(gen, gen_tp, dep)
    )


_TRT_1K = (
    _trt(1, 4, 8, False, (1, 2, 4, 8, 16, 32, 64, 141)),
    _trt(1, 1, 32, True, (1075,)),
    _trt(1, 1, 16, True, (1075,)),
    _trt(2, 1, 16, True, (2048, 4300)),
    _trt(1, 1, 8, True, (4300,)),
)
_TRT_8K = (
    _trt(1, 3, 8, False, (1, 2, 4, 8, 16, 34)),
    _trt(4, 1, 32, True, (256, 538)),
    _trt(6, 1, 16, True, (1075,)),
    _trt(8, 1, 16, True, (2150,)),
    _trt(5, 1, 8, True, (2150,)),
)
# mtp=on sweeps (`submit_disagg.sh "mtp=on" ...` @ 450d834a): a row only they ran gets
# their pools, labelled MTP, and their `gen_mtp_size` (the script's 9th argument: the MTP
# draft tokens per step, `llmsizer.calibrate.aic_launch.mtp_speculation`)
_TRT_MTP_SWEEPS = {
    (1024, 1024): (
        (_trt(1, 4, 8, False, (1, 2, 4, 8, 16, 36)), 3),
        (_trt(1, 1, 16, True, (512, 1075)), 3),
        (_trt(2, 1, 16, True, (2150,)), 1),
        (_trt(1, 1, 32, True, (512,)), 3),
        (_trt(1, 1, 8, True, (2252,)), 1),
    ),
    (8192, 1024): (
        (_trt(1, 3, 8, False, (1, 2, 4, 8, 18)), 3),
        (_trt(5, 1, 32, True, (128, 269)), 3),
        (_trt(8, 1, 32, True, (538,)), 3),
        (_trt(8, 1, 16, True, (1075,)), 2),
        (_trt(6, 1, 8, True, (2150,)), 1),
    ),
}
_TRT_MTP = {
    lengths: tuple(replace(s, mtp=True, mtp_tokens=k) for s, k in sweeps)
    for lengths, sweeps in _TRT_MTP_SWEEPS.items()
}
_SG8_1K_DEC = (
    _sg(4, 2, 8, 1, (4096,)),
    _sg(1, 1, 4, 4, (2, 4, 8, 16, 64, 128)),
    _sg(6, 3, 12, 1, (1024, 2048, 4096)),
)
_SG8_8K_NOV = (_sg(12, 6, 6, 1, (128, 256, 384, 448, 512, 576, 1024, 2048, 4096)),)
_SG8_8K_MAX = _sg(10, 5, 8, 1, (512, 1024, 2048, 6144))
_SG4_1K = (
    _sg(1, 1, 2, 2, (4, 8, 32, 64)),
    _sg(4, 4, 12, 1, (512, 1024, 2048, 4096, 8192)),
    _sg(4, 4, 8, 1, (8192, 12000, 15000)),
)
_SG4_8K = (
    _sg(1, 1, 4, 4, (4, 8, 32, 64), prefill_dep=False),
    _sg(6, 6, 12, 1, (512, 1024, 2048, 4096), prefill_dep=False),
    _sg(10, 10, 8, 1, (1024, 2048, 8192)),
)

# (backend, gemm_quant_mode, isl, osl) -> [(in force from, sweeps)], oldest first
SWEEPS: dict[tuple[str, str, int, int], list[tuple[str, tuple[Sweep, ...]]]] = {
    ("trtllm", "nvfp4", 1024, 1024): [("2025-11-05", _TRT_1K)],
    ("trtllm", "nvfp4", 8192, 1024): [("2025-11-05", _TRT_8K)],
    ("sglang", "fp8", 1024, 1024): [
        (
            "2025-11-05",
            (_sg(6, 3, 12, 1, (1024, 2048, 4096, 4608, 4864, 4992, 5120, 5376, 5632, 6144, 8192)),),
        ),
        ("2025-12-01", _SG8_1K_DEC),
    ],
    ("sglang", "fp8", 8192, 1024): [
        ("2025-11-05", _SG8_8K_NOV),
        ("2025-12-18", (_sg(1, 1, 1, 1, (4, 8, 16, 32, 64, 128, 256, 512)), _SG8_8K_MAX)),
        ("2025-12-21", (_sg(1, 1, 1, 1, (4, 8, 16, 32)), _SG8_8K_MAX)),
    ],
    ("sglang", "nvfp4", 1024, 1024): [("2025-12-18", _SG4_1K)],
    ("sglang", "nvfp4", 8192, 1024): [("2025-12-18", _SG4_8K)],
}


def launched_sweep(row: Mapping[str, str], num_gpus: int | None) -> Sweep | str:
    """The sweep that ran `row` (`llmsizer.calibrate.aic_sweeps.find_sweep`), or why none
    can be named. `num_gpus`: the GPUs of both pools together where the row records it."""
    versions = SWEEPS.get((row["backend"], row["gemm_quant_mode"], int(row["isl"]),
                           int(row["osl"])))  # fmt: skip
    measured, concurrency = measured_at(row), clients(row)
    if versions is None or measured is None or concurrency is None:
        return "no InferenceX GB200 launch recorded for this engine, precision and lengths"

    def fits(s: Sweep) -> bool:
        return num_gpus in (None, s.num_gpus)

    found = find_sweep([versions], measured, concurrency, fits)
    if isinstance(found, Sweep):
        return found
    if found:
        return f"{len(found)} InferenceX GB200 sweeps ran {concurrency} clients"
    mtp = _TRT_MTP.get((int(row["isl"]), int(row["osl"])), ()) if row["backend"] == "trtllm" else ()
    found = find_sweep([[("2025-11-05", mtp)]], measured, concurrency, fits)
    if isinstance(found, Sweep):
        return found  # only an mtp=on sweep ran it
    gpus = "" if num_gpus is None else f" on {num_gpus} GPUs"
    return f"no InferenceX GB200 mtp-off sweep ran {concurrency} clients{gpus}"


def is_inferencex_gb200(row: Mapping[str, str]) -> bool:
    """A GB200 row of InferenceX's `source_file=` export (module docstring)."""
    return row["system"] == "gb200" and row["silicon_data_source"].startswith("source_file=20")


def lost_layout(row: Mapping[str, str]) -> tuple[bool, int | None]:
    """Whether an InferenceX GB200 row lost its layout (module docstring), and the GPUs of
    both pools together where it records them (None for the all-1 rows)."""
    if not is_inferencex_gb200(row):
        return False, None
    if row["mode"] == "agg":
        return True, int(row["tp_size"])
    pools = {row[f"{p}_{c}"].strip() or "1" for p in ("prefill", "decode")
             for c in ("tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")}  # fmt: skip
    if pools == {"1"}:
        return True, None
    tp = row["prefill_tp_size"].strip()
    if tp == row["decode_tp_size"].strip() and int(tp) > 2 * GPUS_PER_NODE:
        return True, int(tp)
    return False, None


def with_launched_layouts(rows: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """`rows` (file order), each InferenceX GB200 row that lost its layout given the pool
    columns of the sweep that ran it (`launched_sweep`) and read as disaggregated: a
    `launch` key names the sweep ('' for the others) or, where none can be named, starts
    with 'unknown: ' and the reason."""
    out = []
    for r in rows:
        row = {**r, "launch": ""}
        lost, num_gpus = lost_layout(r)
        if lost:
            sweep = launched_sweep(r, num_gpus)
            if isinstance(sweep, str):
                row["launch"] = f"unknown: {sweep}"
            else:
                row |= {"mode": "disagg", "launch": sweep.label + (" MTP" if sweep.mtp else "")}
                row |= sweep.prefill.columns("prefill") | sweep.decode.columns("decode")
                row |= {"prefill_batch_size": "", "decode_batch_size": ""} | mtp_columns(sweep)
                row |= _deepep_columns(r, sweep)
        out.append(row)
    return out


def _deepep_columns(row: Mapping[str, str], sweep: Sweep) -> dict[str, str]:
    """The DeepEP low-latency all-to-all of an SGLang FP8 sweep's DEP pools (module
    docstring), else nothing."""
    if row["backend"] != "sglang" or row["gemm_quant_mode"] != "fp8":
        return {}
    pools = {"prefill": sweep.prefill, "decode": sweep.decode}
    return {f"{k}_moe_a2a_backend": "deepep_low_latency" for k, p in pools.items() if p.dep}
