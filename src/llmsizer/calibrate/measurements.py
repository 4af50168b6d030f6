"""The published calibration set (`../shared/calibration/measurements.csv`) as cases.

`load_measurements` maps every row to a `Measurement` (a `PredictSpec` and the metrics
measured for it) or a `Skipped` with the reason (rules in `_map`); the validation report
lists what each rule skipped.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llmsizer.calibrate.record import Case
from llmsizer.instance import PredictSpec, make_instance
from llmsizer.perf import Deployment
from llmsizer.perf.memory import (
    DEFAULT_RUNTIME_OVERHEAD_BYTES,
    activation_bytes_per_gpu,
    weight_bytes_per_gpu,
)
from llmsizer.sim.config import PRESETS
from llmsizer.specs import get_gpu, get_model

Runtime = Literal["vllm", "pytorch", "cpp"]


def runtime_of(engine: str) -> Runtime:
    """What ran a row's steps, by its engine label: vLLM; TensorRT-LLM's PyTorch backend
    (the v1.0 table's trtllm-bench, and every AIC row); or TensorRT-LLM's C++ runtime
    (TensorRT engines: every other TensorRT-LLM row, Triton's tensorrtllm_backend,
    gptSessionBenchmark; docs/aic_measurement.md section 15)."""
    if engine.startswith("vLLM"):
        return "vllm"
    return "pytorch" if "PyTorch backend" in engine else "cpp"


@dataclass(frozen=True, slots=True)
class Measurement:
    """A row of the calibration set as a case: the spec and its measured metrics."""

    row_id: int
    source_id: str
    spec: PredictSpec
    measured: dict[str, float]
    quality: str
    runtime: Runtime  # what ran the steps (`runtime_of`): which general fit prices the row

    @property
    def case(self) -> Case:
        return (self.spec, self.measured)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A row that could not become a case, and why."""

    row_id: int
    source_id: str
    reason: str


class _Skip(Exception):
    """Raised while mapping a row: the message is the reason it is skipped."""


@dataclass(frozen=True, slots=True)
class CalibrationSet:
    measurements: tuple[Measurement, ...]
    skipped: tuple[Skipped, ...]

    def skip_counts(self) -> dict[str, int]:
        """Rows skipped per reason, most frequent first."""
        counts: dict[str, int] = {}
        for s in self.skipped:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def load_measurements(path: Path) -> CalibrationSet:
    """Read the calibration CSV and map every row (`map_row`)."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    mapped = [map_row(row) for row in rows]
    return CalibrationSet(
        tuple(m for m in mapped if isinstance(m, Measurement)),
        tuple(m for m in mapped if isinstance(m, Skipped)),
    )


def map_row(row: Mapping[str, str]) -> Measurement | Skipped:
    """One CSV row as a case, or the reason it cannot be one (rules in `_map`)."""
    try:
        spec, measured = _map(row)
    except _Skip as reason:
        return Skipped(int(row["id"]), row["source_id"], str(reason))
    runtime = runtime_of(row["engine"])
    return Measurement(int(row["id"]), row["source_id"], spec, measured, row["quality"], runtime)


# trtllm-bench dataset sizes per (ISL, OSL): TensorRT-LLM perf-overview, "$num_requests"
# (v0.17 commit 258c754; v1.0 commit 00f3768 adds 1000/2000).
TRTLLM_BENCH_NUM_REQUESTS = {
    (128, 128): 30000,
    (128, 2048): 3000,
    (128, 4096): 1500,
    (2048, 128): 3000,
    (2048, 2048): 1500,
    (5000, 500): 1500,
    (1000, 1000): 3000,
    (500, 2000): 3000,
    (20000, 2000): 1000,
    (1000, 2000): 1500,
}
_ONLINE_NUM_REQUESTS = 500  # "All data ... generated ... with 500 requests"
_MODEL_ALIASES = {"Llama 70B": "llama-2-70b"}  # the course's 4K-context example
_PRECISIONS = {  # weights, KV cache: TRT-LLM's FP8 and NVFP4 checkpoints keep an FP8 KV cache
    "FP8": ("fp8", "fp8"),
    "FP4": ("fp4", "fp8"),
    "BF16": ("bf16", None),
    "FP16": ("fp16", None),
}
_COLUMNS = (  # CSV column -> summary key
    ("output_tok_s_total", "output_throughput"),
    ("output_tok_s_per_gpu", "output_throughput_per_gpu"),
    ("requests_per_s", "request_throughput"),
    ("ttft_mean_ms", "mean_ttft_ms"),
    ("itl_tpot_mean_ms", "mean_tpot_ms"),
)


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _float(text: str) -> float | None:
    try:
        return float(text.strip().lstrip("~").replace(",", ""))
    except ValueError:
        return None


def _map(row: Mapping[str, str]) -> tuple[PredictSpec, dict[str, float]]:
    """The mapping rules (the validation report lists what each one skipped):

    - offline max-throughput rows (trtllm-bench): `offline`, the dataset size and engine
      limits trtllm-bench used (`trtllm_bench_settings`); output tokens/s of the whole run.
    - online rows (500 requests at a QPS): Poisson `request_rate`, or `offline` at QPS=INF;
      mean TTFT, mean ITL (per request, as `mean_tpot_ms`), output tokens/s.
    - static-batch rows: a closed loop at `concurrency` = the batch size; batch-1 latency
      rows: `concurrency` 1, first-token latency only.
    - ratios, heuristics, sizing statements, figures without one configuration, GPUs or
      models outside the catalog and ambiguous throughput labels are skipped.
    """
    scenario = row["scenario"]
    static = "static batch" in scenario
    batch1 = scenario in ("min latency, batch 1", "batch 1 TTFT")
    if not (static or batch1 or scenario.startswith(("offline max throughput", "online serving"))):
        raise _Skip(f"not one configuration's measurement ({scenario.split(' (')[0]})")
    if "HF Pipelines" in row["engine"]:
        raise _Skip("engine not modelled (HF pipelines)")
    precision, kv = _precision(row["precision"])
    tp, pp = _parallel(row)
    isl, osl = _int(row["isl"]), _int(row["osl"])
    if isl is None:
        raise _Skip("input length not given")
    base: dict[str, Any] = {
        "model": _model(row["model"]),
        "gpu": _gpu(row["gpu"]),
        "precision": precision,
        "kv_precision": kv,
        "tp": tp,
        "pp": pp,
        "isl": isl,
        "engine": "vllm" if row["engine"].startswith("vLLM") else "trtllm",
    }
    measured = _metrics(row, tp)
    if batch1 or osl is None:  # first-token latency needs no output length
        measured = {k: v for k, v in measured.items() if k == "mean_ttft_ms"}
    if not measured:
        raise _Skip("no metric comparable (lengths or throughput definition missing)")
    if scenario.startswith("offline"):
        spec = _bench_spec(base, _need(osl), row["engine"])
    elif scenario.startswith("online"):
        measured.pop("request_throughput", None)  # rounded to whole req/s; tok/s is kept
        qps = row["request_rate_qps"].strip().upper()
        load = {"offline": True} if qps == "INF" else {"request_rate": _float(qps)}
        preset = PRESETS[base["engine"]]
        spec = PredictSpec.model_validate(
            {**base, "osl": _need(osl), "num_requests": _ONLINE_NUM_REQUESTS, **load}
            | runtime_settings(
                row["engine"],
                preset["max_num_seqs"],
                preset["max_num_batched_tokens"],
                row["engine_version"],
            )
        )
    else:
        batch = 1 if batch1 else _int(row["batch_size"])
        if batch is None:
            raise _Skip("batch size not given")
        # an engine built for this batch (gptSessionBenchmark): KV takes 95 % of what is free
        tokens = isl if batch == 1 else max(8192, isl + batch)
        spec = PredictSpec.model_validate(
            {
                **base,
                "osl": osl or 1,
                "concurrency": batch,
                "num_requests": max(3 * batch, 3),
                "max_num_seqs": batch,
                "max_num_batched_tokens": tokens,
                "gpu_memory_utilization": 0.95,
                **runtime_settings(row["engine"], batch, tokens, row["engine_version"]),
            }
        )
    try:
        make_instance(spec, max_model_len=spec.isl + spec.osl)
    except ValueError as e:  # DoesNotFitError, heads not divisible by tp, ...
        raise _Skip(f"rejected by the model: {str(e).split(':')[0]}") from e
    return spec, measured


def _need(osl: int | None) -> int:
    if osl is None:
        raise _Skip("output length not given")
    return osl


def _metrics(row: Mapping[str, str], tp: int) -> dict[str, float]:
    out = {key: v for column, key in _COLUMNS if (v := _float(row[column])) is not None}
    if row["other_metric"] == "throughput_out_tok_s_as_labelled":
        if tp > 1:
            raise _Skip("throughput label ambiguous (per GPU or total) for TP > 1")
        value = _float(row["other_value"])
        if value is not None:
            out["output_throughput"] = value
    return out


def _precision(text: str) -> tuple[str, str | None]:
    if text.startswith("16-bit"):
        return "bf16", None
    if text not in _PRECISIONS:
        raise _Skip(f"precision not one format ({text or 'not given'})")
    return _PRECISIONS[text]


def _parallel(row: Mapping[str, str]) -> tuple[int, int]:
    tp, pp, num_gpus = _int(row["tp"]), _int(row["pp"]) or 1, _int(row["num_gpus"])
    if tp is None or (num_gpus is not None and num_gpus != tp * pp):
        raise _Skip("parallel layout not given")
    return tp, pp


def _model(text: str) -> str:
    name = _MODEL_ALIASES.get(text, text)
    try:
        return get_model(name).name
    except (ValueError, OSError) as e:
        raise _Skip("model not in the catalog") from e


def _gpu(text: str) -> str:
    if " vs " in text or "not stated" in text:
        raise _Skip("GPU not one known variant")
    try:
        return get_gpu(text).key
    except ValueError as e:
        raise _Skip("GPU not in the catalog") from e


# The v1.0 table's trtllm-bench `llm_options.yml`, dense models (perf-overview.md at 00f3768):
# `cuda_graph_config: {enable_padding: true, batch_sizes: [...]}`.
TRTLLM_BENCH_GRAPH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192)


def pytorch_graph_sizes(sizes: tuple[int, ...], max_batch: int, max_tokens: int) -> tuple[int, ...]:
    """The padded sizes the PyTorch backend captures: those up to its largest decode batch,
    then that batch where the list skips it (`_filter_cuda_graph_batch_sizes`, model_engine.py)."""
    top = min(max_batch, max_tokens)
    kept = tuple(s for s in sorted(sizes) if s <= top)
    return kept if kept and kept[-1] == top else (*kept, top)


def runtime_settings(
    engine: str, max_num_seqs: int, max_num_tokens: int, version: str = ""
) -> dict[str, Any]:
    """How a row's runtime ran its steps (`EngineConfig` fields), by its engine label and
    version (sources: docs/aic_measurement.md section 15). vLLM: the preset's, but async
    scheduling only from 0.14.0, its first default (`llmsizer.sim.config`); a row naming no
    version or an older one (the table's is a June 2023 blog) ran without it.
    trtllm-bench on the PyTorch backend (v1.0):
    padded CUDA graphs of `TRTLLM_BENCH_GRAPH_SIZES` and the overlap scheduler (the preset's).
    The C++ runtime (every other row) had neither: no CUDA graphs (`cuda_graph_mode` False in
    trtllm-bench's engine path, gptManagerBenchmark and gptSessionBenchmark). Its TensorRT
    engine enqueues its fused kernels from C++ ahead of the GPU, not kernel by kernel from
    Python, so its decode steps are priced at their own size without the eager launch cost
    (priced eager and refitted, the online ITL went from 9.7 to 37 % MdAPE)."""
    runtime = runtime_of(engine)
    if runtime == "vllm":
        return {} if _version(version) >= (0, 14) else {"overlap_scheduler": False}
    if runtime == "pytorch":
        sizes = pytorch_graph_sizes(TRTLLM_BENCH_GRAPH_SIZES, max_num_seqs, max_num_tokens)
        return {"cudagraph_padding": True, "cudagraph_capture_sizes": sizes}
    every = tuple(range(1, max_num_seqs + 1))
    return {"cudagraph_mode": "FULL_DECODE_ONLY", "cudagraph_capture_sizes": every,
            "cudagraph_padding": False, "overlap_scheduler": False}  # fmt: skip


def _version(text: str) -> tuple[int, ...]:
    """`0.14.1` -> (0, 14, 1); the leading numbers of a label like `1.0 (docs)`; () if none."""
    parts = re.match(r"\d+(\.\d+)*", text.strip())
    return tuple(int(x) for x in parts.group().split(".")) if parts else ()


def _bench_spec(base: dict[str, Any], osl: int, engine: str) -> PredictSpec:
    isl = base["isl"]
    num = TRTLLM_BENCH_NUM_REQUESTS.get((isl, osl))
    if num is None:
        raise _Skip("trtllm-bench dataset size unknown for these lengths")
    d = Deployment.from_names(
        base["model"], base["gpu"], base["precision"], base["kv_precision"], base["tp"], base["pp"]
    )
    max_seqs, max_tokens, utilization = trtllm_bench_settings(d, isl, osl)
    return PredictSpec.model_validate(
        {
            **base,
            "osl": osl,
            "offline": True,
            "num_requests": num,
            "max_num_seqs": max_seqs,
            "max_num_batched_tokens": max_tokens,
            "gpu_memory_utilization": utilization,
            **runtime_settings(engine, max_seqs, max_tokens),
        }
    )


def trtllm_bench_settings(
    d: Deployment, isl: int, osl: int, kv_fraction: float = 0.95
) -> tuple[int, int, float]:
    """(max_num_seqs, max_num_batched_tokens, gpu_memory_utilization) as trtllm-bench sets
    them for fixed lengths: a port of `calc_engine_setting` and `finetune_setting`
    (TensorRT-LLM tensorrt_llm/bench/build/tuning.py).

    trtllm-bench estimates how many requests' KV fits in `kv_fraction` of the memory the
    weights leave (at most 4096, per pipeline stage), rounds that up to a batch size, and
    gives the step a token budget of that batch times (1 + isl / osl), between 2048 and
    32768. Chunked context is off by default there, so a prompt must fit beside the decodes:
    the budget here is at least isl + the batch size (and the batches of all stages).
    TRT-LLM's KV cache takes `kv_fraction` of the memory free after weights, activations
    and runtime, which is the `gpu_memory_utilization` returned.
    """
    tp, pp = d.tensor_parallel_size, d.pipeline_parallel_size
    kv_per_token = d.kv_bytes_per_token_per_layer_per_gpu * d.model.num_layers * tp
    free = d.gpu.memory_bytes * d.num_gpus - d.model.weight_bytes(d.precision)
    raw_batch = min(max(kv_fraction * free / (kv_per_token * (isl + osl)), 1.0), 4096) / pp
    raw_tokens = min(raw_batch * (1 + isl / osl), 32768)
    if raw_batch < 256:
        batch = max(64, 32 * math.ceil(raw_batch / 32))
    elif raw_batch < 1024:
        batch = 128 * math.ceil(raw_batch / 128)
    else:
        batch = 256 * math.ceil(raw_batch / 256)
    if raw_tokens < 4096:
        tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        tokens = 1024 * math.ceil(raw_tokens / 1024)
    tokens = max(tokens, isl + batch, batch * pp)
    used = (
        weight_bytes_per_gpu(d)
        + activation_bytes_per_gpu(d, tokens, batch * pp)
        + DEFAULT_RUNTIME_OVERHEAD_BYTES
    )
    memory = d.gpu.memory_bytes
    utilization = min(1.0, (kv_fraction * (memory - used) + used) / memory)
    return batch * pp, tokens, utilization
