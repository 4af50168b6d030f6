"""The disaggregated AIC rows as fleets: the mapping rules and one simulated row."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic import AicSkipped
from llmsizer.calibrate.aic_disagg import AicDisaggCase, map_disagg_row, predict_disagg

ROW = {
    "id": "llama70b_h100_trtllm_disagg_1024x1024_c16",
    "silicon_data_source": "db-dump/2026-04-27; config_id=1; silicon_concurrency=16; x",
    "backend": "trtllm",
    "model_path": "meta-llama/Llama-3.1-70B-Instruct",
    "system": "h100_sxm",
    "precision": "fp8",
    "mode": "disagg",
    "isl": "1024",
    "osl": "128",
    "gemm_quant_mode": "fp8",
    "moe_quant_mode": "",
    "prefill_batch_size": "2",
    "prefill_num_workers": "1",
    "prefill_tp_size": "4",
    "prefill_pp_size": "1",
    "prefill_attention_dp_size": "1",
    "prefill_moe_tp_size": "",
    "prefill_moe_ep_size": "",
    "decode_batch_size": "8",
    "decode_num_workers": "2",
    "decode_tp_size": "2",
    "decode_pp_size": "1",
    "decode_attention_dp_size": "1",
    "decode_moe_tp_size": "",
    "decode_moe_ep_size": "",
    "silicon_ttft_ms": "120.0",
    "silicon_tpot_ms": "20.0",
}


def test_a_row_becomes_two_pools_a_link_and_a_closed_loop() -> None:
    case = map_disagg_row(ROW)
    assert isinstance(case, AicDisaggCase)
    assert (case.num_prefill, case.num_decode) == (1, 2)
    assert case.prefill.tensor_parallel_size == 4 and case.decode.tensor_parallel_size == 2
    assert case.prefill.engine.max_num_seqs == 2 and case.decode.engine.max_num_seqs == 8
    assert case.prefill.concurrency == 16 and case.prefill.num_requests == 160
    assert case.prefill.length_ratio == 0.8
    assert case.link == "nvlink"  # 8 GPUs: one DGX H100's NVLink domain
    wide = map_disagg_row({**ROW, "decode_num_workers": "4"})
    assert isinstance(wide, AicDisaggCase) and wide.link == "network"  # 12 GPUs: two nodes


def test_the_simulated_row_gives_the_measured_metrics_keys() -> None:
    case = map_disagg_row(ROW)
    assert isinstance(case, AicDisaggCase)
    s = predict_disagg(case)
    assert s["completed"] == 160
    # TTFT holds at least one 1024-token prefill of a 70B model on 4 H100s (~50 ms); TPOT a
    # memory-bound decode step of 35 GB of FP8 weights per GPU at 3.35 TB/s (> 10 ms)
    assert 20 < s["mean_ttft_ms"] < 2000
    assert 10 < s["mean_tpot_ms"] < 100


def test_the_rows_pools_are_the_instances_own_simulators() -> None:
    """Both pools are built by `Instance.simulator`: the calibrated front-end hold is on the
    prefill pool (the stream's first chunk) and off the decode pool (applied once, joined)."""
    from llmsizer.instance.disagg import make_disaggregated
    from llmsizer.instance.instance import make_instance

    case = map_disagg_row({**ROW, "system": "b200_sxm", "model_path": "deepseek-ai/DeepSeek-R1",
                           "prefill_tp_size": "8", "decode_tp_size": "8"})  # fmt: skip
    assert isinstance(case, AicDisaggCase)
    d = make_disaggregated(case.prefill, case.decode, num_prefill=1, num_decode=2, link="nvlink")
    from llmsizer.perf.calibrated import calibrated_efficiency

    delay = make_instance(case.prefill).first_token_delay_s
    # the shipped TensorRT-LLM Blackwell fit's hold of a MoE model (DeepSeek): both holds
    shipped = calibrated_efficiency("trtllm", "blackwell")
    assert delay == shipped.first_token_hold_s(True) > shipped.first_token_delay_s > 0
    assert d.prefill[0].first_token_delay_s == delay


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"decode_moe_ep_size": "4"}, "decode layout inconsistent: moe_tp_size 1 x moe_ep_size 4"),
        ({"prefill_pp_size": "2"}, "pipeline parallelism (prefill_pp_size 2)"),
        ({"system": "mi355x"}, "GPU mi355x not in the catalog"),
        (
            {"prefill_tp_size": "20", "decode_tp_size": "20"},
            "layout not recorded (prefill_tp_size = decode_tp_size = 20",
        ),
        ({"prefill_moe_ep_size": "0"}, "rejected by the model: expert_parallel_size 0"),
        ({"model_path": "nobody/NoModel-1B"}, "not in the catalog"),
    ],
)
def test_rows_outside_the_model_are_skipped_with_a_reason(change: dict, reason: str) -> None:  # type: ignore[type-arg]
    skipped = map_disagg_row({**ROW, **change})
    assert isinstance(skipped, AicSkipped) and reason in skipped.reason


