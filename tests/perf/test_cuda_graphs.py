"""CUDA graphs in the step cost: padding to captured sizes, eager steps past them, per engine."""

from __future__ import annotations

import pickle

import pytest

from llmsizer.perf.batch_shape import BatchShape, ChunkShape, aggregate, decode_batch
from llmsizer.perf.cuda_graphs import (
    CudaGraphs,
    capture_plan,
    sglang_capture_sizes,
    trtllm_capture_sizes,
    vllm_capture_sizes,
)
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.step import StepModel, StepTerms, step_terms, step_time_s
from llmsizer.units import GB, US

# eager launches priced, so that an eager step shows
EFF = EfficiencyFactors(prefill_layer_overhead_s=20 * US)


def _plan(engine: str, **kw: object) -> CudaGraphs:
    settings: dict[str, object] = {
        "max_num_seqs": 1024,
        "max_num_batched_tokens": 8192,
        "gpu_memory_bytes": 80 * GB,
        "tensor_parallel_size": 1,
    }
    return capture_plan(engine, **(settings | kw))  # type: ignore[arg-type]


def _model(
    graphs: CudaGraphs | None, model: str = "llama-3.1-8b", gpu: str = "h100-sxm", **kw: object
) -> StepModel:
    deployment = Deployment.from_names(model, gpu, "bf16" if gpu == "h100-sxm" else "fp4", **kw)  # type: ignore[arg-type]
    return StepModel(deployment, EFF, graphs)


def _terms(step: StepModel, batch: BatchShape) -> StepTerms:
    c = step.constants
    return StepTerms._make(step_terms(c, aggregate(batch, c.window), step.cuda_graphs))


def test_vllm_default_sizes_are_1_2_4_then_steps_of_8_and_16_up_to_512() -> None:
    sizes = vllm_capture_sizes(max_num_seqs=1024, max_num_batched_tokens=8192)
    assert sizes[:5] == (1, 2, 4, 8, 16)
    assert sizes[sizes.index(248) + 1 : sizes.index(248) + 3] == (256, 272)
    assert sizes[-1] == 512
    # min(2 x max_num_seqs, 512), and never above the token budget
    assert vllm_capture_sizes(16, 8192)[-1] == 32
    assert vllm_capture_sizes(1024, 100)[-1] == 96


def test_sglang_and_trtllm_default_lists() -> None:
    assert sglang_capture_sizes(512)[:6] == (1, 2, 4, 8, 12, 16)
    assert sglang_capture_sizes(512)[-3:] == (480, 496, 512)
    assert trtllm_capture_sizes(128, padding=False) == (*range(1, 32), 32, 64, 128)
    assert trtllm_capture_sizes(1024, padding=True)[-4:] == (128, 256, 512, 1024)
    assert trtllm_capture_sizes(300, padding=True)[-2:] == (256, 300)
    # SGLang: cuda_graph_max_bs by GPU memory and TP; TensorRT-LLM: 128 unless set
    assert _plan("sglang").max_capture_size == 256
    assert _plan("sglang", tensor_parallel_size=8).max_capture_size == 512
    assert _plan("sglang", gpu_memory_bytes=180 * GB).max_capture_size == 512
    assert _plan("trtllm").max_capture_size == 128 and not _plan("trtllm").padding


def test_a_batch_of_63_is_priced_as_64_on_vllm() -> None:
    graphed = _model(_plan("vllm"))
    padded, real, exact = (_terms(graphed, decode_batch(n, 500)) for n in (63, 64, 64))
    assert exact == real
    # the layers run 64 tokens ...
    assert padded.linear_memory_s == real.linear_memory_s
    assert padded.linear_compute_s == real.linear_compute_s
    assert padded.elementwise_s == real.elementwise_s
    # ... attention reads only the 63 real sequences' keys and the sampler takes 63 rows
    plain = _terms(_model(None), decode_batch(63, 500))
    assert padded.decode_attention_memory_s == plain.decode_attention_memory_s
    assert padded.lm_head_memory_s == plain.lm_head_memory_s
    assert padded.linear_compute_s == pytest.approx(plain.linear_compute_s * 64 / 63)
    assert padded.prefill_layers_overhead_s == 0.0  # a full graph: no eager launches


def test_a_batch_past_the_largest_capture_size_runs_eager() -> None:
    step = _model(_plan("vllm"))  # largest size 512
    c = step.constants
    inside, past = _terms(step, decode_batch(512, 100)), _terms(step, decode_batch(513, 100))
    assert inside.prefill_layers_overhead_s == 0.0
    assert past.prefill_layers_overhead_s == c.prefill_layers_overhead_s > 0
    plain = _terms(_model(None), decode_batch(513, 100))
    assert past.linear_compute_s == plain.linear_compute_s  # unpadded
    assert step(decode_batch(513, 100)) - _model(None)(decode_batch(513, 100)) == pytest.approx(
        c.prefill_layers_overhead_s
    )


