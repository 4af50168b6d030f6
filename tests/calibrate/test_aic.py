"""The AIC silicon rows as cases: the mapping rules on hand-written rows, and the whole CSV."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.calibrate.aic import AicCase, AicSkipped, load_aic, map_aic_row
from llmsizer.instance import PredictSpec, simulation_setup
from tests.conftest import shared_path

_COLUMNS = (
    "prefill_batch_size prefill_num_workers prefill_tp_size prefill_pp_size "
    "prefill_attention_dp_size prefill_moe_tp_size prefill_moe_ep_size decode_batch_size "
    "decode_num_workers decode_tp_size decode_pp_size decode_attention_dp_size "
    "decode_moe_tp_size decode_moe_ep_size"
).split()


def make_row(**changes: str) -> dict[str, str]:
    """An InferenceX agg row: vLLM Llama-3.1-70B FP8 on 4 x B200, 1k/1k at 16 clients."""
    row = {
        "id": "llama70b_b200_vllm_fp8_agg_1024x1024_c16",
        "silicon_data_source": "db-dump/2026-04-27; config_id=1",
        "backend": "vllm",
        "backend_version": "0.19.0",
        "model_path": "meta-llama/Llama-3.1-70B",
        "system": "b200_sxm",
        "precision": "fp8",
        "mode": "agg",
        "isl": "1024",
        "osl": "1024",
        "gemm_quant_mode": "fp8",
        "moe_quant_mode": "fp8",
        "batch_size": "16",
        "tp_size": "4",
        "pp_size": "1",
        "attention_dp_size": "1",
        "moe_tp_size": "4",
        "moe_ep_size": "1",
        "silicon_ttft_ms": "120.5",
        "silicon_tpot_ms": "9.25",
        **dict.fromkeys(_COLUMNS, ""),
    }
    return {**row, **changes}


def mapped(**changes: str) -> AicCase:
    case = map_aic_row(make_row(**changes), check_fit=False)
    assert isinstance(case, AicCase), case
    return case


def skip_reason(**changes: str) -> str:
    skipped = map_aic_row(make_row(**changes), check_fit=False)
    assert isinstance(skipped, AicSkipped), skipped
    return skipped.reason


def test_an_inferencex_row_is_a_closed_loop_of_ten_prompts_per_client() -> None:
    case = mapped()
    s = case.spec
    assert (s.model, s.gpu, s.precision, s.kv_cache_dtype) == (
        "llama-3.1-70b",
        "b200",
        "fp8",
        "fp8",
    )
    assert (s.tensor_parallel_size, s.pipeline_parallel_size, s.preset) == (4, 1, "vllm")
    assert (s.isl, s.osl, s.concurrency, s.num_requests) == (1024, 1024, 16, 160)
    assert s.length_ratio == 0.8
    assert case.measured == {"mean_ttft_ms": 120.5, "mean_tpot_ms": 9.25}
    assert case.note == ""


@pytest.mark.parametrize(
    ("system", "gpu"),
    [("h100_sxm", "h100-sxm"), ("b200_sxm", "b200"), ("b300_sxm", "b300"), ("gb200", "gb200")],
)
def test_systems_map_to_catalog_gpus(system: str, gpu: str) -> None:
    gap = "source_file=/x/aic-auto-gap-analysis/a.csv"  # InferenceX GB200 runs are disagg
    assert mapped(system=system, silicon_data_source=gap).spec.gpu == gpu


def test_engine_preset_is_the_backend() -> None:
    assert mapped(backend="sglang").spec.preset == "sglang"
    assert mapped(backend="trtllm").spec.preset == "trtllm"


def test_precision_is_the_gemm_mode_and_a_different_moe_mode_is_noted() -> None:
    case = mapped(gemm_quant_mode="fp8", moe_quant_mode="fp8_block")
    assert case.spec.precision == "fp8"
    assert case.note == "moe_quant_mode fp8_block priced as gemm_quant_mode fp8"
    fp4 = mapped(gemm_quant_mode="nvfp4", moe_quant_mode="nvfp4").spec
    assert (fp4.precision, fp4.kv_cache_dtype) == ("fp4", "fp8")


def test_an_empty_quant_mode_is_the_checkpoint_dtype() -> None:
    bf16 = mapped(gemm_quant_mode="", moe_quant_mode="", precision="bf16").spec
    assert (bf16.precision, bf16.kv_cache_dtype) == ("bf16", None)
    assert mapped(gemm_quant_mode="", moe_quant_mode="", precision="").spec.precision == "bf16"


def test_gap_analysis_rows_have_fixed_lengths_and_twenty_prompts_per_client() -> None:
    case = mapped(silicon_data_source="source_file=/x/aic-auto-gap-analysis/a.csv")
    assert case.spec.length_ratio is None
    assert case.spec.num_requests == 20 * 16


def test_empty_dp_and_ep_cells_mean_one() -> None:
    assert mapped(attention_dp_size="", moe_ep_size="").spec.concurrency == 16


def test_expert_parallel_rows_split_the_experts_over_ep_ranks() -> None:
    case = mapped(model_path="deepseek-ai/DeepSeek-R1", tp_size="8", moe_ep_size="4")
    assert case.spec.expert_parallel_size == 4 and case.spec.tensor_parallel_size == 8


DEEPSEEK = {"model_path": "deepseek-ai/DeepSeek-R1", "gemm_quant_mode": "fp8"}


@pytest.mark.parametrize(
    ("backend", "aic_layout", "launched"),
    [
        # (tp_size, attention_dp_size, moe_tp_size, moe_ep_size) -> (tp, ep)
        ("sglang", ("16", "1", "4", "4"), (4, 4)),  # id ..._tp4_ep4_...
        ("trtllm", ("64", "1", "8", "8"), (8, 8)),  # id ..._tp8_ep8_...
        ("vllm", ("4", "4", "1", "16"), (4, 4)),  # id ..._tp4_ep4_...
        ("sglang", ("8", "1", "2", "4"), (8, 4)),  # EP 4 over TP 2 is no launch: as written
        ("sglang", ("4", "1", "2", "2"), (2, 2)),  # config 736's `{ tp: 2, ep: 2 }`
        ("sglang", ("4", "1", "4", "1"), (4, 1)),  # config 737's `{ tp: 4, ep: 1 }`
    ],
)
def test_a_layout_written_as_a_product_is_read_as_launched(
    backend: str, aic_layout: tuple[str, ...], launched: tuple[int, int]
) -> None:
    tp, dp, moe_tp, ep = aic_layout
    case = mapped(
        **DEEPSEEK, backend=backend, tp_size=tp, attention_dp_size=dp, moe_tp_size=moe_tp,
        moe_ep_size=ep, batch_size="8",
    )  # fmt: skip
    spec = case.spec
    assert (spec.tensor_parallel_size, spec.expert_parallel_size) == launched
    assert spec.concurrency == 8 * int(dp)  # the clients are the row's silicon_concurrency


def test_a_product_inside_the_node_is_read_back_for_inferencex_rows_only() -> None:
    """AIC's own gap rows write the layout they ran (`tp 4` with 2 x 2 stays on 4 GPUs);
    the export of InferenceX runs writes TP x EP (aic docstring, config 736)."""
    layout = {"tp_size": "4", "moe_tp_size": "2", "moe_ep_size": "2", "batch_size": "8"}
    gap = mapped(
        **DEEPSEEK, **layout, silicon_data_source="source_file=/x/aic-auto-gap-analysis/a.csv"
    )
    ix = mapped(**DEEPSEEK, **layout)
    assert (gap.spec.tensor_parallel_size, gap.spec.expert_parallel_size) == (4, 2)
    assert (ix.spec.tensor_parallel_size, ix.spec.expert_parallel_size) == (2, 2)


def test_config_736_ran_on_two_gpus() -> None:
    """Of the calibration file's InferenceX rows, only config 736's 12 (SGLang Qwen3.5 NVFP4
    on B300) are a product inside the node: read as TP 2, EP 2 (aic docstring)."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    cases = [c for c in load_aic(path) if isinstance(c, AicCase)]
    two = [c for c in cases if c.spec.gpus_per_instance == 2 and c.spec.expert_parallel_size == 2]
    sglang = [c for c in two if c.backend == "sglang"]
    assert len(sglang) == 12 and all(c.row_id.endswith("_cfg736") for c in sglang)
    assert all(c.spec.tensor_parallel_size == 2 for c in sglang)


