"""Each `measurements.csv` row runs as its runtime ran it (`calibrate.measurements.
runtime_settings`): trtllm-bench on the PyTorch backend with padded CUDA graphs of its
table's sizes and the overlap scheduler (the `trtllm` preset's) but at one pipeline stage; the
C++ runtime without the overlap scheduler, its TensorRT engine's decode steps at their own
size, not eager; vLLM with async scheduling only from 0.14.0, its first default."""

from __future__ import annotations

import pytest

from llmsizer.calibrate import validation
from llmsizer.calibrate.measurements import (
    TRTLLM_BENCH_GRAPH_SIZES,
    Measurement,
    load_measurements,
    map_row,
    pytorch_graph_sizes,
    runtime_of,
    runtime_settings,
)
from llmsizer.instance import calibrated_for, make_instance
from llmsizer.sim import EngineConfig
from tests.calibrate.test_calibration import csv_row
from tests.conftest import shared_path

CSV = shared_path("calibration", "measurements.csv")
PYTORCH = "TensorRT-LLM (PyTorch backend, trtllm-bench)"


def test_the_trtllm_preset_runs_the_overlap_scheduler_as_the_pytorch_backend_does() -> None:
    assert EngineConfig(engine="trtllm").overlap_scheduler
    assert not EngineConfig(engine="trtllm", overlap_scheduler=False).overlap_scheduler


@pytest.mark.parametrize(
    ("max_batch_size", "max_num_tokens", "sizes"),
    [
        (1024, 8192, (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024)),  # a listed size
        (640, 8192, (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 640)),  # past 512: padded to 640
        (3000, 2048, (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048)),  # token-bound
    ],
)
def test_pytorch_graph_sizes_stop_at_the_largest_decode_batch(
    max_batch_size: int, max_num_tokens: int, sizes: tuple[int, ...]
) -> None:
    got = pytorch_graph_sizes(TRTLLM_BENCH_GRAPH_SIZES, max_batch_size, max_num_tokens)
    assert got == sizes


def test_a_pytorch_backend_row_pads_its_graphs_and_overlaps_its_steps() -> None:
    settings = runtime_settings(PYTORCH, 896, 8192)
    assert settings["cudagraph_padding"] is True
    assert settings["cudagraph_capture_sizes"][-3:] == (384, 512, 896)
    assert "overlap_scheduler" not in settings  # the preset's: on
    assert "cudagraph_mode" not in settings  # the engine's: decode-only batches


@pytest.mark.parametrize(
    "engine",
    [
        "TensorRT-LLM",
        "TensorRT-LLM + Triton tensorrtllm_backend",
        "TensorRT-LLM (gptSessionBenchmark, static batching)",
    ],
)
def test_a_cpp_runtime_row_runs_without_overlap_and_its_decode_steps_as_built(
    engine: str,
) -> None:
    settings = runtime_settings(engine, 256, 8192)
    assert settings["overlap_scheduler"] is False
    assert settings["cudagraph_capture_sizes"] == tuple(range(1, 257))
    assert settings["cudagraph_padding"] is False


ONLINE = {
    "scenario": "online serving, 500 requests at given QPS",
    "request_rate_qps": "2",
    "osl": "128",
    "ttft_mean_ms": "20",
    "itl_tpot_mean_ms": "8",
}


@pytest.mark.parametrize(
    ("engine", "version", "ahead"),
    [
        ("vLLM", "0.6.1", False),  # before async scheduling was the default
        ("vLLM", "0.13.0", False),  # `async_scheduling: bool = False` in the 0.13.0 wheel
        ("vLLM", "", False),  # no version: the table's vLLM rows are 2023's
        ("vLLM", "0.14.0", True),  # vllm-project/vllm#27614: None, resolved on
        ("vLLM", "0.19.1", True),
        ("TensorRT-LLM + Triton tensorrtllm_backend", "0.14.0", False),  # the C++ runtime
    ],
)
def test_a_row_schedules_one_step_ahead_as_its_runtime_did(
    engine: str, version: str, ahead: bool
) -> None:
    """Row by row, by the engine label and version (`runtime_settings`)."""
    m = map_row(csv_row(engine=engine, engine_version=version, **ONLINE))
    assert isinstance(m, Measurement)
    assert m.spec.preset == ("vllm" if engine == "vLLM" else "trtllm")
    assert m.spec.engine.overlap_scheduler is ahead
    graphs = make_instance(m.spec).step.cuda_graphs
    assert graphs.padding is (engine == "vLLM")  # vLLM's own CUDA graphs, not the C++ rows'


