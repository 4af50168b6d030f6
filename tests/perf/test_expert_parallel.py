"""Expert parallelism: experts split whole over ep ranks; the busiest rank sets the step."""

from __future__ import annotations

import math

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.perf.batch_shape import aggregate, decode_batch, prefill_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.memory import weight_bytes_per_gpu
from llmsizer.perf.roofline import expected_max_normal
from llmsizer.perf.step import StepModel, StepTerms, step_terms


@pytest.mark.parametrize(
    ("n", "expected"),
    # exact: 1/sqrt(pi) for two, 3/(2 sqrt(pi)) for three; 1.4236 for eight (tables)
    [(1, 0.0), (2, 1 / math.sqrt(math.pi)), (3, 1.5 / math.sqrt(math.pi)), (8, 1.4236)],
)
def test_expected_max_of_normals_matches_known_values(n: int, expected: float) -> None:
    assert expected_max_normal(n) == pytest.approx(expected, abs=1e-4)


def deepseek(ep: int) -> StepModel:
    return StepModel(
        Deployment.from_names(
            "deepseek-r1", "b200", "fp8", tensor_parallel_size=8, expert_parallel_size=ep
        )
    )


def expert_terms(model: StepModel, batch) -> StepTerms:
    c = model.constants
    return StepTerms._make(step_terms(c, aggregate(batch, c.window)))


def test_a_long_prompt_touches_every_expert_so_ep_reads_what_tp_reads() -> None:
    tp, ep = deepseek(1).constants, deepseek(8).constants
    # 256 experts, 32 whole on each of 8 ranks, against 1/8 of each of 256 on every rank
    assert ep.experts_per_rank == 32
    assert ep.experts_per_rank * ep.expert_weight_bytes == pytest.approx(
        tp.num_experts * tp.expert_weight_bytes, rel=1e-12
    )
    long = prefill_batch(1, 8192)
    tp_s = expert_terms(deepseek(1), long).experts_memory_s
    ep_s = expert_terms(deepseek(8), long).experts_memory_s
    # same weights; each EP rank moves the activations of only the copies routed to it (1/8),
    # where every TP rank moves h in and out for all copies
    assert ep_s < tp_s


def test_at_batch_one_the_busiest_rank_reads_more_than_the_tp_share() -> None:
    one = decode_batch(1, 1000)
    tp_s = expert_terms(deepseek(1), one).experts_memory_s
    ep_s = expert_terms(deepseek(8), one).experts_memory_s
    # 8 of 256 experts: one per rank on average, the busiest holds ~2.4 of them
    assert 1.5 * tp_s < ep_s < 8 * tp_s


def test_the_spec_takes_vllm_enable_expert_parallel_as_ep_equal_tp() -> None:
    spec = DeploymentSpec(model="deepseek-r1", gpu="b200", tp=8, enable_expert_parallel=True)
    assert spec.expert_parallel_size == 8
    assert "EP8" in spec.label()
    assert DeploymentSpec(model="deepseek-r1", gpu="b200", tp=8, ep=2).expert_parallel_size == 2


@pytest.mark.parametrize(
    ("model", "tp", "ep", "message"),
    [
        ("llama-3.1-8b", 2, 2, "has no experts"),
        ("deepseek-r1", 8, 3, "must divide tensor_parallel_size 8"),
    ],
)
def test_impossible_expert_parallel_layouts_are_refused(model, tp, ep, message) -> None:
    with pytest.raises(ValueError, match=message):
        Deployment.from_names(model, "b200", tensor_parallel_size=tp, expert_parallel_size=ep)


def test_experts_that_do_not_split_evenly_put_ceil_experts_on_the_busiest_gpu() -> None:
    # 256 experts over EP 48 (SGLang DEP48 with 32 redundant slots: 288 = 6 x 48)
    uneven = Deployment.from_names(
        "deepseek-r1", "gb200", "fp8", tensor_parallel_size=1, expert_parallel_size=48,
        attention_dp_size=48,
    )  # fmt: skip
    assert uneven.experts_on_busiest_rank == 6
    even = Deployment.from_names(
        "deepseek-r1", "gb200", "fp8", tensor_parallel_size=1, expert_parallel_size=32,
        attention_dp_size=32,
    )  # fmt: skip
    assert even.experts_on_busiest_rank == 8
    # the fullest GPU's routed experts: 6 whole experts, not 256/48 = 5.33
    expert_bytes = uneven.model.routed_expert_params / 256 * uneven.weight_bytes_per_element
    others = weight_bytes_per_gpu(even) - 8 * expert_bytes
    assert weight_bytes_per_gpu(uneven) == pytest.approx(others + 6 * expert_bytes, rel=1e-9)