DSR1 = {
    **ROW,
    "system": "b200_sxm",
    "model_path": "deepseek-ai/DeepSeek-R1",
    "precision": "fp4",
    "gemm_quant_mode": "nvfp4",
    "moe_quant_mode": "nvfp4",
}


@pytest.mark.parametrize(
    ("prefill", "decode", "want"),
    [
        # TRT-LLM B200 NVFP4 (74 rows): prefill TP4 EP4, decode TP8 with moe_tp 2 x EP 4
        (("4", "1", "1", "4"), ("8", "1", "2", "4"), ((4, 1, 4), (8, 1, 4))),
        # SGLang B200 (73 rows): TP8 EP8 in both pools
        (("8", "1", "1", "8"), ("8", "1", "1", "8"), ((8, 1, 8), (8, 1, 8))),
        # TRT-LLM B300 (53 rows): pure TP, moe_tp = tp
        (("4", "1", "4", "1"), ("8", "1", "8", "1"), ((4, 1, 1), (8, 1, 1))),
        # empty MoE cells (dense models' rows): EP 1 (on DeepSeek-R1's weights TP 4: on 2
        # B200 TensorRT-LLM's profiled runtime leaves no KV, perf.memory.trtllm_runtime_bytes)
        (("4", "1", "", ""), ("4", "", "", ""), ((4, 1, 1), (4, 1, 1))),
        # TRT-LLM GB200 dump rows: prefill DEP4, decode DEP32 (attention DP, experts over all)
        (("1", "4", "1", "4"), ("1", "32", "1", "32"), ((1, 4, 4), (1, 32, 32))),
        # SGLang: attention DP 8 with the experts tensor-parallel over the 8 GPUs
        (("1", "8", "8", "1"), ("8", "1", "8", "1"), ((1, 8, 1), (8, 1, 1))),
        # an exported row's decode worker of 48 GPUs: one DEP48 worker (module docstring)
        (("4", "1", "1", "4"), ("48", "1", "12", "4"), ((4, 1, 4), (1, 48, 48))),
    ],
)
def test_each_pool_reads_its_own_expert_parallel_layout(
    prefill: tuple[str, ...], decode: tuple[str, ...], want: tuple[tuple[int, ...], ...]
) -> None:
    columns = ("tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")
    row = dict(DSR1)
    for pool, cells in (("prefill", prefill), ("decode", decode)):
        row |= {f"{pool}_{c}": v for c, v in zip(columns, cells, strict=True)}
    case = map_disagg_row(row)
    assert isinstance(case, AicDisaggCase)
    got = tuple(
        (spec.tensor_parallel_size, spec.attention_dp_size, spec.expert_parallel_size)
        for spec in (case.prefill, case.decode)
    )
    assert got == want


