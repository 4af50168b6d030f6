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


def _collected(tmp_path, architecture: str):
    """A device file from `llmsizer collect` (tests/collect/test_device_file.py's shape)."""
    from tests.collect.test_device_file import _write

    return str(_write(tmp_path, architecture=architecture))


def test_every_catalog_gpu_has_sparse_tensor_cores():
    """Every catalogued GPU is Ampere or later or CDNA 3: its datasheet lists sparse peaks."""
    from llmsizer.perf.sparsity import has_sparse_tensor_cores
    from llmsizer.specs.gpus import gpu_catalog

    assert all(has_sparse_tensor_cores(g) for g in gpu_catalog().values())


@pytest.mark.parametrize("architecture", ["cpu", "sm_75"])
def test_sparsity_on_a_device_without_sparse_tensor_cores_is_refused(tmp_path, architecture):
    """A CPU or a Turing GPU measured by `collect`: a clear error, never a phantom speed-up."""
    from llmsizer.perf.levers import sparsity_note

    device = _collected(tmp_path, architecture)
    dense = Deployment.from_names("llama-3.1-8b", device)
    with pytest.raises(ValueError, match=rf"sparse tensor cores.*architecture {architecture}"):
        Deployment.from_names("llama-3.1-8b", device, sparsity=StructuredSparsity())
    assert "no sparse tensor cores" in sparsity_note(dense.gpu)
    assert sparsity_note(Deployment.from_names("llama-3.1-8b", "h100").gpu) is None


def test_plan_says_why_a_device_gets_no_sparse_configurations(tmp_path):
    from llmsizer.sizing.candidates import CandidatesSpec

    device = _collected(tmp_path, "cpu")
    both = CandidatesSpec(gpus=[device, "h100-sxm"], sparsity=[False, True])
    notes = both.fallback_notes("llama-3.1-8b")
    assert [n for n in notes if "sparse" in n] == [
        "Test CPU (measured) has no sparse tensor cores: its 2:4 sparse configurations are "
        "left out (they would run as dense math)"
    ]
    dense_only = CandidatesSpec(gpus=[device], sparsity=[False])
    assert not [n for n in dense_only.fallback_notes("llama-3.1-8b") if "sparse" in n]
