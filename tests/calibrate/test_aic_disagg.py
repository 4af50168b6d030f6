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
    # the shipped TensorRT-LLM Blackwell fit's hold (~0.15 s)
    assert delay == calibrated_efficiency("trtllm", "blackwell").first_token_delay_s > 0
    assert d.prefill[0].first_token_delay_s == delay


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"decode_moe_ep_size": "8"}, "expert parallelism"),
        ({"prefill_attention_dp_size": "4"}, "attention data parallelism"),
        ({"system": "mi355x"}, "GPU mi355x not in the catalog"),
        ({"decode_tp_size": "32"}, "wide-EP / attention-DP layout (decode_tp_size 32"),
        ({"prefill_tp_size": "72"}, "wide-EP / attention-DP layout (prefill_tp_size 72"),
        ({"model_path": "nobody/NoModel-1B"}, "not in the catalog"),
    ],
)
def test_rows_outside_the_model_are_skipped_with_a_reason(change: dict, reason: str) -> None:  # type: ignore[type-arg]
    skipped = map_disagg_row({**ROW, **change})
    assert isinstance(skipped, AicSkipped) and reason in skipped.reason