def test_a_layout_for_experts_on_a_dense_model_is_rejected_when_mapped_or_simulated() -> None:
    row = {**ROW, "decode_moe_tp_size": "1", "decode_moe_ep_size": "2"}
    skipped = map_disagg_row(row)  # check_fit builds the pools: refused without simulating
    assert isinstance(skipped, AicSkipped)
    assert skipped.reason.startswith("rejected by the model: decode: expert_parallel_size 2")
    assert "has no experts" in skipped.reason
    case = map_disagg_row(row, check_fit=False)
    assert isinstance(case, AicDisaggCase) and case.decode.expert_parallel_size == 2
    with pytest.raises(ValueError, match="has no experts"):
        predict_disagg(case)


def test_moe_cells_of_zero_are_the_engines_default_no_expert_parallelism() -> None:
    # vLLM gap rows `..._tpnone_epnone_...`: prefill DP4 (tp 1), decode TP4, both 0 / 0
    row = {
        **ROW,
        "model_path": "Qwen/Qwen3-235B-A22B-FP8",
        "backend": "vllm",
        "prefill_attention_dp_size": "4",
        "prefill_tp_size": "1",
        "decode_tp_size": "4",
    }
    row |= {f"{p}_moe_{c}_size": "0" for p in ("prefill", "decode") for c in ("tp", "ep")}
    case = map_disagg_row(row)
    assert isinstance(case, AicDisaggCase)
    assert (case.prefill.attention_dp_size, case.prefill.expert_parallel_size) == (4, 1)
    assert (case.decode.tensor_parallel_size, case.decode.expert_parallel_size) == (4, 1)


def test_rows_without_worker_counts_are_marked() -> None:
    case = map_disagg_row({**ROW, "prefill_num_workers": "", "decode_num_workers": ""})
    assert isinstance(case, AicDisaggCase)
    assert (case.num_prefill, case.num_decode, case.workers_given) == (1, 1, False)
    given = map_disagg_row(ROW)
    assert isinstance(given, AicDisaggCase) and given.workers_given


def test_gb300_rows_map_onto_the_gb300_nvl72_rack() -> None:
    case = map_disagg_row({**DSR1, "system": "gb300"})
    assert isinstance(case, AicDisaggCase)
    assert case.prefill.gpu == "gb300" and case.link == "nvlink"  # 8 GPUs of a 72-GPU domain


def test_a_folds_factors_price_both_pools() -> None:
    """Halving every achieved fraction of peak slows the decode steps: TPOT rises."""
    import dataclasses

    from llmsizer.perf.calibrated import calibrated_efficiency

    case = map_disagg_row({**ROW, "silicon_data_source": "silicon_concurrency=4"})
    assert isinstance(case, AicDisaggCase)
    base = calibrated_efficiency("trtllm", "hopper")
    slow = dataclasses.replace(
        base,
        **{k: v / 2 for k, v in base.as_dict().items() if k.endswith("_efficiency")},
    )
    fast_run, slow_run = predict_disagg(case, base), predict_disagg(case, slow)
    assert slow_run["mean_tpot_ms"] > 1.5 * fast_run["mean_tpot_ms"]


def test_run_means_are_summarize_means() -> None:
    from llmsizer.calibrate.aic_disagg import run_means
    from llmsizer.instance.disagg import make_disaggregated
    from llmsizer.metrics import summarize
    from llmsizer.workload import make_workload

    case = map_disagg_row({**ROW, "silicon_data_source": "silicon_concurrency=4"})
    assert isinstance(case, AicDisaggCase)
    fleet = make_disaggregated(case.prefill, case.decode, num_prefill=1, num_decode=2,
                               link="nvlink")  # fmt: skip
    records = fleet.run(make_workload(case.prefill.workload_spec(40))).records
    means, full = run_means(records), summarize(records)
    assert means["completed"] == full["completed"] == 40
    for m in ("mean_ttft_ms", "mean_tpot_ms"):
        assert means[m] == pytest.approx(full[m], rel=1e-12)