KIMI = {"model_path": "moonshotai/Kimi-K2.5", "gemm_quant_mode": "nvfp4", "precision": "fp4"}


@pytest.mark.parametrize(
    ("aic_layout", "source", "launched"),
    [
        # (tp_size, attention_dp_size, moe_tp_size, moe_ep_size) -> (tp, dp, ep)
        (("4", "1", "1", "4"), "model=Kimi-K2.5; measured=2026-03-11", (4, 1, 1)),
        (("4", "4", "1", "16"), "db-dump/2026-04-27; config_id=635", (4, 1, 1)),  # a product
        (("8", "1", "8", "1"), "db-dump/2026-04-27; config_id=636", (8, 1, 1)),
        (("4", "1", "1", "4"), "kimi-k2.5-gap-analysis.csv", (4, 1, 4)),  # AIC's own launch
    ],
)
def test_vllm_kimi_scripts_run_the_experts_tensor_parallel(
    aic_layout: tuple[str, ...], source: str, launched: tuple[int, int, int]
) -> None:
    """InferenceX's Kimi-K2.5 vLLM scripts pass no --enable-expert-parallel (aic.
    launched_expert_parallel): the config's EP 4 ran as TP 4, its experts split over the
    4 GPUs, where an EP 4 busiest rank reads more of them at a few clients."""
    tp, dp, moe_tp, ep = aic_layout
    case = mapped(
        **KIMI, tp_size=tp, attention_dp_size=dp, moe_tp_size=moe_tp, moe_ep_size=ep,
        batch_size="4", silicon_data_source=f"{source}; silicon_concurrency=4",
    )  # fmt: skip
    spec = case.spec
    got = (spec.tensor_parallel_size, spec.attention_dp_size, spec.expert_parallel_size)
    assert got == launched
    assert spec.concurrency == 4


