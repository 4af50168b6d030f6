"""Rows that repeat another run take its columns: an exported disaggregated row its dump twin's
pool columns, an AIC gap-analysis copy of an InferenceX agg run that run's source and layout."""

from __future__ import annotations

from llmsizer.calibrate.aic_twins import POOL_COLUMNS, with_inferencex_twins, with_twin_layouts
from tests.calibrate.test_aic_disagg import ROW

DUMP = {
    **ROW,
    "id": "dsr1_b200_trtllm_fp4_disagg_1024x1024_c16_cfg1",
    "model_path": "deepseek-ai/DeepSeek-V3",
    "system": "b200_sxm",
    "prefill_num_workers": "3",
    "decode_num_workers": "2",
    "decode_attention_dp_size": "8",
    "decode_tp_size": "1",
}
EXPORT = {
    **DUMP,
    "id": "2026_03_25_deepseek_r1_b200_sxm_trtllm_fp4_disagg_1024x1024_c16_tp4_0_ep4_0_9",
    "silicon_data_source": "source_file=2026-03-25.csv; silicon_concurrency=16; wip=False",
    "model_path": "deepseek-ai/DeepSeek-R1",
    "prefill_num_workers": "",
    "decode_num_workers": "",
    "prefill_batch_size": "",
    "decode_batch_size": "",
    "decode_tp_size": "8",
    "decode_attention_dp_size": "1",
    "silicon_ttft_ms": "123.0",  # within 5 % of the dump's 120
    "silicon_tpot_ms": "20.2",  # within 3 % of its 20
}


def test_an_exported_row_takes_its_dump_twins_pool_columns() -> None:
    dump, export = with_twin_layouts([DUMP, EXPORT])
    assert dump["twin"] == ""  # the dump's own row is unchanged
    assert export["twin"] == DUMP["id"]
    assert all(export[c] == DUMP[c] for c in POOL_COLUMNS)
    assert (export["silicon_ttft_ms"], export["id"]) == ("123.0", EXPORT["id"])  # its own


def test_no_twin_when_the_means_or_the_load_differ() -> None:
    for change in ({"silicon_tpot_ms": "22.0"}, {"silicon_ttft_ms": "140"}, {"isl": "8192"},
                   {"silicon_data_source": "source_file=x; silicon_concurrency=32"},
                   {"model_path": "zai-org/GLM-5"}):  # fmt: skip
        _, export = with_twin_layouts([DUMP, {**EXPORT, **change}])
        assert export["twin"] == "" and export["decode_num_workers"] == ""


RUN = {
    **ROW,
    "id": "2026_03_25_qwen3_5_397b_b200_sxm_sglang_fp8_agg_1024x1024_c4_0",
    "mode": "agg",
    "backend": "sglang",
    "model_path": "Qwen/Qwen3.5-397B-A17B",
    "system": "b200_sxm",
    "isl": "1024",
    "osl": "1024",
    "tp_size": "4",
    "moe_ep_size": "1",
    "silicon_data_source": "source_file=2026-03-25.csv; silicon_concurrency=4; "
    "measured=2026-03-20T22:08:23Z; image=lmsysorg/sglang:v0.5.9-cu130",
    "silicon_ttft_ms": "338.336414",
    "silicon_tpot_ms": "6.332719",
}
COPY = {  # qwen3.5-397b-gap-analysis.csv: the run's means rounded to 0.01 ms, no image
    **RUN,
    "id": "qwen3_5_397b_gap_analysis_qwen3_5_397b_gap_analysis_b200_sxm_c4",
    "moe_ep_size": "",
    "silicon_data_source": "source_file=qwen3.5-397b-gap-analysis.csv; silicon_concurrency=4",
    "silicon_ttft_ms": "338.34",
    "silicon_tpot_ms": "6.33",
}


def test_a_gap_analysis_copy_of_an_inferencex_run_is_read_as_that_run() -> None:
    run, copy = with_inferencex_twins([RUN, COPY])
    assert run["twin"] == ""
    assert copy["twin"] == RUN["id"]
    assert copy["silicon_data_source"] == RUN["silicon_data_source"]  # its image and date
    assert copy["moe_ep_size"] == "1"
    assert (copy["id"], copy["silicon_tpot_ms"]) == (COPY["id"], "6.33")  # its own


def test_a_gap_row_that_differs_by_more_than_the_rounding_is_its_own_run() -> None:
    for change in ({"silicon_tpot_ms": "6.34"}, {"silicon_ttft_ms": "338.35"}, {"tp_size": "8"},
                   {"silicon_data_source": "source_file=qwen3.5-397b-gap-analysis.csv; "
                    "silicon_concurrency=8"}):  # fmt: skip
        _, copy = with_inferencex_twins([RUN, {**COPY, **change}])
        assert copy["twin"] == "" and "gap-analysis" in copy["silicon_data_source"]
