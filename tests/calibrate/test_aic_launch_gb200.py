"""InferenceX GB200 rows without a layout, read as the sweep that launched them: one test
per kind of lost layout, with the rows' own ids and sources."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic import AicSkipped, map_aic_row
from llmsizer.calibrate.aic_disagg import AicDisaggCase, map_disagg_row
from llmsizer.calibrate.aic_launch_gb200 import launched_sweep, lost_layout, with_launched_layouts

POOLS = {
    f"{pool}_{column}": ""
    for pool in ("prefill", "decode")
    for column in ("batch_size", "num_workers", "tp_size", "pp_size", "attention_dp_size",
                   "moe_tp_size", "moe_ep_size")
}  # fmt: skip


def row(mode: str, backend: str, quant: str, isl: int, clients: int, measured: str,
        tp: str = "", pools: str = "") -> dict[str, str]:  # fmt: skip
    """A GB200 DeepSeek-R1 row of InferenceX's 2026-04-06 export; `pools` fills every
    prefill/decode layout column."""
    r = {
        "id": f"2026_04_06_deepseek_r1_gb200_{backend}_{quant}_{mode}_{isl}x1024_c{clients}",
        "silicon_data_source": f"source_file=2026-04-06.csv; model=DeepSeek-R1; "
        f"silicon_concurrency={clients}; measured={measured}T00:00:00.000Z; wip=False",
        "backend": backend, "backend_version": "", "model_path": "deepseek-ai/DeepSeek-R1",
        "system": "gb200", "precision": "fp4" if quant == "nvfp4" else "fp8", "mode": mode,
        "isl": str(isl), "osl": "1024", "gemm_quant_mode": quant, "moe_quant_mode": quant,
        "batch_size": str(clients) if mode == "agg" else "", "tp_size": tp, "pp_size": "1",
        "attention_dp_size": "1" if mode == "agg" else "", "moe_tp_size": "1" if tp else "",
        "moe_ep_size": tp, "silicon_ttft_ms": "1000.0", "silicon_tpot_ms": "20.0",
    }  # fmt: skip
    counts = ("batch_size", "num_workers", "pp_size")
    return r | {k: "" if k.split("_", 1)[1] in counts else pools for k in POOLS}


def layouts(case: AicDisaggCase) -> tuple[tuple[int, int, int, int], ...]:
    """(workers, tp, attention dp, ep) of each pool."""
    return tuple(
        (n, s.tensor_parallel_size, s.attention_dp_size, s.expert_parallel_size)
        for n, s in ((case.num_prefill, case.prefill), (case.num_decode, case.decode))
    )


def mapped(r: dict[str, str]) -> AicDisaggCase | AicSkipped:
    (launched,) = with_launched_layouts([r])
    return map_disagg_row(launched)


def test_an_agg_row_with_both_pools_gpus_is_its_disaggregated_sweep() -> None:
    # ..._agg_1024x1024_c1075_tp20_ep1_15: 1 context worker of 4 GPUs + 1 DEP16 generation
    # worker = 20 GPUs (`submit_disagg.sh mtp=off dep 1 1 16 ... "1075"`); tp36 is DEP32
    agg = row("agg", "trtllm", "nvfp4", 1024, 1075, "2025-11-17", tp="20")
    assert lost_layout(agg) == (True, 20)
    skipped = map_aic_row(agg)
    assert isinstance(skipped, AicSkipped) and skipped.reason.startswith("disaggregated")
    case = mapped(agg)
    assert isinstance(case, AicDisaggCase) and case.launch == "1P DEP4 + 1D DEP16"
    assert layouts(case) == ((1, 1, 4, 4), (1, 1, 16, 16))
    wide = mapped(row("agg", "trtllm", "nvfp4", 1024, 1075, "2025-11-17", tp="36"))
    assert isinstance(wide, AicDisaggCase) and layouts(wide)[1] == (1, 1, 32, 32)


def test_a_disagg_row_with_both_pools_gpus_in_each_pool_is_its_sweep() -> None:
    # SGLang FP8 8k/1k, 72 GPUs: `submit_disagg.sh 12 6 6 1` = 6 prefill workers of 2 nodes
    # (DEP8) and 1 decode worker of 6 nodes (DEP24), every worker attention data parallel
    r = row("disagg", "sglang", "fp8", 8192, 1024, "2025-12-05", pools="72")
    assert lost_layout(r) == (True, 72)
    case = mapped(r)
    assert isinstance(case, AicDisaggCase)
    assert layouts(case) == ((6, 1, 8, 8), (1, 1, 24, 24))
    assert case.link == "nvlink"  # 72 GPUs: one NVL72 rack


def test_tensor_parallel_sweeps_list_clients_per_generation_worker() -> None:
    # 564 clients on 36 GPUs: the TEP sweep `tep 1 4 8 ... "1 ... 141"` x 4 workers
    case = mapped(row("disagg", "trtllm", "nvfp4", 1024, 564, "2025-12-05", pools="36"))
    assert isinstance(case, AicDisaggCase)
    assert layouts(case) == ((1, 4, 1, 4), (4, 8, 1, 8))


def test_all_one_sglang_rows_are_the_sweep_in_force_on_their_date() -> None:
    # the config wrote tp 1 / ep 1 ("do nothing: hardcoded"); 576 clients at 8k/1k ran
    # only in the November sweep (6 x DEP8 + DEP24); 8 clients on 2025-12-21 in the
    # low-latency one (1 x DEP4 + 1 x DEP4)
    nov = row("disagg", "sglang", "fp8", 8192, 576, "2025-12-15", pools="1")
    assert lost_layout(nov) == (True, None)
    case = mapped(nov)
    assert isinstance(case, AicDisaggCase) and layouts(case) == ((6, 1, 8, 8), (1, 1, 24, 24))
    low = mapped(row("disagg", "sglang", "fp8", 8192, 8, "2025-12-21", pools="1"))
    assert isinstance(low, AicDisaggCase) and layouts(low) == ((1, 1, 4, 4), (1, 1, 4, 4))
    # DeepSeek FP8 under attention DP on 4 GB200s fits only at SGLang's 0.95 (182.6 GB of
    # weights per GPU of 198.7 GB)
    assert low.prefill.gpu_memory_utilization == pytest.approx(0.95)


@pytest.mark.parametrize(
    ("r", "reason"),
    [
        # 4096 clients at 1k/1k in two SGLang sweeps of 2025-12-01 (2P DEP8 + DEP32 and
        # 3P DEP8 + DEP48) and the row records no GPU count
        (row("disagg", "sglang", "fp8", 1024, 4096, "2025-12-21", pools="1"),
         "2 InferenceX GB200 sweeps ran 4096 clients"),
        (row("disagg", "trtllm", "nvfp4", 1024, 999, "2025-12-05", pools="36"),
         "no InferenceX GB200 mtp-off sweep ran 999 clients on 36 GPUs"),
    ],
)  # fmt: skip
def test_rows_no_single_sweep_names_are_refused_with_the_reason(
    r: dict[str, str], reason: str
) -> None:
    skipped = mapped(r)
    assert isinstance(skipped, AicSkipped) and reason in skipped.reason


def test_a_row_only_an_mtp_sweep_ran_gets_it_labelled() -> None:
    # 2252 clients on 12 GPUs: only `mtp=on dep 1 1 8 ... "2252"` (the rows do not say
    # whether MTP ran: `aic_launches` reads the other systems so)
    case = mapped(row("agg", "trtllm", "nvfp4", 1024, 2252, "2025-11-17", tp="12"))
    assert isinstance(case, AicDisaggCase) and case.launch == "1P DEP4 + 1D DEP8 MTP"
    assert layouts(case) == ((1, 1, 4, 4), (1, 1, 8, 8))
    # its decode pool speculates with the script's `gen_mtp_size` 1 (`... "0.8" 1 0 "2252"`)
    spec = case.decode.speculative
    assert spec is not None and spec.method == "mtp" and spec.num_speculative_tokens == 1


def test_rows_that_kept_their_layout_are_left_alone() -> None:
    kept = row("disagg", "trtllm", "nvfp4", 1024, 1075, "2025-12-05")
    kept |= {"prefill_tp_size": "4", "decode_tp_size": "16"}
    assert lost_layout(kept) == (False, None)
    gap = {**kept, "silicon_data_source": "source_file=/Users/x/aic-auto-gap-analysis/a.csv"}
    assert lost_layout(gap) == (False, None)
    sweep = launched_sweep(kept, 20)  # the lookup itself still names the launch
    assert not isinstance(sweep, str) and sweep.label == "1P DEP4 + 1D DEP16"
    (same,) = with_launched_layouts([kept])
    assert same["launch"] == "" and same["decode_tp_size"] == "16"


def test_sglang_fp8_launch_script_pools_run_deepep_low_latency() -> None:
    # Dynamo gb200-fp8.sh (ai-dynamo/dynamo @ 085194da): `--enable-deepep-moe --deepep-mode
    # low_latency` on the prefill and the decode workers, both DEP; the FP4 sweeps' configs
    # are not public: their pools keep the gather, as the TensorRT-LLM sweeps' launch rows do
    case = mapped(row("disagg", "sglang", "fp8", 8192, 1024, "2025-12-05", pools="72"))
    assert isinstance(case, AicDisaggCase)
    assert case.prefill.moe_a2a_backend == case.decode.moe_a2a_backend == "deepep_low_latency"
    fp4 = mapped(row("disagg", "sglang", "nvfp4", 1024, 512, "2025-12-20", pools="1"))
    assert isinstance(fp4, AicDisaggCase) and fp4.decode.moe_a2a_backend is None
    trt = mapped(row("agg", "trtllm", "nvfp4", 1024, 1075, "2025-11-17", tp="36"))
    assert isinstance(trt, AicDisaggCase) and trt.decode.moe_a2a_backend is None