def test_a_vllm_minimax_script_with_ep_runs_expert_parallel() -> None:
    """MiniMax-M2.5's vLLM scripts pass --enable-expert-parallel when EP_SIZE > 1."""
    case = mapped(
        model_path="MiniMaxAI/MiniMax-M2.5", tp_size="4", moe_tp_size="1", moe_ep_size="4",
    )  # fmt: skip
    assert (case.spec.tensor_parallel_size, case.spec.expert_parallel_size) == (4, 4)


@pytest.mark.parametrize(
    ("backend", "aic_layout", "launched"),
    [
        # (tp_size, attention_dp_size, moe_tp_size, moe_ep_size) -> (tp, dp, ep)
        ("trtllm", ("1", "64", "8", "8"), (1, 8, 8)),  # id ..._tp8_ep8_...: a product
        ("trtllm", ("1", "16", "4", "4"), (1, 4, 4)),  # id ..._tp4_ep4_...: a product
        ("trtllm", ("1", "8", "1", "8"), (1, 8, 8)),  # id ..._tp8_0_ep8_0_...: as written
        # vLLM's InferenceX `tp: 2, ep: 2` written as a product inside the node (aic._layout)
        ("vllm", ("2", "2", "1", "4"), (2, 1, 2)),
    ],
)
def test_attention_data_parallel_rows_are_read_as_launched(
    backend: str, aic_layout: tuple[str, ...], launched: tuple[int, int, int]
) -> None:
    tp, dp, moe_tp, ep = aic_layout
    case = mapped(
        **DEEPSEEK, backend=backend, tp_size=tp, attention_dp_size=dp, moe_tp_size=moe_tp,
        moe_ep_size=ep, batch_size="2", silicon_data_source="source_file=x.csv",
    )  # fmt: skip
    spec = case.spec
    got = (spec.tensor_parallel_size, spec.attention_dp_size, spec.expert_parallel_size)
    assert got == launched
    assert spec.gpus_per_instance == launched[0] * launched[1]
    assert spec.concurrency == 2 * int(dp)  # batch_size is per attention-DP rank