def test_trtllm_without_padding_runs_an_uncaptured_size_eager() -> None:
    unpadded = _model(_plan("trtllm"))  # 1..31, 32, 64, 128
    padded = _model(_plan("trtllm", padding=True))
    c = unpadded.constants
    assert _terms(unpadded, decode_batch(32, 10)).prefill_layers_overhead_s == 0.0
    eager = _terms(unpadded, decode_batch(33, 10))
    assert eager.prefill_layers_overhead_s == c.prefill_layers_overhead_s
    assert eager.linear_compute_s == _terms(_model(None), decode_batch(33, 10)).linear_compute_s
    graphed = _terms(padded, decode_batch(33, 10))  # padded to 40
    assert graphed.prefill_layers_overhead_s == 0.0
    assert graphed.linear_compute_s == _terms(padded, decode_batch(40, 10)).linear_compute_s


def test_prompt_steps_piecewise_on_vllm_eager_elsewhere() -> None:
    prompt = BatchShape(prefill_chunks=(ChunkShape(100),), num_decode_seqs=3)
    vllm = _terms(_model(_plan("vllm")), prompt)  # 103 tokens in the 104 piecewise graph
    assert vllm.linear_compute_s == _terms(_model(None), decode_batch(104, 0)).linear_compute_s
    assert vllm.prefill_layers_overhead_s > 0  # attention between the pieces runs eagerly
    for engine in ("sglang", "trtllm"):
        eager = _terms(_model(_plan(engine)), prompt)
        assert eager == _terms(_model(None), prompt)  # as before: unpadded, eager
    full = _terms(_model(_plan("vllm", mode="FULL")), prompt)
    assert full.prefill_layers_overhead_s == 0.0
    none = _terms(_model(_plan("vllm", mode="NONE")), decode_batch(8, 10))
    assert none.prefill_layers_overhead_s > 0


def test_mfu_and_mbu_count_real_tokens_not_padding() -> None:
    graphed, plain = _model(_plan("vllm")), _model(None)
    for batch in (decode_batch(63, 700), BatchShape((ChunkShape(100),), 3, 300)):
        time_s, flops, bytes_ = graphed.measure(batch)
        _, plain_flops, plain_bytes = plain.measure(batch)
        assert (flops, bytes_) == (plain_flops, plain_bytes)
        assert time_s == graphed(batch) > plain(batch)
        parts = graphed.breakdown(batch)
        assert parts.time_s == time_s
        assert sum(p.flops for p in parts.parts) == pytest.approx(plain_flops)


@pytest.mark.parametrize("n", [1, 3, 63, 64, 200, 511, 512, 513, 900])
def test_decode_table_equals_the_general_formula(n: int) -> None:
    for graphs in (_plan("vllm"), _plan("trtllm"), _plan("sglang")):
        step = _model(graphs)
        c = step.constants
        general = step_time_s(c, step_terms(c, aggregate(decode_batch(n, 321), c.window), graphs))
        assert step.decode_step_s(n, n * 321) == general
        assert step.decode_run_s(n, n * 321, 3)[0] == general


def test_attention_dp_pads_each_rank() -> None:
    graphs = _plan("trtllm", padding=True)
    step = _model(graphs, "deepseek-r1", "b200", attention_dp_size=4, tensor_parallel_size=1)
    c = step.constants
    # 4 ranks of 33 (one of 34): each rank padded to 40, the experts see 4 x 40 tokens
    odd = _terms(step, decode_batch(133, 50))
    even = _terms(step, decode_batch(160, 50))
    assert odd.linear_compute_s == even.linear_compute_s
    assert odd.experts_compute_s == even.experts_compute_s
    assert odd.prefill_layers_overhead_s == 0.0 and c.attention_dp_size == 4


def test_bad_capture_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="ascending"):
        CudaGraphs((8, 4))
    with pytest.raises(ValueError, match="must equal the largest"):
        _plan("vllm", capture_sizes=(1, 2, 8), max_capture_size=16)


def test_pickles_with_its_graphs() -> None:
    step = _model(_plan("vllm"))
    again = pickle.loads(pickle.dumps(step))
    assert again.cuda_graphs == step.cuda_graphs
    assert again(decode_batch(63, 100)) == step(decode_batch(63, 100))
