"""An exported disaggregated row takes its twin's pool columns from the database dump."""

from __future__ import annotations

from llmsizer.calibrate.aic_twins import POOL_COLUMNS, with_twin_layouts
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