def test_attention_dp_pools_count_all_their_gpus_for_the_link_and_simulate() -> None:
    dp_pools = {
        "silicon_data_source": "db-dump; silicon_concurrency=4; x",
        "prefill_num_workers": "1",
        "decode_num_workers": "1",
        "prefill_tp_size": "1",
        "prefill_attention_dp_size": "4",
        "prefill_moe_tp_size": "1",
        "prefill_moe_ep_size": "4",
        "decode_tp_size": "1",
        "decode_attention_dp_size": "8",
        "decode_moe_tp_size": "1",
        "decode_moe_ep_size": "8",
    }
    case = map_disagg_row({**DSR1, **dp_pools})
    assert isinstance(case, AicDisaggCase)
    assert case.link == "network"  # 4 + 8 GPUs: more than one 8-GPU B200 node
    rack = map_disagg_row({**DSR1, **dp_pools, "system": "gb200"})
    assert isinstance(rack, AicDisaggCase) and rack.link == "nvlink"  # inside the NVL72
    s = predict_disagg(case)
    assert s["completed"] == 40
    # a DeepSeek decode step reads at least the active experts' and attention weights
    assert s["mean_tpot_ms"] > 1 and s["mean_ttft_ms"] > s["mean_tpot_ms"]


def test_trtllm_decode_pools_capture_padded_graphs_up_to_their_batch() -> None:
    """The srt-slurm recipes' decode `cuda_graph_config`: padded, up to the batch per rank;
    the prefill pool and a row without a batch cell keep the preset's graphs."""
    from llmsizer.instance import make_instance

    case = map_disagg_row({**ROW, "decode_batch_size": "256"})
    assert isinstance(case, AicDisaggCase)
    engine = case.decode.engine
    assert engine.cudagraph_padding is True and engine.max_cudagraph_capture_size == 256
    assert case.prefill.engine.max_cudagraph_capture_size is None
    graphs = make_instance(case.decode, max_model_len=2048).step.cuda_graphs
    assert graphs is not None and graphs.run(200, decode_only=True) == (256, False)  # not eager
    bare = map_disagg_row(
        {**ROW, "decode_batch_size": "", "silicon_data_source": "x; silicon_concurrency=16; y"}
    )
    assert isinstance(bare, AicDisaggCase) and bare.decode.engine.max_cudagraph_capture_size is None
    sglang = map_disagg_row({**ROW, "backend": "sglang"})
    assert (
        isinstance(sglang, AicDisaggCase)
        and sglang.decode.engine.max_cudagraph_capture_size is None
    )


def test_deepseek_fp8_pools_run_the_rows_block_fp8_kernel_as_the_agg_rows_do() -> None:
    """Both pools of a TensorRT-LLM DeepSeek FP8 row on GB200 (a Dynamo 0.8 image, before
    TensorRT-LLM 1.3) are block FP8 through `fp8_swap_ab`; SGLang's, the default kernel."""
    deepseek = {
        **ROW, "model_path": "deepseek-ai/DeepSeek-R1", "system": "gb200",
        "backend_version": "0.8.1.post1", "prefill_tp_size": "8", "decode_tp_size": "8",
        "prefill_moe_tp_size": "8", "decode_moe_tp_size": "8",
    }  # fmt: skip
    case = map_disagg_row(deepseek)
    assert isinstance(case, AicDisaggCase)
    assert (case.prefill.precision, case.decode.precision) == ("fp8_block", "fp8_block")
    assert case.prefill.linear_kernel == case.decode.linear_kernel == "fp8_swap_ab"
    sglang = map_disagg_row({**deepseek, "backend": "sglang"})
    assert isinstance(sglang, AicDisaggCase) and sglang.prefill.linear_kernel is None