def test_the_clients_are_the_rows_silicon_concurrency_where_it_names_them() -> None:
    """One product row says c32 with batch_size 32 and attention_dp_size 64."""
    case = mapped(
        **DEEPSEEK, backend="trtllm", tp_size="1", attention_dp_size="64", moe_tp_size="8",
        moe_ep_size="8", batch_size="32",
        silicon_data_source="source_file=2026-04-06.csv; silicon_concurrency=32; wip=False",
    )  # fmt: skip
    assert case.spec.concurrency == 32 and case.spec.num_requests == 320


def test_inferencex_gb200_rows_are_disaggregated_runs() -> None:
    reason = skip_reason(**DEEPSEEK, system="gb200", tp_size="36", moe_tp_size="36")
    # not a refusal (fit_aic counts skips starting "disagg" as mapped elsewhere): the
    # disaggregated mapping predicts it as launched (tests/calibrate/test_aic_launch_gb200)
    assert reason.startswith("disaggregated GB200 run recorded as agg")
    assert "tp_size 36" in reason and "aic_launch_gb200" in reason
    gap = mapped(
        **DEEPSEEK, system="gb200", tp_size="8", moe_tp_size="8", backend="trtllm",
        silicon_data_source="source_file=/x/aic-auto-gap-analysis/gb200.csv",
    )  # fmt: skip
    assert gap.spec.gpu == "gb200"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"mode": "disagg"}, "disagg mode (separate prefill and decode pools) not modelled yet"),
        ({"system": "mi355x"}, "GPU mi355x not in the catalog"),
        ({"model_path": "acme/NoSuchModel-1B"}, "model acme/NoSuchModel-1B not in the catalog"),
    ],
)
def test_what_perf_cannot_model_is_skipped_with_its_reason(
    changes: dict[str, str], reason: str
) -> None:
    assert skip_reason(**changes) == reason


def test_weights_that_do_not_fit_are_skipped() -> None:
    row = make_row(system="h100_sxm", tp_size="1", gemm_quant_mode="", moe_quant_mode="")
    row["precision"] = "bf16"
    skipped = map_aic_row(row)
    assert isinstance(skipped, AicSkipped)
    assert skipped.reason.startswith("rejected by the model: llama-3.1-70b")
    assert "does not fit" in skipped.reason


def test_length_ratio_draws_uniform_lengths_in_the_range() -> None:
    spec = PredictSpec(
        model="llama-3.1-8b", gpu="h100-sxm", isl=1000, osl=500, concurrency=4, length_ratio=0.8
    )
    workload = simulation_setup(spec).workload
    for lengths, top in ((workload.num_prompt_tokens, 1000), (workload.num_output_tokens, 500)):
        assert lengths.min() >= int(0.8 * top) and lengths.max() <= top
        assert len(np.unique(lengths)) > 1
    fixed = simulation_setup(spec.model_copy(update={"length_ratio": None})).workload
    assert set(fixed.num_prompt_tokens.tolist()) == {1000}


@pytest.mark.shared
def test_every_row_of_the_csv_is_mapped_or_has_a_reason() -> None:
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    rows = load_aic(path)
    assert len(rows) == 3555
    cases = [r for r in rows if isinstance(r, AicCase)]
    assert len(cases) > 1000
    assert all(r.reason.strip() for r in rows if isinstance(r, AicSkipped))
    assert all(c.spec.concurrency and c.measured["mean_ttft_ms"] > 0 for c in cases)


