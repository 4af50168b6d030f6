"""Which InferenceX single-node SGLang sweep ran an agg row, and the MTP sweeps' launches.

The export marks no agg row as speculative, but InferenceX ran MTP configs beside the plain
ones (`docs/aic_measurement.md` section 33). `data/inferencex_agg_sweeps.csv`
(`bench/inferencex_agg_sweeps.py`, from every revision of `nvidia-master.yaml`) holds each
single-node SGLang config's sweeps: image, GPUs, EP, attention DP, client counts, MTP and its
draft tokens. A row's sweeps (`agg_mtp_tokens`) are the lines of its model, precision,
lengths, layout and client count that ran its image when the row names one (an image names
the launch whatever the runner: B300 rows of 2026-04-03 ran the B200 configs' images), else
its GPU's; of each config, the newest revision at or before the row's `measured=` day (all
revisions when it gives none, or when none is that early: a pull request's sweeps run before
its merge). The row speculated when every such sweep did: Qwen3.5 FP8 on image
`lmsysorg/sglang:v0.5.9-cu130` (only `qwen3.5-fp8-b200-sglang-mtp` ran it, TP4 EP1 at 4-256
clients, where the plain config ran TP4 EP4 at 16-128), and DeepSeek-R1 FP8 TP8 above 64
clients (`dsr1-fp8-b200-sglang-mtp`). A point both kinds ran stays plain (not knowable).

The MTP scripts launch differently from the plain ones (`sglang_mtp_launch`):
- `qwen3.5_fp8_b200_mtp.sh` @ 35d4bb367 (2026-03-20): EAGLE, 3 steps, top-k 1, 4 draft
  tokens; `--chunked-prefill-size` 32768, `--max-running-requests` and `--cuda-graph-max-bs`
  CONC, `--mem-fraction-static` 0.8, receive interval 30 from CONC 16, else 10;
- `dsr1_fp8_b200_mtp.sh` @ 64c20b6b5 (2026-03-11, in force through the rows): EAGLE, 2 steps,
  3 draft tokens; chunk 16384, running and graph batch 512, memory 0.82, the same interval.
Both run SGLang's first speculative path, which turns the overlap scheduler off unless
`SGLANG_ENABLE_SPEC_V2` is set in the server's environment (sglang
`python/sglang/srt/server_args.py` v0.5.6: `disable_overlap_schedule = True` under `not
envs.SGLANG_ENABLE_SPEC_V2`; SGLang docs, *Speculative Decoding V2 (Overlap Scheduler)*): the
Qwen3.5 script never sets it, the DeepSeek one assigns it as a shell variable without
`export`, which the server process does not inherit. So these rows schedule each step after
the last (`overlap_scheduler` off). Both pass `--moe-runner-backend flashinfer_trtllm`, and
SGLang 0.5.9 then runs the MTP head's experts on its `auto` backend ("Avoid using
flashinfer_trtllm for speculative MoE runner backend by default", `ServerArgs.
_handle_speculative_decoding`; the draft worker is built and run under
`speculative_moe_backend_context`, `eagle_worker.py`), which for block-FP8 experts without
DeepEP is Triton's fused MoE (`Fp8MoEMethod.create_moe_runner`): `draft_moe_backend` triton.
SGLang 0.5.9 verifies Qwen3.5's Gated DeltaNet layers with FLA's Triton recurrent kernel
(`GDNAttnBackend.forward_extend` under `is_target_verify`: `fused_recurrent_gated_delta_rule_
update`; no other verify kernel in the wheel): `linear_verify_kernel` triton (docs section 54).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from llmsizer.calibrate.aic_launch import family_of, mtp_speculation
from llmsizer.calibrate.aic_sweeps import measured_at

TABLE = Path(__file__).parent / "data" / "inferencex_agg_sweeps.csv"
PREFIXES = {  # AIC model_path -> InferenceX model prefix (the dump names R1 runs V3)
    "deepseek-ai/DeepSeek-R1": "dsr1",
    "deepseek-ai/DeepSeek-R1-0528": "dsr1",
    "deepseek-ai/DeepSeek-V3": "dsr1",
    "Qwen/Qwen3.5-397B-A17B": "qwen3.5",
    "zai-org/GLM-5": "glm5",
    "zhipuai/GLM-5": "glm5",
}
# The MTP scripts' chunk, running / graph batch floor (else CONC) and memory (docstring)
MTP_SCRIPTS = {"deepseek": (16384, 512, 0.82), "qwen3.5": (32768, 0, 0.8)}
HEAD_EXPERTS = {"draft_moe_backend": "triton"}  # the head's experts off TRT-LLM MoE (docstring)
LINEAR_VERIFY = {"linear_verify_kernel": "triton"}  # Qwen3.5's Gated DeltaNet verify (docstring)
_IMAGE = re.compile(r"(?:image=)?\b([\w.-]+/[\w.-]+:[\w.-]+)")  # `lmsysorg/sglang:v0.5.9-cu130`


@dataclass(frozen=True, slots=True)
class AggSweep:
    """One line of the table (module docstring)."""

    since: str
    config: str
    system: str
    model_prefix: str
    precision: str
    image: str
    isl: int
    osl: int
    gpus: int
    ep: int
    dp_attn: bool
    clients: tuple[int, ...]
    mtp: bool
    mtp_tokens: int | None


@dataclass(frozen=True, slots=True)
class AggPoint:
    """What an agg row says of its launch: `image` and `measured` '' when it names none."""

    system: str
    model_path: str
    precision: str
    image: str
    measured: str
    isl: int
    osl: int
    gpus: int
    ep: int
    dp_attn: bool
    clients: int


@cache
def agg_sweeps(path: Path = TABLE) -> tuple[AggSweep, ...]:
    """The table at `path`, in file order."""
    with path.open(newline="") as f:
        return tuple(_sweep(r) for r in csv.DictReader(f))


def _sweep(r: Mapping[str, str]) -> AggSweep:
    return AggSweep(
        since=r["since"], config=r["config"], system=r["system"],
        model_prefix=r["model_prefix"], precision=r["precision"], image=r["image"],
        isl=int(r["isl"]), osl=int(r["osl"]), gpus=int(r["gpus"]), ep=int(r["ep"]),
        dp_attn=r["dp_attn"] == "1", clients=tuple(int(c) for c in r["clients"].split()),
        mtp=r["mtp"] == "1", mtp_tokens=int(r["mtp_tokens"]) if r["mtp_tokens"] else None,
    )  # fmt: skip


def row_sweeps(point: AggPoint, table: tuple[AggSweep, ...] | None = None) -> list[AggSweep]:
    """The sweeps that may have run `point` (module docstring), newest revision per config."""
    prefix = PREFIXES.get(point.model_path)
    runner = point.system.split("_")[0]
    ran = [
        s
        for s in (agg_sweeps() if table is None else table)
        if (s.model_prefix, s.precision, s.isl, s.osl) == (prefix, point.precision, point.isl,
                                                           point.osl)
        and (s.gpus, s.ep, s.dp_attn) == (point.gpus, point.ep, point.dp_attn)
        and point.clients in s.clients
        and (s.image == point.image if point.image else s.system == runner)
    ]  # fmt: skip
    day_end = f"{point.measured[:10]}T23:59:59Z" if point.measured else ""
    before = [s for s in ran if s.since <= day_end] if day_end else []
    newest: dict[str, AggSweep] = {}
    for s in before or ran:
        if s.config not in newest or s.since > newest[s.config].since:
            newest[s.config] = s
    return list(newest.values())


def agg_mtp_tokens(point: AggPoint, table: tuple[AggSweep, ...] | None = None) -> int | None:
    """The draft tokens per step of the MTP sweep that ran `point`, or None when a plain
    sweep may have (module docstring); 2, SGLang's MTP recipes' value, where the script
    names none."""
    sweeps = row_sweeps(point, table)
    if not sweeps or not all(s.mtp for s in sweeps):
        return None
    return max(s.mtp_tokens or 2 for s in sweeps)


def sglang_mtp_launch(
    row: Mapping[str, str], model: str, layout: tuple[int, int, int], concurrency: int
) -> dict[str, Any]:
    """The `PredictSpec` overrides of an InferenceX SGLang agg `row` an MTP sweep ran: its
    speculation and its script's settings (module docstring); {} for a plain sweep's row.
    `layout` is the row's (tp, ep, attention dp) as launched (`aic._layout`)."""
    tp, ep, dp = layout
    found = _IMAGE.search(row["silicon_data_source"])
    point = AggPoint(
        system=row["system"], model_path=row["model_path"], precision=row["precision"],
        image=found.group(1) if found else "", measured=measured_at(row) or "",
        isl=int(row["isl"]), osl=int(row["osl"]), gpus=tp * dp, ep=ep, dp_attn=dp > 1,
        clients=concurrency,
    )  # fmt: skip
    family = family_of(model)
    tokens, script = agg_mtp_tokens(point), MTP_SCRIPTS.get(family)
    if tokens is None or script is None:
        return {}
    chunk, cap, memory = script
    verify = LINEAR_VERIFY if family == "qwen3.5" else {}  # DeepSeek has no linear attention
    return {
        "speculative": mtp_speculation("sglang", model, str(tokens)) | HEAD_EXPERTS | verify,
        "overlap_scheduler": False,  # SGLang's first speculative path (module docstring)
        "max_num_batched_tokens": chunk,
        "max_num_seqs": max(cap, concurrency),
        "max_cudagraph_capture_size": max(cap, concurrency),
        "gpu_memory_utilization": memory,
        "scheduler_recv_interval": 30 if concurrency >= 16 else 10,
    }