def test_a_v1_row_becomes_an_instance_with_the_tables_graphs() -> None:
    row = csv_row(source_id="TRTLLM_PERF_v1.0", engine=PYTORCH)
    m = map_row(row)
    assert isinstance(m, Measurement)
    engine = m.spec.engine
    assert engine.overlap_scheduler
    graphs = make_instance(m.spec).step.cuda_graphs
    assert graphs.padding
    assert graphs.max_capture_size == min(engine.max_num_seqs, engine.max_num_batched_tokens)
    assert graphs.run(100, decode_only=True) == (128, False)  # padded, replayed
    assert graphs.run(100, decode_only=False)[1]  # a step with prompt work: eager


@pytest.mark.shared
def test_every_row_runs_with_its_own_runtimes_settings() -> None:
    """Row by row: the v1.0 table (trtllm-bench, PyTorch backend) overlaps and pads; every
    other TensorRT-LLM row (the C++ runtime) does not overlap, and its decode steps run at
    their own size without the eager launch cost."""
    data = load_measurements(CSV)
    runtimes = {"pytorch": 0, "cpp": 0}
    for m in data.measurements:
        engine = m.spec.engine
        graphs = make_instance(m.spec).step.cuda_graphs
        if m.source_id == "TRTLLM_PERF_v1.0":
            runtimes["pytorch"] += 1
            assert m.runtime == "pytorch", m.row_id
            # pipeline stages run `_executor_loop_pp`, which has no overlap
            assert engine.overlap_scheduler is (m.spec.pipeline_parallel_size == 1), m.row_id
            assert graphs.padding and graphs.run(1, decode_only=True) == (1, False), m.row_id
        else:
            runtimes["cpp"] += 1
            assert m.runtime != "pytorch", m.row_id
            assert not engine.overlap_scheduler, m.row_id
            top = engine.max_num_seqs
            assert graphs.run(top, decode_only=True) == (top, False), m.row_id
    assert runtimes == {"pytorch": 140, "cpp": 522}


@pytest.mark.parametrize(
    ("engine", "runtime"),
    [
        (PYTORCH, "pytorch"),
        ("TensorRT-LLM", "cpp"),
        ("TensorRT-LLM + Triton tensorrtllm_backend", "cpp"),
        ("TensorRT-LLM (gptSessionBenchmark)", "cpp"),
        ("vLLM (June 2023)", "vllm"),
    ],
)
def test_a_rows_runtime_is_read_from_its_engine_label(engine: str, runtime: str) -> None:
    assert runtime_of(engine) == runtime


def test_a_cpp_row_and_a_pytorch_row_of_one_shape_select_their_own_fits(monkeypatch) -> None:
    """The same deployment and lengths, run by the C++ runtime and by the PyTorch backend:
    the first is priced by the C++ runtime's general fit, the second as `predict` prices it
    (the engine's general fit), whatever those files hold (a distinct C++ fit stands in)."""
    cpp = map_row(csv_row())
    pytorch = map_row(csv_row(source_id="TRTLLM_PERF_v1.0", engine=PYTORCH))
    assert isinstance(cpp, Measurement) and isinstance(pytorch, Measurement)
    assert (cpp.runtime, pytorch.runtime) == ("cpp", "pytorch")
    assert (cpp.spec.model, cpp.spec.gpu, cpp.spec.isl, cpp.spec.osl) == (
        pytorch.spec.model, pytorch.spec.gpu, pytorch.spec.isl, pytorch.spec.osl
    )  # fmt: skip
    shipped = validation.cpp_runtime_calibration()
    assert "C++ runtime" in shipped.fitted_on["runtime"]
    assert validation.shipped_factors(cpp) == shipped.efficiency()
    own = shipped.model_copy(
        update={"factors": {**shipped.factors, "gemm_bandwidth_efficiency": 0.5}}
    )
    monkeypatch.setattr(validation, "cpp_runtime_calibration", lambda: own)
    assert validation.shipped_factors(cpp).gemm_bandwidth_efficiency == 0.5
    general = validation.shipped_factors(pytorch)
    assert general == calibrated_for(pytorch.spec)
    assert general.gemm_bandwidth_efficiency != 0.5