# --- the scheduler settings each row was launched with ------------------------------------


def engine_of(**changes: str) -> dict[str, int]:
    e = mapped(**changes).spec.engine
    keys = ("max_num_batched_tokens", "max_num_seqs", "scheduler_recv_interval")
    return {k: getattr(e, k) for k in keys}


def test_inferencex_scripts_set_the_token_budget_and_batch_cap() -> None:
    minimax = engine_of(model_path="MiniMaxAI/MiniMax-M2.5", isl="8192")
    assert minimax["max_num_batched_tokens"] == 16384  # --max-num-batched-tokens $((ISL*2))
    trt = engine_of(
        backend="trtllm", model_path="deepseek-ai/DeepSeek-R1", tp_size="8",
        gemm_quant_mode="nvfp4", moe_quant_mode="nvfp4", isl="8192", batch_size="128",
    )  # fmt: skip
    # max(8192, ceil64(CONC + ISL + 64)) = ceil64(8384) and max_batch_size = CONC
    assert (trt["max_num_batched_tokens"], trt["max_num_seqs"]) == (8384, 128)


@pytest.mark.parametrize(("clients", "interval"), [("8", 10), ("16", 30), ("64", 30)])
def test_sglang_qwen_reads_new_requests_every_10_or_30_steps(clients: str, interval: int):
    e = engine_of(
        backend="sglang", model_path="Qwen/Qwen3.5-397B-A17B", batch_size=clients,
        tp_size="8", system="b300_sxm",
    )  # fmt: skip
    assert e == {
        "max_num_batched_tokens": 32768,
        "max_num_seqs": 128,
        "scheduler_recv_interval": interval,
    }


def test_gap_rows_keep_the_engine_defaults_for_the_gpu() -> None:
    gap = {"silicon_data_source": "source_file=x; gap-analysis"}
    vllm = engine_of(**gap)
    assert (vllm["max_num_batched_tokens"], vllm["max_num_seqs"]) == (8192, 1024)
    sglang = engine_of(backend="sglang", **gap)  # chunked_prefill_size 16384 above 160 GB
    assert sglang["max_num_batched_tokens"] == 16384 and sglang["scheduler_recv_interval"] == 1


@pytest.mark.parametrize(
    ("backend", "tp", "quant", "fraction"),
    [
        ("sglang", "8", "fp8", 0.82),  # dsr1_fp8_b200.sh: --mem-fraction-static 0.82 at TP8
        ("sglang", "4", "fp8", 0.95),  # ... and 0.95 at TP4
        ("sglang", "8", "nvfp4", 0.85),  # dsr1_fp4_b200.sh
        ("trtllm", "4", "fp8", 0.8),  # dsr1_fp8_b200_trt.sh: free_gpu_memory_fraction 0.8
        ("vllm", "8", "fp8", 0.9),  # the default
    ],
)
def test_deepseek_launches_use_the_scripts_memory_fraction(
    backend: str, tp: str, quant: str, fraction: float
) -> None:
    case = mapped(
        **{**DEEPSEEK, "gemm_quant_mode": quant, "moe_quant_mode": quant},
        backend=backend, tp_size=tp, moe_tp_size=tp,
    )  # fmt: skip
    assert case.spec.gpu_memory_utilization == fraction


@pytest.mark.parametrize("backend", ["trtllm", "sglang"])
def test_deepseek_r1_fp8_on_four_b200_fits_as_inferencex_launched_it(backend: str) -> None:
    row = make_row(
        **DEEPSEEK, backend=backend, tp_size="4", moe_tp_size="4", isl="8192", osl="1024",
        batch_size="8",
    )  # fmt: skip
    assert isinstance(map_aic_row(row), AicCase)


