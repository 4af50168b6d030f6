"""`bench/inferencex_sweeps.py`: an InferenceX config entry, in either schema, as the lines of
`calibrate/data/inferencex_sweeps.csv`; the packaged table as `aic_launches` reads it."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from llmsizer.calibrate.aic_launches import inferencex_sweeps

ENTRY: dict[str, Any] = {
    "image": "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2",
    "model-prefix": "dsr1", "runner": "gb300", "precision": "fp4",
    "framework": "dynamo-trt", "multinode": True, "disagg": True,
}  # fmt: skip
SEARCH = [
    {"spec-decoding": "mtp", "conc-list": [8, 12],
     "prefill": {"num-worker": 1, "tp": 2, "ep": 2, "dp-attn": True,
                 "additional-settings": ["CONFIG_FILE=recipes/a_mtp.yaml"]},
     "decode": {"num-worker": 4, "tp": 8, "ep": 8, "dp-attn": False}},
    {"conc-list": [2253],
     "prefill": {"num-worker": 14, "tp": 2, "ep": 2, "dp-attn": True},
     "decode": {"num-worker": 1, "tp": 16, "ep": 16, "dp-attn": True}},
]  # fmt: skip


def test_a_config_entry_is_one_line_per_sweep_in_either_schema(
    bench_script: Callable[[str], ModuleType],
) -> None:
    sweeps = bench_script("inferencex_sweeps")._sweeps
    lengths = [{"isl": 8192, "osl": 1024, "search-space": SEARCH}]
    old = sweeps("dsr1-fp4-gb300-dynamo-trt", {**ENTRY, "seq-len-configs": lengths})
    new = sweeps("dsr1-fp4-gb300-dynamo-trt", {**ENTRY, "scenarios": {"fixed-seq-len": lengths}})
    assert old == new and list(old) == [("dsr1-fp4-gb300-dynamo-trt", 8192, 1024)]
    mtp, stp = old[("dsr1-fp4-gb300-dynamo-trt", 8192, 1024)]
    assert (mtp["mtp"], mtp["clients"], mtp["recipe"]) == (1, "8 12", "recipes/a_mtp.yaml")
    assert (mtp["decode_workers"], mtp["decode_tp"], mtp["decode_dp_attn"]) == (4, 8, 0)
    assert (stp["mtp"], stp["prefill_workers"], stp["decode_tp"], stp["decode_ep"]) == (
        0,
        14,
        16,
        16,
    )
    assert stp["engine"] == "trtllm" and stp["system"] == "gb300"
    # aggregated configs, other engines and systems AIC does not measure are not read
    assert sweeps("x", {**ENTRY, "disagg": False, "seq-len-configs": []}) == {}
    assert sweeps("x", {**ENTRY, "framework": "sglang"}) == {}
    assert sweeps("x", {**ENTRY, "runner": "mi355x"}) == {}


def test_the_packaged_table_holds_that_sweep_at_its_commit() -> None:
    configs = inferencex_sweeps()[("trtllm", "gb300", "dsr1", "fp4", 8192, 1024)]
    at = [sw for versions in configs for since, sw in versions if since == "2026-02-03T17:13:14Z"]
    sweeps = [s for sw in at for s in sw if 2253 in s.concurrencies and not s.mtp]
    assert [s.label for s in sweeps] == ["14P DEP2 + 1D DEP16"]
    assert sweeps[0].source == "dsr1-fp4-gb300-dynamo-trt @3eb1b779c"
    # every config's revisions are in time order
    for versions in (v for vs in inferencex_sweeps().values() for v in vs):
        assert [s for s, _ in versions] == sorted(s for s, _ in versions)
