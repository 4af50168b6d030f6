"""The server's own view of latency: means from vLLM's Prometheus histograms over a run.

vLLM exports histograms whose `_sum` and `_count` only grow; the difference between two
scrapes, one before and one after a run, gives the mean over the requests that finished in
between (sum delta / count delta). Label sets (model name, engine index) are added up.

    vllm:time_to_first_token_seconds         arrival at the server -> first token (TTFT)
    vllm:inter_token_latency_seconds         each gap between tokens (ITL; older vLLM:
                                             vllm:time_per_output_token_seconds)
    vllm:request_time_per_output_token_seconds   per-request TPOT
    vllm:e2e_request_latency_seconds         arrival at the server -> finish (E2E)
    vllm:request_queue_time_seconds          waiting before first scheduled

The client's view also includes the HTTP round trip, tokenization and detokenization, so its
means sit slightly above the server's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import httpx

# (our key, vLLM histogram names in order of preference)
HISTOGRAMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ttft", ("vllm:time_to_first_token_seconds",)),
    ("itl", ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")),
    ("tpot", ("vllm:request_time_per_output_token_seconds",)),
    ("e2el", ("vllm:e2e_request_latency_seconds",)),
    ("queue", ("vllm:request_queue_time_seconds",)),
)


def parse_prometheus(text: str) -> dict[str, float]:
    """Sum every sample of the Prometheus text format by metric name (labels dropped); a line
    that is not a sample (an HTML page where /metrics should be) is skipped."""
    totals: dict[str, float] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, _, labelled = line.partition("{")
            rest = labelled.rpartition("}")[2]
        else:
            name, _, rest = line.partition(" ")
        fields = rest.split()
        try:
            value = float(fields[0])
        except (IndexError, ValueError):
            continue
        if math.isnan(value):
            continue
        totals[name] = totals.get(name, 0.0) + value
    return totals


def histogram_means(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """`server_mean_<m>_ms` and `server_num_<m>` for each histogram that moved between scrapes."""
    out: dict[str, float] = {}
    for key, names in HISTOGRAMS:
        for name in names:
            if f"{name}_count" not in after:
                continue
            count = after[f"{name}_count"] - before.get(f"{name}_count", 0.0)
            total = after.get(f"{name}_sum", 0.0) - before.get(f"{name}_sum", 0.0)
            if count > 0:
                out[f"server_mean_{key}_ms"] = total / count * 1e3
                out[f"server_num_{key}"] = count
            break
    return out


async def scrape(http: httpx.AsyncClient) -> dict[str, float]:
    """GET /metrics and parse it; raises `httpx.HTTPError` when the server has none."""
    response = await http.get("/metrics")
    response.raise_for_status()
    return parse_prometheus(response.text)
