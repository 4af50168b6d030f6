"""AIConfigurator's silicon measurements (`../shared/calibration/aic_silicon_calibration.csv`)
as cases to predict.

`load_aic` maps every row to an `AicCase` (a `PredictSpec` and the measured mean TTFT and
TPOT) or an `AicSkipped` with a one-line reason. How the rows were measured is in
`docs/aic_measurement.md`; the rules (`map_aic_row`):

- **Deployment.** `model_path` through `get_model`; `system` through `AIC_GPUS`;
  `tp_size` / `pp_size`; the engine preset named by `backend` with the scheduler settings
  the row was launched with (`llmsizer.calibrate.aic_launch`).
- **Precision.** One weight precision per model today: `gemm_quant_mode`
  (`quant_mode_precision`); `fp8` on a checkpoint with block scales is `fp8_block`
  (`BLOCK_FP8_CHECKPOINTS`: DeepSeek-R1 / V3 as published, what each engine loads as
  block-scaled). Where `moe_quant_mode` differs (fp8 GEMMs with fp8_block
  experts, DeepSeek) the experts are priced as the GEMM precision and the case's `note` says
  so; the two formats differ by 0.03 % in bytes and use the same FP8 math. An empty mode means
  the checkpoint's dtype: the `precision` column, else bf16 (Llama-3.1-8B-Instruct's
  checkpoint). FP8 and NVFP4 weights get an FP8 KV cache, as the InferenceX scripts launch them.
- **Load.** A closed loop of the row's `silicon_concurrency` clients (in its source), else
  `batch_size x attention_dp_size` (batch_size is per attention-DP rank). InferenceX rows:
  `10 c` requests (the B200 docker runner's DeepSeek FP8 runs before the client's warm-up:
  50 c, 20 c at OSL 8192, `aic_clients.prompts_per_client`) with lengths uniform in
  [int(0.8 L), L] (`--random-range-ratio 0.8`,
  `length_ratio` on the spec). AIC's own gap-analysis rows (aiperf): fixed lengths, `20 c`
  requests. The simulation starts on an idle engine with all `c` requests at t = 0, as the
  timed run does: the client's warm-up (`2 c` requests, since 2026-01-21) drains before it,
  so nothing is dropped.
- **Copies and MTP sweeps.** A gap-analysis row that copies an InferenceX run is read as that
  run (`aic_twins.with_inferencex_twins`); an SGLang row InferenceX's MTP sweep ran
  speculates as its script launched it (`aic_agg_sweeps`; TensorRT-LLM's: `aic_launch`).
- **Not fitted on.** A row whose prompts the server saw at another length than the row's
  (InferenceX's client and SGLang's server tokenizing apart: `aic_clients`), or whose prompt
  count is not known (`aic_clients.prompt_count_unknown`), is predicted and reported, and the
  fits train without it (`AicCase.unfitted`). The first is priced at the prompt length the
  server saw (`aic_clients.server_prompt_ratio` times the row's; reports keep the row's,
  `AicCase.isl`).
- **Expert parallelism.** `moe_ep_size` is the spec's `expert_parallel_size` (experts split
  whole over that many of the GPUs the MoE layers run on, each over `moe_tp_size` of them),
  where the launch turned it on (`launched_expert_parallel`): InferenceX's vLLM Kimi-K2.5
  scripts never pass `--enable-expert-parallel` while the rows were measured, whatever the
  config's `ep` (60 rows say EP 4), so vLLM split those experts over the TP group.
- **Attention data parallelism.** AIC writes it as vLLM launches it: `attention_dp_size` D
  ranks of `tp_size` GPUs each (attention TP), the MoE layers over all `tp_size x D` =
  `moe_tp_size x moe_ep_size` GPUs. That is the spec's `attention_dp_size` with
  `tensor_parallel_size` = `tp_size` (TensorRT-LLM `enable_attention_dp` rows: `tp_size` 1,
  D = the GPUs). Not vLLM's InferenceX rows written `tp_size` T, `attention_dp_size` D,
  `moe_ep_size` T x D inside a node (MiniMax-M2.5's 36 `tp 2, dp 2, ep 4` rows): no script
  launched that (`minimaxm2.5_fp8_b{2,3}00.sh` have no data parallelism; the NVFP4 one's
  is `--tensor-parallel-size=1 --data-parallel-size=$TP`), and they repeat, to 0.5 %, the
  `..._tp2_ep2_...` rows of the config `{ tp: 2, ep: 2 }`: read as TP T with EP T (`_layout`).
- **Layouts written as products** (`_layout`). In 254 agg rows of InferenceX's expert-parallel
  runs on 8-GPU HGX nodes, `tp_size x attention_dp_size` equals `moe_tp_size x moe_ep_size`
  and exceeds the node: 16 or 64 GPUs on one B200 / B300 / H100 node. The rows' ids name
  the launch, `..._tp4_ep4_...` for every 16 and `..._tp8_ep8_...` for every 64, so AIC's
  import wrote TP x EP where it meant TP. Such a row is read as launched: TP `moe_tp_size`
  with EP `moe_ep_size` (SGLang, TensorRT-LLM), or TP `tp_size` with EP over all of it
  (vLLM's `enable_expert_parallel`, where AIC wrote `moe_tp_size` 1); TensorRT-LLM rows with
  `tp_size` 1 ran attention data-parallel over the node: `..._tp8_ep8_...` with `tp_size` 1,
  `attention_dp_size` 64, `moe_tp_size` 8, `moe_ep_size` 8 is TP 1, D 8, EP 8 on 8 GPUs. The
  clients stay `batch_size x attention_dp_size` (the rows' `silicon_concurrency`). The export
  writes every InferenceX SGLang / TensorRT-LLM launch with EP > 1 so (`moe_tp_size` the
  script's TP, `moe_ep_size` its EP), inside the node too: config 736, SGLang Qwen3.5 NVFP4
  on B300, `tp_size` 4 with 2 x 2, is `qwen3.5-fp4-b300-sglang`'s `{ tp: 2, ep: 2 }`
  (`.github/configs/nvidia-master.yaml` @ e8924a6a; its other search space, `{ tp: 4, ep: 1 }`,
  is config 737), launched `--tensor-parallel-size=2 --ep-size 2` on 2 GPUs
  (`qwen3.5_fp4_b300.sh` @ 8acbd08b7). So an InferenceX row whose product is a valid launch
  (EP dividing TP, as SGLang requires) is read back inside the node as well.
- **GB200 rows from InferenceX are disaggregated runs.** InferenceX runs GB200 NVL72 only as
  multi-node disaggregated deployments (Dynamo with TensorRT-LLM or SGLang: `runner: gb200`,
  `multinode: true`, `disagg: true` in `.github/configs/nvidia-master.yaml`). The 55 agg rows
  of `source_file=2026-04-06.csv` on GB200 each repeat a disagg row with the same id but
  for the mode (`..._c1075_tp20_ep1_15` and `..._disagg_..._c1075_tp20_ep1_1073`), the same
  concurrency and TTFT/TPOT within a few %, and their `tp_size` (12-72) is the GPUs of
  both pools together. They are skipped here and predicted by `llmsizer.calibrate.aic_disagg`
  as the disaggregated runs they are, with the layout of the InferenceX sweep that ran them
  (`llmsizer.calibrate.aic_launch_gb200`).
- **Skipped.** Disaggregated rows; those GB200 rows; GPUs and models outside the catalog;
  deployments the model rejects (weights that do not fit, heads not divisible by TP).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmsizer.calibrate.aic_agg_sweeps import sglang_mtp_launch
from llmsizer.calibrate.aic_clients import (
    first_use_builds,
    prompt_count_unknown,
    prompt_length_unknown,
    prompts_per_client,
    server_prompt_ratio,
)
from llmsizer.calibrate.aic_launch import family_of, launch_settings
from llmsizer.calibrate.aic_script_layout import (
    early_trtllm_deepseek,
    script_graph_settings,
    script_layout,
)
from llmsizer.calibrate.aic_sweeps import measured_at
from llmsizer.calibrate.aic_twins import is_gap, with_inferencex_twins
from llmsizer.calibrate.engine_kernels import (
    apply_version_launch,
    linear_kernel,
    separate_gdn_projections,
)
from llmsizer.instance import PredictSpec, make_instance
from llmsizer.specs import get_gpu, get_model
from llmsizer.specs.dtypes import Precision, quant_mode_precision

AIC_GPUS = {  # AIC `system` -> catalog GPU
    "h100_sxm": "h100-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
}
LENGTH_RATIO = 0.8  # InferenceX RANDOM_RANGE_RATIO (.github/workflows/benchmark-tmpl.yml)
PROMPTS_PER_CLIENT = 10  # InferenceX --num-prompts $((CONC*10))
GAP_PROMPTS_PER_CLIENT = 20  # AIC bench_run.sh.j2: aiperf --num-requests c*20 (HEAD default)
_FP8_KV = (Precision.FP8, Precision.FP8_BLOCK, Precision.FP4)
# checkpoints whose FP8 weights carry 128 x 128 block scales (config.json
# `quantization_config.weight_block_size: [128, 128]`): their `fp8` GEMMs are fp8_block
BLOCK_FP8_CHECKPOINTS = ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3")
VLLM_SCRIPTS_WITHOUT_EP = ("kimi",)  # `launched_expert_parallel`: no --enable-expert-parallel
_CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")


@dataclass(frozen=True, slots=True)
class AicCase:
    """A row as a case: its spec, measured means (`mean_ttft_ms`, `mean_tpot_ms`), what it
    is grouped by in reports, a note on anything the mapping approximated, and why the fits
    train without it (`unfitted`; None: they train on it; it is predicted either way);
    `first_use_builds`: the one-off builds its timed first wave waited for (`aic_clients`:
    priced by `EfficiencyFactors.first_use_build_s`); `nominal_isl`: the row's prompt
    tokens where the spec prices the server's (`aic_clients.server_prompt_ratio`)."""

    row_id: str
    backend: str
    system: str
    model: str
    spec: PredictSpec
    measured: dict[str, float]
    note: str = ""
    unfitted: str | None = None
    first_use_builds: int = 0
    nominal_isl: int | None = None

    @property
    def isl(self) -> int:
        """The row's prompt tokens, as reports show them (the spec's unless `nominal_isl`)."""
        return self.nominal_isl or self.spec.isl


