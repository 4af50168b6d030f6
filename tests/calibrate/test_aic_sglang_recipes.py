"""SGLang disaggregated rows get their srt-slurm recipe's worker settings
(`llmsizer.calibrate.aic_sglang_recipes`): the table's arithmetic per attention-DP rank,
a recipe read at the commit the runs used, and the settings reaching the fleet's workers."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from llmsizer.calibrate.aic_disagg import AIC_SYSTEMS, AicDisaggCase, map_disagg_row
from llmsizer.calibrate.aic_launches import inferencex_sweep, with_inferencex_launches
from llmsizer.calibrate.aic_sglang_recipes import (
    PoolSettings,
    pool_settings,
    recipe_columns,
    sglang_recipe,
)
from llmsizer.calibrate.aic_sweeps import Sweep
from llmsizer.instance.disagg import make_disaggregated
from llmsizer.specs import get_system
from tests.calibrate.test_aic_launches import row

H100_DEP = "recipes/h100/1k8k/stp/h100-fp8-1p1d-max-dep.yaml"  # 1P TP16 + 1D DEP16


def line(pool: str, **cells: str) -> dict[str, str]:
    names = ("max_running_requests", "dp_size", "dp_attention", "chunked_prefill_size",
             "mem_fraction_static", "cuda_graph_max_bs", "disable_cuda_graph")  # fmt: skip
    return {f"{pool}_{n}": cells.get(n, "") for n in names}


def test_running_requests_and_chunks_are_divided_over_attention_dp_ranks() -> None:
    # SGLang 0.5.x: max_running_requests // dp_size and chunked_prefill_size // dp_size per
    # rank under --enable-dp-attention; a dp-size without it divides nothing
    dep8 = line("decode", max_running_requests="1024", dp_size="8", dp_attention="1",
                chunked_prefill_size="32768", mem_fraction_static="0.85",
                cuda_graph_max_bs="1024")  # fmt: skip
    assert pool_settings(dep8, "decode") == PoolSettings(128, 4096, 0.85, 1024)
    tp8 = line("decode", max_running_requests="512", dp_size="8", chunked_prefill_size="32768")
    assert pool_settings(tp8, "decode") == PoolSettings(512, 32768, None, None)
    off = line("decode", chunked_prefill_size="-1")  # chunked prefill off: not a budget
    assert pool_settings(off, "decode") == PoolSettings()


def test_a_recipe_is_read_as_the_branch_the_runs_cloned_held_it() -> None:
    # The H100 DEP recipe at the merge of sa-submission-q1-2026 (5063eb432) sets the decode
    # worker's max-running-requests 16 over 16 attention-DP ranks (main's earlier 8 leaves
    # none per rank, which SGLang refuses), cuda-graph-max-bs 16, mem-fraction-static 0.9;
    # the prefill worker (TP16) 4 requests, 2048-token chunks, 0.6
    recipe = sglang_recipe(H100_DEP, "76fa58252")
    assert recipe is not None and recipe.source.endswith(f"{H100_DEP} @5063eb432")
    assert recipe.decode == PoolSettings(1, None, 0.9, 16)
    assert recipe.prefill == PoolSettings(4, 2048, 0.6, None)
    assert sglang_recipe(H100_DEP, "0000000") is None  # no sweep of that revision named it
    cells = recipe_columns(recipe)
    assert cells["decode_batch_size"] == "1" and cells["prefill_chunked_prefill_size"] == "2048"


def test_a_launched_sglang_rows_recipe_reaches_the_fleets_workers() -> None:
    # H100 1k/8k at 4 clients: the DEP sweep of 76fa58252 (the smallest fleet that ran 4)
    r = row("h100_sxm", "sglang", "fp8", "1024x8192", 4, "2026-02-13T03:10:06Z", 16, 16)
    sweep = inferencex_sweep(r)
    assert isinstance(sweep, Sweep) and sweep.recipe == H100_DEP
    (out,) = with_inferencex_launches([r])
    assert out["recipe"].endswith("@5063eb432")
    case = map_disagg_row(out)
    assert isinstance(case, AicDisaggCase)
    fleet = make_disaggregated(case.prefill, case.decode, num_prefill=1, num_decode=1,
                               link=case.link, system=get_system(AIC_SYSTEMS[case.system]),
                               max_model_len=1024 + 8192)  # fmt: skip
    decode, prefill = fleet.decode_instance, fleet.prefill_instance
    assert decode.engine.max_num_seqs == 16  # 1 per rank x 16 ranks
    assert decode.step.cuda_graphs is not None and decode.step.cuda_graphs.max_capture_size == 16
    assert decode.memory.gpu_memory_utilization == 0.9
    assert prefill.engine.max_num_seqs == 4 and prefill.engine.max_num_batched_tokens == 2048
    assert prefill.memory.gpu_memory_utilization == 0.6


def test_a_dump_rows_derived_batches_give_way_to_the_recipe() -> None:
    # dsr1_gb300_sglang_fp4_disagg_8192x1024_c4_cfg569-like: 1 TP4 prefill + 4 TP4 decode
    # workers at 4 clients; AIC wrote prefill batch 1 and decode 4 // 4 = 1, the recipe
    # (gb300-fp4/8k1k/low_latency.yaml) sets the prefill's 512 requests and 24576-token chunks
    # and no decode max-running-requests (SGLang's own default: the preset's)
    r = row("gb300", "sglang", "fp4", "8192x1024", 4, "2026-02-12T00:00:00.000Z", 4, 4)
    r |= {
        "silicon_data_source": "db-dump/2026-04-27; config_id=569; silicon_concurrency=4; "
        "measured=2026-02-12T00:00:00.000Z; workflow_run_id=283",
        "prefill_batch_size": "1", "prefill_num_workers": "1", "prefill_moe_ep_size": "1",
        "decode_batch_size": "1", "decode_num_workers": "4", "decode_moe_tp_size": "4",
        "decode_moe_ep_size": "1", "prefill_moe_tp_size": "4",
    }  # fmt: skip
    (out,) = with_inferencex_launches([r])
    assert out["prefill_batch_size"] == "512" and out["decode_batch_size"] == ""
    case = map_disagg_row(out)
    assert isinstance(case, AicDisaggCase)
    assert case.prefill.engine.max_num_seqs == 512
    assert case.prefill.engine.max_num_batched_tokens == 24576
    assert case.decode.engine.max_num_seqs == 1024  # the sglang preset's
    assert case.decode.engine.max_cudagraph_capture_size == 128
    assert case.prefill.gpu_memory_utilization == case.decode.gpu_memory_utilization == 0.95
    trt = {**r, "backend": "trtllm"}  # a TensorRT-LLM row gets no SGLang recipe
    (kept,) = with_inferencex_launches([trt])
    assert "recipe" not in kept and kept["prefill_batch_size"] == "1"


def test_a_recipe_files_variants_merge_over_its_base_as_srt_slurm_does(
    bench_script: Callable[[str], ModuleType],
) -> None:
    # `recipes/b200-fp4/1k1k.yaml:zip_override_stp_lowlat[1]`: the base with the i-th element
    # of each list of the zip section; `:override_X` a plain merge over the base
    t = bench_script("srt_slurm_recipes")

    def decode(**cells: object) -> dict[str, object]:
        return {"backend": {"sglang_config": {"decode": cells}}}

    doc = {
        "base": {"resources": {"decode_workers": 5, "gpus_per_node": 8},
                 **decode(**{"max-running-requests": 512, "tensor-parallel-size": 8})},
        "zip_override_lowlat": {"resources": {"decode_workers": [5, 6]}},
        "override_maxtpt": decode(**{"dp-size": 8, "enable-dp-attention": True}),
    }  # fmt: skip
    second = t._variant(doc, "zip_override_lowlat[1]")
    assert second["resources"] == {"decode_workers": 6, "gpus_per_node": 8}
    merged = t._variant(doc, "override_maxtpt")["backend"]["sglang_config"]["decode"]
    assert merged == {"max-running-requests": 512, "tensor-parallel-size": 8, "dp-size": 8,
                      "enable-dp-attention": True}  # fmt: skip
    # the server arguments' spellings: `dp-size` or `data-parallel-size`, booleans as 0 / 1
    assert t._setting(merged, t.SETTINGS["dp_size"]) == "8"
    assert t._setting({"data-parallel-size": 4}, t.SETTINGS["dp_size"]) == "4"
    assert t._setting(merged, t.SETTINGS["dp_attention"]) == "1"
    assert t._setting(merged, t.SETTINGS["cuda_graph_max_bs"]) == ""


def test_deepep_pools_exchange_as_their_mode_says_auto_by_pool() -> None:
    # `deepep-mode` low_latency / normal; unset is SGLang's `auto`: `DeepEPMode.resolve`
    # gives a batch with prompt work normal, a decode batch low latency; no DP attention,
    # or another backend: the gather
    def a2a(pool: str, **cells: str) -> str | None:
        return pool_settings(
            line(pool, dp_size="8", dp_attention="1") | cells, pool
        ).moe_a2a_backend

    assert a2a("decode", decode_moe_a2a_backend="deepep", decode_deepep_mode="low_latency") == (
        "deepep_low_latency"
    )
    assert a2a("prefill", prefill_moe_a2a_backend="deepep", prefill_deepep_mode="normal") == (
        "deepep_high_throughput"
    )
    assert a2a("prefill", prefill_moe_a2a_backend="deepep") == "deepep_high_throughput"
    assert a2a("decode", decode_moe_a2a_backend="deepep") == "deepep_low_latency"
    assert a2a("decode", decode_moe_a2a_backend="megamoe") is None
    no_dp = line("decode", dp_size="8") | {"decode_moe_a2a_backend": "deepep"}
    assert pool_settings(no_dp, "decode").moe_a2a_backend is None


def test_a_deepep_recipe_splits_the_experts_over_every_gpu_of_its_pool() -> None:
    # GB200 FP4 1k/1k at 4,096 clients, 4 DEP4 prefill + 1 DEP48 decode
    # (`recipes/gb200-fp4/1k1k/max-tpt.yaml`: decode deepep low_latency); a dump row whose
    # decode pool records EP 1 over 32 DP ranks gets EP 32 (SGLang `_handle_a2a_moe`:
    # ep_size = tp_size under DeepEP) and its all-to-all
    r = row("gb200", "sglang", "fp4", "1024x1024", 4096, "2026-03-10T00:00:00.000Z", 4, 48)
    (out,) = with_inferencex_launches([r])
    case = map_disagg_row(out)
    assert isinstance(case, AicDisaggCase)
    assert case.decode.moe_a2a_backend == "deepep_low_latency"
    assert case.decode.expert_parallel_size == case.decode.attention_dp_size == 48
    assert case.prefill.moe_a2a_backend is None  # the recipe's prefill names no backend
    dump = {**r, "decode_tp_size": "1", "decode_attention_dp_size": "32",
            "decode_moe_tp_size": "32", "decode_moe_ep_size": "1",
            "decode_moe_a2a_backend": "deepep_low_latency"}  # fmt: skip
    (fixed,) = with_inferencex_launches([{**dump, "launch": "given"}])
    assert (fixed["decode_moe_tp_size"], fixed["decode_moe_ep_size"]) == ("1", "32")
    tp = {**dump, "decode_tp_size": "8", "decode_attention_dp_size": "1"}
    (dropped,) = with_inferencex_launches([{**tp, "launch": "given"}])
    assert dropped["decode_moe_a2a_backend"] == ""  # no DP attention recorded: the gather