@pytest.mark.shared
def test_every_aggregated_row_is_predicted_but_the_gb200_disaggregated_runs() -> None:
    """Of the 2,195 agg rows, only the 55 InferenceX GB200 rows (disaggregated runs,
    predicted by the disaggregated mapping) are left to it; attention-DP rows and
    DeepSeek-R1 FP8 on 4 x B200 are predicted."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    rows = load_aic(path)
    handed = [r for r in rows if isinstance(r, AicSkipped) and r.reason.startswith("disagg")]
    gb200 = [r for r in handed if not r.reason.startswith("disagg mode")]
    assert len(rows) - len(handed) + len(gb200) == 2195
    assert len(gb200) == 55
    assert all(r.reason.startswith("disaggregated GB200 run") for r in gb200)
    cases = [r for r in rows if isinstance(r, AicCase)]
    assert len(cases) == 2140
    # TensorRT-LLM's DeepSeek; vLLM's 36 MiniMax `tp: 2, ep: 2` rows are not (aic._layout);
    # 18 of them written TP-only, run by the scripts of 2025-11-02 (aic_script_layout)
    assert sum(c.spec.attention_dp_size > 1 for c in cases) == 47 + 18


@pytest.mark.parametrize(("clients", "cap"), [("64", 128), ("128", 512), ("512", 512)])
def test_sglang_running_cap_is_the_scripts_or_the_rows_concurrency(clients: str, cap: int):
    """The plain script's cap is its sweep's highest CONC (64 at TP8 1k/1k); the rows beyond
    it are the MTP sweep's, whose script caps at 512 (aic_agg_sweeps docstring)."""
    e = engine_of(
        backend="sglang", model_path="deepseek-ai/DeepSeek-R1", batch_size=clients,
        tp_size="8", gemm_quant_mode="fp8_block", moe_quant_mode="fp8_block",
    )  # fmt: skip
    assert e["max_num_seqs"] == cap


def test_trtllm_delay_batching_as_the_scripts_launch_it() -> None:
    """Llama-70B 1k/1k below TP8 (20 steps / 0.9); DeepSeek FP8 1k/1k from CONC 64 on
    TRT-LLM 1.2 (40 / 0.8); neither elsewhere (aic_launch docstring)."""

    def wait(**changes: str) -> tuple[int, float]:
        e = mapped(**{"backend": "trtllm", "isl": "1024", "osl": "1024", **changes}).spec.engine
        return e.batch_wait_timeout_iters, e.batch_wait_max_tokens_ratio

    llama = {"model_path": "meta-llama/Llama-3.1-70B-Instruct", "gemm_quant_mode": "fp8"}
    assert wait(**llama, tp_size="4") == (20, 0.9)
    assert wait(**llama, tp_size="8") == (0, 0.0)
    assert wait(**llama, tp_size="4", osl="8192") == (0, 0.0)
    deepseek = {
        "model_path": "deepseek-ai/DeepSeek-R1", "tp_size": "8", "gemm_quant_mode": "fp8_block",
        "moe_quant_mode": "fp8_block", "backend_version": "1.2.0rc6.post2",
    }  # fmt: skip
    assert wait(**deepseek, batch_size="64") == (40, 0.8)
    assert wait(**deepseek, batch_size="32") == (0, 0.0)
    assert wait(**{**deepseek, "backend_version": "1.1.0rc2.post2"}, batch_size="64") == (0, 0.0)


def test_the_fp8_gemms_of_a_block_scaled_checkpoint_are_fp8_block() -> None:
    """DeepSeek-R1 / V3 as published carry 128 x 128 weight scales (config.json
    `weight_block_size`); AIC calls their GEMMs `fp8`."""
    deepseek = {"model_path": "deepseek-ai/DeepSeek-R1", "tp_size": "8", "moe_tp_size": "8"}
    case = mapped(**deepseek, gemm_quant_mode="fp8", moe_quant_mode="fp8_block")
    assert (case.spec.precision, case.note) == ("fp8_block", "")
    assert mapped(**deepseek, gemm_quant_mode="fp8", moe_quant_mode="fp8").spec.precision == (
        "fp8_block"
    )
    assert mapped(gemm_quant_mode="fp8").spec.precision == "fp8"  # Llama: per-tensor