@dataclass(frozen=True, slots=True)
class AicSkipped:
    """A row that is not predicted, and why (one line)."""

    row_id: str
    backend: str
    reason: str


class _Skip(Exception):
    """Raised while mapping a row: the message is the reason it is skipped."""


def load_aic(path: Path) -> list[AicCase | AicSkipped]:
    """Every row of the CSV at `path`, mapped (`map_aic_row`), in file order; a gap-analysis
    copy of an InferenceX run as that run (`aic_twins.with_inferencex_twins`)."""
    with path.open(newline="") as f:
        return [map_aic_row(row) for row in with_inferencex_twins(list(csv.DictReader(f)))]


def map_aic_row(row: Mapping[str, str], *, check_fit: bool = True) -> AicCase | AicSkipped:
    """One row as a case, or the reason it is skipped (rules in the module docstring).

    `check_fit` builds the instance to reject deployments the model cannot hold.
    """
    try:
        return _map(row, check_fit)
    except _Skip as reason:
        return AicSkipped(row["id"], row["backend"], str(reason))


def _map(row: Mapping[str, str], check_fit: bool) -> AicCase:
    if row["mode"] != "agg":
        raise _Skip(f"{row['mode']} mode (separate prefill and decode pools) not modelled yet")
    gpu = AIC_GPUS.get(row["system"])
    if gpu is None:
        raise _Skip(f"GPU {row['system']} not in the catalog")
    gap = is_gap(row)
    if gpu == "gb200" and not gap:  # module docstring
        raise _Skip(
            f"disaggregated GB200 run recorded as agg (InferenceX runs GB200 only "
            f"disaggregated; tp_size {row['tp_size']} is both pools' GPUs): predicted with "
            "the disaggregated rows as launched (llmsizer.calibrate.aic_launch_gb200)"
        )
    tp, ep, dp = _layout(row, get_gpu(gpu).scale_up_domain_size)
    try:
        model = get_model(row["model_path"]).name
    except (ValueError, OSError) as e:
        raise _Skip(f"model {row['model_path']} not in the catalog") from e
    ep = launched_expert_parallel(row["backend"], model, ep, inferencex=not gap)
    precision, note = _precision(row)
    concurrency = _concurrency(row)
    if concurrency < 1:
        raise _Skip("batch_size not given")
    measured_time = measured_at(row) or ""
    early = early_trtllm_deepseek(
        row["backend"], family_of(model), gpu, measured_time, gap, precision.value
    )
    if early is not None:  # the script chose EP and attention DP (aic_script_layout)
        tp, ep, dp = script_layout(early, tp * dp, int(row["isl"]), int(row["osl"]), concurrency)
    per_client = GAP_PROMPTS_PER_CLIENT if gap else PROMPTS_PER_CLIENT
    per_client = prompts_per_client(row, model, precision.value) or per_client  # B200 docker
    fields: dict[str, Any] = {
        "model": model,
        "gpu": gpu,
        "precision": precision.value,
        "kv_cache_dtype": "fp8" if precision in _FP8_KV else None,
        "tp": tp,
        "pp": _int(row, "pp_size", 1),
        "expert_parallel_size": ep,
        "attention_dp_size": dp,
        "engine": row["backend"],
        "isl": int(row["isl"]),
        "osl": int(row["osl"]),
        "concurrency": concurrency,
        "num_requests": per_client * concurrency,
        "length_ratio": None if gap else LENGTH_RATIO,
    }
    fields |= launch_settings(
        engine=row["backend"],
        model=model,
        precision=precision.value,
        tp=tp * dp,
        gpu_memory_bytes=get_gpu(gpu).memory_bytes,
        concurrency=concurrency,
        isl=fields["isl"],
        inferencex=not gap,
        osl=fields["osl"],
        version=row["backend_version"].strip(),
        attention_dp=dp,
        ep=ep,
        measured=measured_time,
    )
    if early is not None:
        fields |= script_graph_settings(early)
    if row["backend"] == "sglang" and not gap:  # an MTP sweep's row (aic_agg_sweeps)
        fields |= sglang_mtp_launch(row, model, (tp, ep, dp), concurrency)
    fields = apply_version_launch(fields, row["backend_version"])  # what the version ran
    ratio = server_prompt_ratio(row, model)  # the prompts the server saw (aic_clients)
    fields["isl"] = round(ratio * fields["isl"])
    version = row["backend_version"]
    fields["linear_kernel"] = linear_kernel(row["backend"], gpu, precision.value, version)
    fields["separate_gdn_projections"] = separate_gdn_projections(row["backend"], model, version)
    try:
        spec = PredictSpec.model_validate(fields)
        if check_fit:
            make_instance(spec, max_model_len=spec.isl + spec.osl)
    except ValueError as e:  # DoesNotFitError, heads not divisible by tp, bad engine ...
        raise _Skip(f"rejected by the model: {str(e).split(':')[0]}") from e
    measured = {
        "mean_ttft_ms": float(row["silicon_ttft_ms"]),
        "mean_tpot_ms": float(row["silicon_tpot_ms"]),
    }
    unfitted = prompt_length_unknown(row, model)  # the client's prompts were not its lengths
    unfitted = unfitted or prompt_count_unknown(row, model, precision.value)  # nor its count
    chunk = spec.engine.max_num_batched_tokens
    builds = first_use_builds(row, model, concurrency, chunk) if chunk else 0
    nominal = int(row["isl"]) if ratio != 1 else None
    return AicCase(
        row["id"], row["backend"], row["system"], model, spec, measured, note, unfitted,
        builds, nominal,
    )  # fmt: skip


