"""AIC's TensorRT-LLM 1.0.0rc3 gap-analysis rows as its template launched them
(`llmsizer.calibrate.aic_gap_launch`): the mapping, and what the token budget does to a
wave of prompts that arrive together."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.calibrate.aic_gap_launch import gap_launch_settings
from llmsizer.sim import EngineConfig
from tests.calibrate.test_aic import mapped
from tests.sim.conftest import make_engine, make_workload

GAP_SOURCE = "source_file=/x/aic-auto-gap-analysis/data/h100_sxm/trtllm/1.0.0rc3/a.csv"
LLAMA_8B_GAP = {
    "silicon_data_source": f"{GAP_SOURCE}; silicon_concurrency=16",
    "backend": "trtllm",
    "backend_version": "1.0.0rc3",
    "model_path": "meta-llama/Llama-3.1-8B-Instruct",
    "system": "h100_sxm",
    "precision": "bf16",
    "gemm_quant_mode": "",
    "moe_quant_mode": "",
    "isl": "2048",
    "osl": "256",
    "batch_size": "16",
    "tp_size": "2",
    "moe_tp_size": "1",
}


def test_a_gap_row_runs_the_templates_budget_batch_and_kv_fraction() -> None:
    spec = mapped(**LLAMA_8B_GAP).spec
    e = spec.engine
    # cli/backends/trtllm.py @ 961028348e7b: max_num_tokens = bs + isl + 1500, bs = clients
    assert (e.max_num_batched_tokens, e.max_num_seqs) == (16 + 2048 + 1500, 16)
    assert spec.gpu_memory_utilization == 0.8  # free_gpu_memory_fraction 0.80
    assert not e.enable_chunked_prefill and e.overlap_scheduler and e.enable_prefix_caching
    assert (e.cudagraph_padding, e.max_cudagraph_capture_size) == (True, 16)  # 1 ... bs


@pytest.mark.parametrize(
    "changes",
    [
        {"backend_version": "1.3.0rc1"},  # a later image: its template is not the one read
        {"silicon_data_source": "db-dump/2026-04-27; config_id=1"},  # InferenceX's run
    ],
)
def test_other_trtllm_rows_keep_the_engine_defaults(changes: dict[str, str]) -> None:
    spec = mapped(**(LLAMA_8B_GAP | changes)).spec
    assert spec.engine.max_num_batched_tokens == 8192  # TensorRT-LLM's max_num_tokens
    assert spec.gpu_memory_utilization != 0.8


def test_only_trtllm_1_0_0rc3_has_a_template() -> None:
    assert gap_launch_settings("trtllm", "1.0.0rc3", 8, 1024)["max_num_batched_tokens"] == 2532
    assert gap_launch_settings("vllm", "1.0.0rc3", 8, 1024) == {}
    assert gap_launch_settings("trtllm", "1.2.0rc6.post1", 8, 1024) == {}


def test_the_templates_budget_staggers_a_wave_of_long_prompts() -> None:
    """Chunked context off: a step holds whole prompts up to the budget. At ISL 4096 and 8
    clients the template's 5604 tokens take one prompt a step where the default 8192 takes
    two, so (every step 10 ms; one output token, so no decodes take budget) the k-th prompt's
    first token comes at k steps, not ceil(k / 2): a mean of 4.5 steps against 2.5."""
    clients, isl = 8, 4096
    settings = gap_launch_settings("trtllm", "1.0.0rc3", clients, isl)
    base = EngineConfig(engine="trtllm", overlap_scheduler=False)

    def first_tokens_s(budget: int) -> np.ndarray:
        engine = make_engine(**(base.model_dump() | {"max_num_batched_tokens": budget}))
        records = engine.run(make_workload(isl, 1, n=clients)).records
        return np.sort(records.first_token_s())  # type: ignore[attr-defined]

    steps = np.arange(1, clients + 1) * 0.010
    np.testing.assert_allclose(first_tokens_s(settings["max_num_batched_tokens"]), steps)
    np.testing.assert_allclose(first_tokens_s(8192), np.repeat(steps[: clients // 2], 2))
