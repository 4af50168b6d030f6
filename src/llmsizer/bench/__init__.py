"""Benchmark client for OpenAI-compatible servers; imports neither `sim` nor `perf`.

Measures a server with the simulator's own record type and metric definitions:

    from llmsizer.bench import BenchSpec, run_benchmark
    results = run_benchmark(BenchSpec(base_url="http://127.0.0.1:8000", concurrency=(1, 4)))

Other tools' result files are read by `llmsizer.calibrate.readers`.
"""

from llmsizer.bench.client import ClientOptions, Endpoint, RequestPlan, send_request
from llmsizer.bench.errors import BenchError, PromptError
from llmsizer.bench.results import (
    BenchResult,
    format_result,
    read_results,
    result_to_json,
    write_results,
)
from llmsizer.bench.runner import run_benchmark, run_benchmark_async
from llmsizer.bench.spec import BenchSpec, LoadPoint
from llmsizer.bench.sse import SseEvent, SseParser

__all__ = [
    "BenchError",
    "BenchResult",
    "BenchSpec",
    "ClientOptions",
    "Endpoint",
    "LoadPoint",
    "PromptError",
    "RequestPlan",
    "SseEvent",
    "SseParser",
    "format_result",
    "read_results",
    "result_to_json",
    "run_benchmark",
    "run_benchmark_async",
    "send_request",
    "write_results",
]