def _layout(row: Mapping[str, str], gpus_per_node: int) -> tuple[int, int, int]:
    """(tensor parallel, expert parallel, attention data parallel) as the row was launched
    (module docstring: a layout AIC wrote as a product is read back)."""
    tp, dp, moe_tp, ep = layout_columns(row)
    world = tp * dp
    vllm_product = row["backend"] == "vllm" and dp > 1 and moe_tp == 1 and ep == world
    if vllm_product and not is_gap(row):  # `tp: T, ep: T` written T, D, T x D (docstring)
        return tp, tp, 1
    inside = world <= gpus_per_node
    if ep == 1 or world != moe_tp * ep or (inside and (is_gap(row) or moe_tp % ep != 0)):
        return tp, ep, dp
    if moe_tp > 1 and tp == 1:  # TensorRT-LLM attention DP over moe_tp GPUs, EP moe_ep
        return 1, ep, moe_tp
    if moe_tp > 1:  # SGLang / TensorRT-LLM: TP moe_tp with EP moe_ep
        return moe_tp, ep, 1
    return tp, tp, 1  # vLLM: expert parallel over the TP group


def launched_expert_parallel(engine: str, model: str, ep: int, *, inferencex: bool) -> int:
    """The expert-parallel size the row's launch ran with: `ep`, or 1 where its script does
    not turn expert parallelism on. vLLM runs a MoE layer's experts tensor-parallel over the
    TP group unless `--enable-expert-parallel` is given (`ParallelConfig.
    enable_expert_parallel`, default False); InferenceX's Kimi-K2.5 vLLM scripts launch
    `--tensor-parallel-size=$TP` alone, ignoring the config's `ep`, from the first
    (`kimik2.5_int4_b200.sh` @ eb02101ef, 2026-02-23; `kimik2.5_fp4_b200.sh` @ a58dedd5a,
    2026-03-11, whose config says `{ tp: 4, ep: 4 }`) through the last the rows ran
    (@ 626932a11, 2026-03-27; @ 6c3acebfa, 2026-04-20, which sets `ep: 1`) until
    `EP_ARGS` came with @ 9607d7071 (2026-08-07), after every row. Their MiniMax-M2.5
    scripts pass `--enable-expert-parallel` when `EP_SIZE` > 1 (`minimaxm2.5_fp8_b200.sh`):
    as written."""
    if engine == "vllm" and inferencex and family_of(model) in VLLM_SCRIPTS_WITHOUT_EP:
        return 1
    return ep


