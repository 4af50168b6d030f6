"""The agg rows InferenceX's MTP sweeps ran (`llmsizer.calibrate.aic_launch.agg_mtp_speculation`):
TensorRT-LLM image 1.2.0rc6.post3 ran only in the `dsr1-fp{4,8}-b200-trt-mtp` configs while
the rows were measured, and 1.1.0rc2.post2 in them on 2026-01-14 (the sweep PR #392's merge
started); their scripts draft 3 tokens, 1 under attention data parallelism."""

from __future__ import annotations

import csv
import re
import statistics
from collections import defaultdict

import pytest

from llmsizer.calibrate.aic_launch import MTP_ACCEPTANCE, agg_mtp_speculation, launch_settings
from llmsizer.calibrate.aic_sweeps import clients, measured_at
from llmsizer.units import GB
from tests.conftest import shared_path


def test_the_mtp_image_drafts_three_tokens_with_the_deepseek_acceptance() -> None:
    settings = agg_mtp_speculation("trtllm", "deepseek-r1", "1.2.0rc6.post3")
    assert settings == {
        "num_speculative_tokens": 3,
        "method": "mtp",
        "acceptance_rate": MTP_ACCEPTANCE["deepseek"],
    }


def test_under_attention_data_parallelism_it_drafts_one() -> None:
    settings = agg_mtp_speculation("trtllm", "deepseek-r1", "1.2.0rc6.post3", attention_dp=8)
    assert settings is not None
    assert settings["num_speculative_tokens"] == 1


@pytest.mark.parametrize(
    ("engine", "version"),
    [
        ("trtllm", "1.2.0rc6.post2"),  # the plain configs' image
        ("trtllm", "1.1.0rc2.post2"),  # both kinds ran it: only its MTP sweep's day is marked
        ("trtllm", ""),
        ("sglang", "1.2.0rc6.post3"),
        ("vllm", "0.19.0"),
    ],
)
def test_other_images_and_engines_are_plain(engine: str, version: str) -> None:
    assert agg_mtp_speculation(engine, "deepseek-r1", version) is None


@pytest.mark.parametrize(
    ("measured", "tokens"),
    [("2026-01-14T22:26:21Z", 3), ("2026-01-14T23:59:59Z", 3), ("2025-12-15T23:59:59Z", None)],
)
def test_the_older_image_speculates_on_its_mtp_sweeps_day_only(
    measured: str, tokens: int | None
) -> None:
    settings = agg_mtp_speculation("trtllm", "deepseek-r1", "1.1.0rc2.post2", 1, measured)
    assert (settings and settings["num_speculative_tokens"]) == tokens


@pytest.mark.parametrize(
    ("version", "fraction"), [("1.1.0rc2.post2", 0.8), ("1.2.0rc6.post3", 0.7)]
)
def test_fp8_under_attention_dp_keeps_its_images_kv_fraction(version: str, fraction: float) -> None:
    """`dsr1_fp8_b200_trt_mtp_slurm.sh` @ bf3456727 keeps 0.8 under attention DP, the later
    `dsr1_fp8_b200_trt_mtp.sh` @ 5d517074c lowers it to 0.7; both draft one token there and
    budget ceil64(2 x CONC / DP + ISL + 64) tokens."""
    settings = launch_settings(
        engine="trtllm",
        model="deepseek-r1",
        precision="fp8",
        tp=8,
        gpu_memory_bytes=180 * GB,
        concurrency=64,
        isl=1024,
        osl=1024,
        inferencex=True,
        version=version,
        attention_dp=8,
        ep=8,
        measured="2026-01-14T23:59:59Z",
    )
    assert settings["gpu_memory_utilization"] == fraction
    assert settings["speculative"]["num_speculative_tokens"] == 1
    assert settings["max_num_batched_tokens"] == 1152  # ceil64(2 x 8 + 1024 + 64)


def _layout(row: dict[str, str]) -> tuple[object, ...]:
    """Precision, lengths, clients, GPUs (the id's `_tpN`: some rows' `tp_size` is not) and
    whether attention DP ran: what a plain run and an MTP run of one search-space point share."""
    tp = re.search(r"_tp(\d+)", row["id"])
    gpus = tp.group(1) if tp else str(int(float(row["tp_size"])))
    dp = float(row["attention_dp_size"] or 1) > 1
    return (row["precision"], row["isl"], row["osl"], clients(row), gpus, dp)


@pytest.mark.shared
def test_the_older_images_mtp_day_decodes_faster_than_its_plain_twins() -> None:
    """The 32 DeepSeek-R1 agg rows of 1.1.0rc2.post2 measured 2026-01-14: against plain runs
    (rows not marked) of the same layout, every one of 17 pairs decodes faster (TPOT ratio
    0.56-0.87, as the 1.2.0rc6.post3 MTP rows' 0.62) and takes longer to the first token."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["mode"] == "agg" and r["backend"] == "trtllm"]
    rows = [r for r in rows if "DeepSeek-R1" in r["model_path"]]

    def marked(r: dict[str, str]) -> bool:
        day = measured_at(r) or ""
        return (
            agg_mtp_speculation("trtllm", "deepseek-r1", r["backend_version"], 1, day) is not None
        )

    older = [r for r in rows if marked(r) and r["backend_version"] == "1.1.0rc2.post2"]
    assert len(older) == 32
    plain: dict[tuple[object, ...], dict[str, str]] = {}
    for r in rows:
        if not marked(r):
            plain.setdefault(_layout(r), r)
    pairs = [(r, plain[_layout(r)]) for r in older if _layout(r) in plain]
    assert len(pairs) >= 15
    tpot = [float(a["silicon_tpot_ms"]) / float(b["silicon_tpot_ms"]) for a, b in pairs]
    ttft = [float(a["silicon_ttft_ms"]) / float(b["silicon_ttft_ms"]) for a, b in pairs]
    assert max(tpot) < 0.9
    assert statistics.median(ttft) > 1.0


@pytest.mark.shared
def test_the_marked_rows_decode_faster_than_the_plain_runs_of_their_layout() -> None:
    """88 agg rows carry the image, all DeepSeek-R1 on B200; where a plain run has the same
    precision, TP, lengths and clients, the MTP run's measured TPOT is lower (its steps
    yield 2-3 tokens): 44 such pairs, median ratio 0.62; its TTFT is not (median 1.12:
    drafting does not bring the first token sooner)."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["mode"] == "agg" and r["backend"] == "trtllm"]
    marked = [r for r in rows if agg_mtp_speculation("trtllm", "deepseek-r1", r["backend_version"])]
    assert len(marked) == 88  # undated: the 1.1.0rc2.post2 day is the test above
    assert {(r["system"], r["model_path"]) for r in marked} == {
        ("b200_sxm", "deepseek-ai/DeepSeek-R1")
    }
    key = ("precision", "tp_size", "moe_ep_size", "attention_dp_size", "isl", "osl", "batch_size")
    plain: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        if r["backend_version"] == "1.2.0rc6.post2" and "DeepSeek-R1" in r["model_path"]:
            plain[tuple(r[k] for k in key)].append(r)
    tpot, ttft = [], []
    for r in marked:
        twins = plain.get(tuple(r[k] for k in key), [])
        if twins:
            tpot.append(float(r["silicon_tpot_ms"]) / float(twins[0]["silicon_tpot_ms"]))
            ttft.append(float(r["silicon_ttft_ms"]) / float(twins[0]["silicon_ttft_ms"]))
    assert len(tpot) >= 10
    assert statistics.median(tpot) < 0.75
    assert statistics.median(ttft) > 0.9
