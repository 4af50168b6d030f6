"""Speculative decoding in the simulation: a gain at batch 1, a loss at a large batch, the
step cost equal to `perf.speculative`'s, tokens conserved, and bad drafts refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pydantic
import pytest

from llmsizer.instance import PredictSpec, predict
from llmsizer.instance.speculation import (
    SpeculativeSpec,
    acceptance_rates,
    decode_steps,
    speculative_cost,
)
from llmsizer.perf import Deployment, StepModel
from llmsizer.perf.batch_shape import decode_batch
from llmsizer.perf.speculative import SpeculativeDecoding, draft_head_model, speculative_step

BASE: dict[str, Any] = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 200, "osl": 200}


def run(concurrency: int, k: int | None) -> dict[str, float]:
    spec = None if k is None else {"num_speculative_tokens": k}
    p = predict(
        PredictSpec(
            **BASE,
            concurrency=concurrency,
            num_requests=max(40, 3 * concurrency),
            max_num_seqs=512,
            speculative=spec,
        )
    )
    return p.summary


def test_speculation_helps_at_batch_1_and_hurts_at_a_large_batch() -> None:
    alone, alone_spec = run(1, None), run(1, 3)
    assert alone_spec["mean_tpot_ms"] < 0.85 * alone["mean_tpot_ms"]
    busy, busy_spec = run(512, None), run(512, 3)
    assert busy_spec["mean_tpot_ms"] > busy["mean_tpot_ms"]
    assert busy_spec["output_throughput"] < busy["output_throughput"]


def test_every_token_is_delivered_in_order() -> None:
    p = predict(
        PredictSpec(
            **BASE, request_rate=2.0, num_requests=60, speculative={"num_speculative_tokens": 4}
        )
    )
    assert p.summary["completed"] == 60
    assert p.summary["total_output_tokens"] == 60 * 200


def test_the_simulated_step_is_perf_speculative_step() -> None:
    target = StepModel(Deployment.from_names("llama-3.1-8b", "h100-sxm"))
    cost = speculative_cost(SpeculativeSpec(num_speculative_tokens=4), target)
    reference = speculative_step(
        target, SpeculativeDecoding(4, 0.7), draft_head_model(target), 16, 1500
    )
    assert cost(decode_batch(16, 1500)) == pytest.approx(reference.step_time_s, rel=1e-9)


def test_steps_follow_the_expected_tokens_per_step() -> None:
    k, a = 4, 0.7
    per_step = (1 - a ** (k + 1)) / (1 - a)  # Leviathan et al. eq. 1: 2.77
    steps = decode_steps(np.array([1, 2, 278]), np.full(3, a), k)
    assert steps.tolist() == [0, 1, int(np.ceil(277 / per_step))]


def test_acceptance_varies_per_request_around_its_mean() -> None:
    spec = SpeculativeSpec(num_speculative_tokens=3, acceptance_rate=0.6, acceptance_std=0.15)
    a = acceptance_rates(spec, 20_000, np.random.default_rng(0))
    assert a.mean() == pytest.approx(0.6, abs=0.01)
    assert a.std() == pytest.approx(0.15, rel=0.05)
    assert ((a > 0) & (a < 1)).all()


def test_a_draft_bigger_than_the_target_is_refused() -> None:
    target = StepModel(Deployment.from_names("llama-3.1-8b", "h100-sxm"))
    spec = SpeculativeSpec(
        num_speculative_tokens=3, method="draft_model", draft_model="llama-3.1-70b"
    )
    with pytest.raises(ValueError, match=r"is not smaller than the target llama-3\.1-8b"):
        speculative_cost(spec, target)


def test_a_draft_model_is_slower_to_draft_than_a_head() -> None:
    target = StepModel(Deployment.from_names("llama-3.1-70b", "h100-sxm", tensor_parallel_size=4))
    head = speculative_cost(SpeculativeSpec(num_speculative_tokens=3), target)
    draft = speculative_cost(
        SpeculativeSpec(num_speculative_tokens=3, method="draft_model", draft_model="llama-3.1-8b"),
        target,
    )
    batch = decode_batch(8, 1000)
    assert draft.draft_time_s(batch) > head.draft_time_s(batch) > 0


@pytest.mark.parametrize(
    "bad",
    [{"num_speculative_tokens": 0}, {"num_speculative_tokens": 2, "method": "draft_model"}],
)
def test_bad_settings_name_the_field(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError, match=r"num_speculative_tokens|draft_model"):
        SpeculativeSpec.model_validate(bad)


def test_measure_counts_verification_and_drafting() -> None:
    """MFU/MBU of a speculating engine: `measure`'s time is the step's, and its FLOPs are
    the target's verification (k + 1 tokens per sequence) plus the drafter's passes."""
    target = StepModel(Deployment.from_names("llama-3.1-8b", "h100-sxm"))
    cost = speculative_cost(SpeculativeSpec(num_speculative_tokens=3), target)
    batch = decode_batch(8, 8 * 800)
    time_s, flops, _ = cost.measure(batch)
    assert time_s == pytest.approx(cost(batch), rel=1e-12)
    plain_flops = target.measure(batch)[1]
    assert 3.5 * plain_flops < flops < 4.5 * plain_flops  # ~k + 1 = 4 tokens per sequence