def layout_columns(row: Mapping[str, str], prefix: str = "") -> tuple[int, int, int, int]:
    """(tp, attention dp, moe tp, moe ep) as the row's `{prefix}tp_size`,
    `{prefix}attention_dp_size`, `{prefix}moe_tp_size`, `{prefix}moe_ep_size` cells say
    (an empty cell is 1); `prefix` `prefill_` / `decode_` reads a disaggregated pool."""
    return (
        _int(row, f"{prefix}tp_size", 1),
        _int(row, f"{prefix}attention_dp_size", 1),
        _int(row, f"{prefix}moe_tp_size", 1),
        _int(row, f"{prefix}moe_ep_size", 1),
    )


def _concurrency(row: Mapping[str, str]) -> int:
    """The clients: `silicon_concurrency` where the source names it (the run's own number;
    in one product-layout row and 8 gap rows it is not batch_size x attention_dp_size),
    else batch_size x attention_dp_size (batch_size is per attention-DP rank)."""
    named = _CONCURRENCY.search(row["silicon_data_source"])
    if named:
        return int(named.group(1))
    return _int(row, "batch_size", 0) * _int(row, "attention_dp_size", 1)


def _int(row: Mapping[str, str], column: str, default: int) -> int:
    """An integer column; an empty cell is `default` (the gap rows leave dp and ep empty)."""
    text = row[column].strip()
    return int(text) if text else default


def weight_precision(gemm: Precision | None, row: Mapping[str, str]) -> Precision:
    """The weights' precision of `row` (aggregated or disaggregated) from its parsed
    `gemm_quant_mode` (module docstring): as the checkpoint stores it (`fp8` on a
    block-scaled one is `fp8_block`); no mode: the `precision` column, else bf16."""
    if gemm is None:
        column = row["precision"].strip()
        return Precision.parse(column) if column else Precision.BF16
    block = gemm is Precision.FP8 and row["model_path"].strip() in BLOCK_FP8_CHECKPOINTS
    return Precision.FP8_BLOCK if block else gemm


def _precision(row: Mapping[str, str]) -> tuple[Precision, str]:
    """The weight precision and a note when the experts' mode differs (module docstring)."""
    try:
        gemm = quant_mode_precision(row["gemm_quant_mode"])
        moe = quant_mode_precision(row["moe_quant_mode"])
    except ValueError as e:
        raise _Skip(str(e)) from e
    if gemm is None:
        return weight_precision(None, row), ""
    gemm = weight_precision(gemm, row)
    note = ""
    if moe is not None and moe is not gemm:
        note = f"moe_quant_mode {moe.value} priced as gemm_quant_mode {gemm.value}"
    return gemm, note
