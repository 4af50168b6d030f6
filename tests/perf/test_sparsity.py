"""2:4 sparsity against the course's table (MLPerf v4.0, Llama 2 70B, sparse vs dense FP8)."""

import pytest

from llmsizer.perf.batch_shape import decode_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import default_efficiency
from llmsizer.perf.memory import weight_bytes_per_gpu
from llmsizer.perf.sparsity import StructuredSparsity
from llmsizer.perf.step import StepModel
from llmsizer.specs import Precision

COURSE_SPEEDUPS = {32: 1.62, 64: 1.52, 128: 1.35, 896: 1.30}


def test_compressed_bytes_per_weight():
    assert StructuredSparsity.bytes_ratio(Precision.FP8) == pytest.approx(0.625)
    assert StructuredSparsity.bytes_ratio(Precision.BF16) == pytest.approx(0.5625)
    with pytest.raises(ValueError, match="math_speedup"):
        StructuredSparsity(math_speedup=3.0)


def test_model_size_drops_37_percent():
    dense = Deployment.from_names("llama-2-70b", "h100", "fp8")
    sparse = Deployment.from_names("llama-2-70b", "h100", "fp8", sparsity=StructuredSparsity())
    reduction = 1 - weight_bytes_per_gpu(sparse) / weight_bytes_per_gpu(dense)
    assert reduction == pytest.approx(0.37, abs=0.01)


def test_speedups_follow_the_course_table_within_15_percent():
    """Assumptions: one H100 SXM (TP1, as the MLPerf sparse submission), FP8 weights and FP8
    KV cache, TensorRT-LLM default efficiencies, `math_speedup` 1.5, decode steps at a context
    of 450 tokens (MLPerf's OpenOrca prompts and answers run a few hundred tokens each).
    Memory capacity is ignored: the ratio of step times is what the table reports."""

    def step(sparsity: StructuredSparsity | None) -> StepModel:
        d = Deployment.from_names("llama-2-70b", "h100-sxm", "fp8", "fp8", sparsity=sparsity)
        return StepModel(d, default_efficiency("trtllm"))

    dense, sparse = step(None), step(StructuredSparsity())
    predicted = {
        b: dense(decode_batch(b, 450)) / sparse(decode_batch(b, 450)) for b in COURSE_SPEEDUPS
    }
    for batch_size, course in COURSE_SPEEDUPS.items():
        assert predicted[batch_size] == pytest.approx(course, rel=0.15)
    # the gain shrinks as the batch grows: memory-bound at 32, compute- and KV-bound at 896
    assert list(predicted.values()) == sorted(predicted.values(), reverse=True)
