"""The launch AIConfigurator's own template wrote for its TensorRT-LLM 1.0.0rc3 gap-analysis
rows (the H100 runs of Llama-3.1-8B BF16 and Qwen3-235B-A22B FP8; `docs/aic_measurement.md`
sections 11 and 47).

No launch file of the gap analysis is public; what AIC itself launched against its generated
deployments in those months is (ai-dynamo/aiconfigurator @ 961028348e7b, 2025-08-22,
"automation eval"):
- `src/aiconfigurator/cli/backends/trtllm.py` l.95-120, an agg worker: `max_num_tokens` =
  `bs + isl + 1500` ("we're assuming no chunked prefill"), `max_seq_len` = `isl + osl + 1000`,
  `cuda_graph_batch_sizes` every size 1 ... bs, `disable_overlap_scheduler` False;
- `cli/templates/trtllm/dynamo/extra_engine_args.1.0.0rc3.yaml.j2`: `max_batch_size: bs`,
  `enable_chunked_prefill` false, `kv_cache_config {enable_block_reuse: true,
  free_gpu_memory_fraction: 0.80}`, padded CUDA graphs;
- its client (`eval/benchmarks/genai_perf_runner.py`) runs `bs` clients (`--concurrency`), so
  the rows' clients are the batch size (every 1.0.0rc3 row's `batch_size` is its
  `silicon_concurrency`).

As `EngineConfig` keys (vLLM names): `max_num_batched_tokens` c + ISL + 1500, `max_num_seqs` c,
`gpu_memory_utilization` 0.8 (`free_gpu_memory_fraction`, `perf.memory.MemoryRule`). The rest
is already the `trtllm` preset or set for every gap row (`aic_launch.cuda_graph_settings`:
graphs padded up to c): chunked context off, block reuse on (`enable_prefix_caching`; the
client's prompts share no prefix), the overlap scheduler. `max_seq_len` = ISL + OSL + 1000
is above every request's length and GUARANTEED_NO_EVICT reserves each request's own ISL +
OSL, so it changes no admission: not modelled. Rows of other images (1.2 / 1.3, a handful,
run by later templates) keep the engine defaults.
"""

from __future__ import annotations

from typing import Any

GAP_TEMPLATE_VERSION = "1.0.0rc3"  # extra_engine_args.1.0.0rc3.yaml.j2 (module docstring)
GAP_TOKEN_MARGIN = 1500  # cli/backends/trtllm.py: max_num_tokens = bs + isl + 1500
GAP_KV_FRACTION = 0.8  # the template's free_gpu_memory_fraction default


def gap_launch_settings(engine: str, version: str, concurrency: int, isl: int) -> dict[str, Any]:
    """`EngineConfig` overrides for one AIC gap-analysis row of `engine` at image `version`
    with `concurrency` clients and prompts of `isl` tokens (module docstring); {} where AIC's
    template for it is not known (the engine defaults hold)."""
    if engine != "trtllm" or version != GAP_TEMPLATE_VERSION:
        return {}
    return {
        "max_num_batched_tokens": concurrency + isl + GAP_TOKEN_MARGIN,
        "max_num_seqs": concurrency,
        "gpu_memory_utilization": GAP_KV_FRACTION,
    }
