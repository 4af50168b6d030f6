"""The agg rows InferenceX's MTP sweeps ran (`llmsizer.calibrate.aic_launch.agg_mtp_speculation`):
TensorRT-LLM image 1.2.0rc6.post3 ran only in the `dsr1-fp{4,8}-b200-trt-mtp` configs while
the rows were measured; their scripts draft 3 tokens, 1 under attention data parallelism."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict

import pytest

from llmsizer.calibrate.aic_launch import MTP_ACCEPTANCE, agg_mtp_speculation
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
        ("trtllm", "1.1.0rc2.post2"),  # both kinds ran it: not marked
        ("trtllm", ""),
        ("sglang", "1.2.0rc6.post3"),
        ("vllm", "0.19.0"),
    ],
)
def test_other_images_and_engines_are_plain(engine: str, version: str) -> None:
    assert agg_mtp_speculation(engine, "deepseek-r1", version) is None


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
    assert len(marked) == 88
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
