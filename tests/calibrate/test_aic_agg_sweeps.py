"""The agg rows InferenceX's SGLang MTP sweeps ran (`llmsizer.calibrate.aic_agg_sweeps`): a
row speculates when every sweep that may have run it (its image, else its GPU; its model,
precision, lengths, layout and clients; the newest revision of each config by the row's day)
did, and is launched as the MTP script launched it."""

from __future__ import annotations

from collections import Counter

import pytest

from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.calibrate.aic_agg_sweeps import AggPoint, AggSweep, agg_mtp_tokens, agg_sweeps
from tests.conftest import shared_path

IMAGE = "lmsysorg/sglang:v0.5.9-cu130"


def _sweep(config: str, image: str, mtp: bool, since: str = "2026-03-20T22:08:19Z", ep: int = 1):
    return AggSweep(since, config, "b200", "qwen3.5", "fp8", image, 1024, 1024, 4, ep, False,
                    (4, 8, 16, 32), mtp, 3 if mtp else None)  # fmt: skip


def _point(image: str = IMAGE, measured: str = "2026-03-21T10:00:00Z", clients: int = 8, ep=1):
    return AggPoint("b200_sxm", "Qwen/Qwen3.5-397B-A17B", "fp8", image, measured, 1024, 1024,
                    4, ep, False, clients)  # fmt: skip


MTP = _sweep("qwen3.5-fp8-b200-sglang-mtp", IMAGE, True)
PLAIN = _sweep("qwen3.5-fp8-b200-sglang", "lmsysorg/sglang:v0.5.9-cu130-amd64", False, ep=4)


def test_a_row_on_an_image_only_an_mtp_sweep_ran_speculates_with_its_draft_tokens() -> None:
    assert agg_mtp_tokens(_point(), (MTP, PLAIN)) == 3


def test_a_point_a_plain_sweep_may_have_run_does_not() -> None:
    both = _sweep("qwen3.5-fp8-b200-sglang", IMAGE, False)  # the same image, both kinds
    assert agg_mtp_tokens(_point(), (MTP, both)) is None
    assert agg_mtp_tokens(_point(image="lmsysorg/sglang:v0.5.9-cu130-amd64", ep=4),
                          (MTP, PLAIN)) is None  # fmt: skip
    assert agg_mtp_tokens(_point(clients=256), (MTP, PLAIN)) is None  # no sweep ran it


def test_without_an_image_the_gpu_and_layout_decide() -> None:
    assert agg_mtp_tokens(_point(image="", measured=""), (MTP, PLAIN)) == 3
    assert agg_mtp_tokens(_point(image="", measured="", ep=4), (MTP, PLAIN)) is None


def test_the_newest_revision_by_the_rows_day_decides() -> None:
    # the config ran plain until a later revision turned MTP on
    early = _sweep("qwen3.5-fp8-b200-sglang-mtp", IMAGE, False, since="2026-03-01T00:00:00Z")
    assert agg_mtp_tokens(_point(measured="2026-03-10T00:00:00Z"), (early, MTP)) is None
    assert agg_mtp_tokens(_point(measured="2026-03-22T00:00:00Z"), (early, MTP)) == 3
    # a row measured before any revision ran it: a pull request's run, the revisions it made
    assert agg_mtp_tokens(_point(measured="2026-03-20T00:00:00Z"), (MTP,)) == 3


@pytest.mark.shared
def test_the_table_names_the_sglang_mtp_rows_of_the_calibration_file() -> None:
    assert any(s.mtp and s.mtp_tokens == 3 for s in agg_sweeps())
    cases = [c for c in load_aic(shared_path("calibration", "aic_silicon_calibration.csv"))
             if isinstance(c, AicCase) and c.backend == "sglang"]  # fmt: skip
    spec = Counter(
        (c.model, c.spec.tensor_parallel_size, c.spec.speculative.num_speculative_tokens)
        for c in cases
        if c.spec.speculative is not None
    )
    # Qwen3.5 FP8 TP4 EP1 on image v0.5.9-cu130 (B200, and B300 runs of the B200 config;
    # 21 gap-analysis copies of them); DeepSeek-R1 FP8 TP8 above the plain sweep's 64 clients
    assert spec == {("qwen3.5-397b-a17b", 4, 3): 75, ("deepseek-r1", 8, 2): 26}
    mtp = next(c for c in cases if c.spec.speculative is not None and c.spec.concurrency == 8)
    assert (mtp.spec.engine.max_num_batched_tokens, mtp.spec.engine.max_num_seqs) == (32768, 8)
    assert not mtp.spec.engine.overlap_scheduler  # SGLang's first speculative path
    # both MTP scripts pass --moe-runner-backend flashinfer_trtllm: the head's experts on Triton
    assert {c.spec.speculative.draft_moe_backend for c in cases if c.spec.speculative} == {"triton"}
    # Qwen3.5's Gated DeltaNet verify on FLA's Triton kernel; DeepSeek-R1 has none to verify
    verify = Counter(
        (c.model, c.spec.speculative.linear_verify_kernel) for c in cases if c.spec.speculative
    )
    assert verify == {("qwen3.5-397b-a17b", "triton"): 75, ("deepseek-r1", None): 26}
