"""Exported disaggregated rows without worker counts, read as the InferenceX sweep that
launched them (`llmsizer.calibrate.aic_launches`): one test per kind of launch, with the
rows' own ids, sources and pool columns (`aic_silicon_calibration.csv`, 2026-03-25 export)."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic import AicSkipped
from llmsizer.calibrate.aic_disagg import AicDisaggCase, map_disagg_row
from llmsizer.calibrate.aic_launch import MTP_ACCEPTANCE, mtp_speculation
from llmsizer.calibrate.aic_launches import (
    inferencex_sweep,
    recipe_decode_batch,
    with_inferencex_launches,
)
from llmsizer.calibrate.aic_sweeps import Pool, Sweep, find_sweep

MODELS = {"dsr1": "deepseek-ai/DeepSeek-R1", "kimi": "moonshotai/Kimi-K2.5"}


def row(system: str, backend: str, precision: str, lengths: str, clients: int, measured: str,
        prefill_gpus: int, decode_gpus: int, model: str = "dsr1") -> dict[str, str]:  # fmt: skip
    """An exported row: one worker's GPUs as each pool's `tp_size`, the prefill's EP in both
    pools, worker counts and batch sizes empty."""
    isl, osl = lengths.split("x")
    quant = "nvfp4" if precision == "fp4" else "fp8"
    r = {
        "id": f"2026_03_25_{model}_{system}_{backend}_{precision}_disagg_{lengths}_c{clients}",
        "silicon_data_source": f"source_file=2026-03-25.csv; model=x; silicon_concurrency="
        f"{clients}; measured={measured}; wip=False",
        "backend": backend, "backend_version": "", "model_path": MODELS[model],
        "system": system, "precision": precision, "mode": "disagg", "isl": isl, "osl": osl,
        "gemm_quant_mode": quant, "moe_quant_mode": quant, "batch_size": "", "tp_size": "",
        "pp_size": "", "attention_dp_size": "", "moe_tp_size": "", "moe_ep_size": "",
        "silicon_ttft_ms": "1000.0", "silicon_tpot_ms": "20.0",
    }  # fmt: skip
    for pool, gpus in (("prefill", prefill_gpus), ("decode", decode_gpus)):
        r |= {f"{pool}_batch_size": "", f"{pool}_num_workers": "", f"{pool}_tp_size": str(gpus),
              f"{pool}_pp_size": "1", f"{pool}_attention_dp_size": "1",
              f"{pool}_moe_tp_size": str(decode_gpus // prefill_gpus) if pool == "decode" else "1",
              f"{pool}_moe_ep_size": str(prefill_gpus)}  # fmt: skip
    return r


def launched(r: dict[str, str]) -> AicDisaggCase:
    (out,) = with_inferencex_launches([r])
    case = map_disagg_row(out)
    assert isinstance(case, AicDisaggCase)
    return case


def layouts(case: AicDisaggCase) -> tuple[tuple[int, int, int, int], ...]:
    """(workers, tp, attention dp, ep) of each pool."""
    return tuple(
        (n, s.tensor_parallel_size, s.attention_dp_size, s.expert_parallel_size)
        for n, s in ((case.num_prefill, case.prefill), (case.num_decode, case.decode))
    )


def test_a_trtllm_row_gets_the_sweep_in_force_when_measured() -> None:
    # ..._gb300_trtllm_fp4_disagg_8192x1024_c2253_tp2_0_ep2_0_1106, measured 2 minutes after
    # 3eb1b779c (DSR1 FP4 GB300 Dynamo TRT, #618) reached main: `conc-list: [2253]`,
    # prefill 14 x (tp 2, ep 2, dp-attn), decode 1 x (tp 16, ep 16, dp-attn), where one
    # worker of each was simulated before (a 100-400 s TTFT against 3.6 s measured)
    r = row("gb300", "trtllm", "fp4", "8192x1024", 2253, "2026-02-03T17:15:06Z", 2, 16)
    case = launched(r)
    assert case.launch == "14P DEP2 + 1D DEP16 (dsr1-fp4-gb300-dynamo-trt @3eb1b779c)"
    assert layouts(case) == ((14, 1, 2, 2), (1, 1, 16, 16))
    assert case.workers_given and case.link == "nvlink"  # 44 GPUs of one NVL72 rack
    # the same run's export of the date alone (`T00:00:00.000Z`) reads the same revision
    same = row("gb300", "trtllm", "fp4", "8192x1024", 2253, "2026-02-03T00:00:00.000Z", 2, 16)
    assert launched(same).launch == case.launch


def test_sglang_rows_on_b200_and_h100_get_their_sweeps() -> None:
    # B200 FP8 1k/1k, 4096 clients: 1 prefill + 5 decode workers of 8 GPUs, all DEP8
    b200 = launched(row("b200_sxm", "sglang", "fp8", "1024x1024", 4096, "2026-03-18T21:01:05Z",
                        8, 8))  # fmt: skip
    assert b200.launch.startswith("1P DEP8 + 5D DEP8 (dsr1-fp8-b200-dynamo-sglang @")
    assert layouts(b200) == ((1, 1, 8, 8), (5, 1, 8, 8))
    # H100 1k/8k, 16 clients: only the TEP sweep (1 prefill, 2 decode workers of TP16 over
    # two nodes, `ep: 1`); 48 GPUs reach each other over the network
    h100 = launched(row("h100_sxm", "sglang", "fp8", "1024x8192", 16, "2026-02-13T03:10:06Z",
                        16, 16))  # fmt: skip
    assert h100.launch.startswith("1P TP16 + 2D TP16 (dsr1-fp8-h100-dynamo-sglang @")
    assert layouts(h100) == ((1, 16, 1, 1), (2, 16, 1, 1)) and h100.link == "network"


def test_several_sweeps_of_a_revision_give_the_smallest_fleet() -> None:
    # H100 1k/8k, 4 clients ran in both the TEP sweep (1P + 2D TP16, 48 GPUs) and the DEP
    # one (1P TP16 + 1D DEP16, 32 GPUs) of the config: the smallest
    case = launched(row("h100_sxm", "sglang", "fp8", "1024x8192", 4, "2026-02-13T03:10:06Z",
                        16, 16))  # fmt: skip
    assert case.launch.startswith("1P TP16 + 1D DEP16 ")
    assert layouts(case) == ((1, 16, 1, 1), (1, 1, 16, 16))


def test_a_pull_request_run_gets_the_revision_that_merged_it() -> None:
    # Kimi K2.5 GB200 8k/1k measured 2026-04-02, config merged 2026-04-18 (e8924a6a4, #1026):
    # no revision before the run holds it
    r = row("gb200", "trtllm", "fp4", "8192x1024", 4, "2026-04-02T05:37:55Z", 4, 8, "kimi")
    case = launched(r)
    assert case.launch == "1P DEP4 + 4D TEP8 (kimik2.5-fp4-gb200-dynamo-trt @e8924a6a4)"
    assert layouts(case) == ((1, 1, 4, 4), (4, 8, 1, 8))


def test_a_row_only_an_mtp_sweep_ran_gets_it_labelled() -> None:
    # GB300 FP8 1k/1k, 8 clients: only `spec-decoding: mtp` ran 8 (STP: 24, 48, ...)
    r = row("gb300", "trtllm", "fp8", "1024x1024", 8, "2026-02-07T19:53:37Z", 4, 8)
    sweep = inferencex_sweep(r)
    assert isinstance(sweep, Sweep) and sweep.mtp
    case = launched(r)
    assert case.launch.startswith("1P DEP4 + 4D TEP8 MTP (dsr1-fp8-gb300-dynamo-trt @")


def test_rows_no_sweep_names_keep_one_worker_of_each_pool() -> None:
    # B300 FP8 8k/1k, 72 clients on 4 + 8 GPUs: in no revision's conc-list
    r = row("b300_sxm", "trtllm", "fp8", "8192x1024", 72, "2026-02-12T05:04:10Z", 4, 8)
    reason = inferencex_sweep(r)
    assert reason == "no InferenceX sweep ran 72 clients on 4-GPU prefill and 8-GPU decode workers"
    case = launched(r)
    assert not case.workers_given and case.launch == "" and case.num_decode == 1
    other = {**r, "system": "h200_sxm"}  # no config read for it: left alone, then skipped
    (left,) = with_inferencex_launches([other])
    assert left["launch"] == "" and isinstance(map_disagg_row(left), AicSkipped)


def test_rows_with_worker_counts_are_left_alone() -> None:
    r = row("gb300", "trtllm", "fp4", "8192x1024", 2253, "2026-02-03T17:15:06Z", 2, 16)
    r |= {"prefill_num_workers": "3", "decode_num_workers": "1"}
    (same,) = with_inferencex_launches([r])
    assert same == {**r, "launch": ""}


def test_find_sweep_tries_in_force_then_later_then_earlier_revisions() -> None:
    def sweep(clients: int, decode_workers: int) -> Sweep:
        return Sweep((clients,), Pool(1, 4), Pool(decode_workers, 8))

    versions = [
        ("2026-01-01T00:00:00Z", (sweep(8, 1),)),
        ("2026-02-01T00:00:00Z", (sweep(16, 2),)),
        ("2026-03-01T00:00:00Z", (sweep(8, 3), sweep(32, 4))),
    ]
    everything = lambda s: True  # noqa: E731
    assert find_sweep([versions], "2026-02-10T00:00:00Z", 16, everything) == sweep(16, 2)
    assert find_sweep([versions], "2026-02-10T00:00:00Z", 8, everything) == sweep(8, 3)
    assert find_sweep([versions], "2026-01-15T23:59:59Z", 32, everything) == sweep(32, 4)
    assert find_sweep([versions], "2026-04-01T00:00:00Z", 16, everything) == sweep(16, 2)
    assert find_sweep([versions], "2026-02-10T00:00:00Z", 64, everything) == []
    # two configs in force together; two fits are returned unless `pick` chooses
    both = [versions, [("2026-02-05T00:00:00Z", (sweep(16, 5),))]]
    assert find_sweep(both, "2026-02-10T00:00:00Z", 16, everything) == [sweep(16, 2), sweep(16, 5)]
    assert find_sweep(both, "2026-02-10T00:00:00Z", 16, everything, lambda f: f[-1]) == sweep(16, 5)


def test_an_mtp_sweeps_rows_speculate_with_its_draft_tokens() -> None:
    # GB300 FP8 1k/1k, 8 clients: the MTP sweep's recipe `..._mtp3.yaml` (3 draft tokens)
    r = row("gb300", "trtllm", "fp8", "1024x1024", 8, "2026-02-07T19:53:37Z", 4, 8)
    sweep = inferencex_sweep(r)
    assert isinstance(sweep, Sweep) and sweep.mtp_tokens is not None
    spec = launched(r).decode.speculative
    assert spec is not None and spec.method == "mtp"
    assert spec.num_speculative_tokens == sweep.mtp_tokens
    # a DeepSeek MTP head on random prompts (vLLM PR 41044): acceptance length 2.14 at k 2
    assert spec.acceptance_rate == MTP_ACCEPTANCE["deepseek"]
    assert 1 + spec.acceptance_rate + spec.acceptance_rate**2 == pytest.approx(2.14, abs=0.01)
    assert launched(r).prefill.speculative is None  # the prefill pool computes prompts


def test_a_sweep_without_mtp_does_not_speculate() -> None:
    r = row("gb300", "trtllm", "fp4", "8192x1024", 2253, "2026-02-03T17:15:06Z", 2, 16)
    assert launched(r).decode.speculative is None


def test_mtp_draft_tokens_come_from_the_launch_or_the_engines_recipes() -> None:
    # TensorRT-LLM: the recipe's `mtpK`; SGLang's DeepSeek recipes: speculative-num-steps 2
    assert mtp_speculation("trtllm", "deepseek-r1", "1")["num_speculative_tokens"] == 1
    assert mtp_speculation("sglang", "deepseek-r1", "")["num_speculative_tokens"] == 2
    assert mtp_speculation("trtllm", "deepseek-r1", "")["num_speculative_tokens"] == 3
    # a family without a published MTP acceptance keeps the speculative default
    assert "acceptance_rate" not in mtp_speculation("trtllm", "glm-5", "1")


def test_a_trtllm_recipe_names_its_decode_workers_batch() -> None:
    # srt-slurm's `ctx1dep4_gen1dep16_batch32_eplb0_mtp3.yaml` sets decode max_batch_size 32
    name = "recipes/trtllm/h100-fp8/1k1k/stp/ctx1_gen3_tep16_batch16_eplb0_mtp0.yaml"
    assert recipe_decode_batch("trtllm", name) == 16
    assert recipe_decode_batch("trtllm", "recipes/b200-fp8/1k1k/mtp/max-tpt-dep8-1p5d.yaml") is None
    assert recipe_decode_batch("sglang", "x/ctx1_gen3_tep16_batch16_eplb0_mtp0.yaml") is None


def test_a_launched_row_gets_its_recipes_decode_batch_per_rank() -> None:
    r = row("gb300", "trtllm", "fp8", "1024x1024", 8, "2026-02-07T19:53:37Z", 4, 8)
    sweep = inferencex_sweep(r)
    assert isinstance(sweep, Sweep) and sweep.decode_batch is not None
    assert launched(r).decode.engine.max_num_seqs == sweep.decode_batch


def test_a_dump_rows_derived_decode_batch_gives_way_to_its_launch() -> None:
    # dsr1_h100_trtllm_fp8_disagg_1024x1024_c6_cfg494: AIC wrote 6 clients // 3 workers = 2;
    # the sweep that ran 6 clients on 1 x DEP16 + 3 x TEP16 is `..._gen3_tep16_batch1_...`
    r = row("h100_sxm", "trtllm", "fp8", "1024x1024", 6, "2026-02-08T00:00:00.000Z", 16, 16)
    r |= {
        "silicon_data_source": "db-dump/2026-04-27; config_id=494; silicon_concurrency=6; "
        "measured=2026-02-08T00:00:00.000Z; workflow_run_id=269",
        "model_path": "deepseek-ai/DeepSeek-V3",
        "prefill_batch_size": "1", "prefill_num_workers": "1", "prefill_tp_size": "1",
        "prefill_attention_dp_size": "16", "prefill_moe_tp_size": "1", "prefill_moe_ep_size": "16",
        "decode_batch_size": "2", "decode_num_workers": "3", "decode_tp_size": "16",
        "decode_attention_dp_size": "1", "decode_moe_tp_size": "1", "decode_moe_ep_size": "16",
    }  # fmt: skip
    (out,) = with_inferencex_launches([r])
    assert out["decode_batch_size"] == "1" and out["launch"] == ""
    case = map_disagg_row(out)
    assert isinstance(case, AicDisaggCase) and case.decode.engine.max_num_seqs == 1
    sglang = {**r, "backend": "sglang"}  # no SGLang recipe names its batch: left as written
    (kept,) = with_inferencex_launches([sglang])
    assert kept["decode_batch_size"] == "2"
