"""Metrics from records: the same definitions for simulated and measured runs.

Definitions (per request, then aggregated; keys follow `vllm bench serve`):

- TTFT (`ttft_ms`): first output token time - arrival (send) time. AIPerf: "Time to First
  Token"; guidellm: `time_to_first_token_ms`.
- TPOT (`tpot_ms`): (E2E - TTFT) / (output tokens - 1), per request, only for requests with
  at least 2 output tokens. AIPerf calls this "Inter Token Latency"; guidellm calls it
  `inter_token_latency_ms`. The course's "ITL" slide means this quantity.
- ITL (`itl_ms`): every gap between consecutive output tokens of a request, pooled over all
  requests (vLLM's ITL). Its mean is weighted by tokens, TPOT's by requests.
- E2E latency (`e2el_ms`): finish (last token) - arrival. AIPerf "Request Latency".
- NTPOT (`ntpot_ms`): E2E / output tokens, the normalised latency per output token.
- Queueing time (`queue_ms`): first scheduled - arrival (simulator only; the client can't see it).
- Throughputs divide by the run's duration: the first arrival to the last finish, unless given.
  `request_throughput` (req/s), `output_throughput` (output tok/s), `total_token_throughput`
  (prompt + output tok/s), each also `..._per_gpu` and `..._per_instance`.
- Goodput (`request_goodput`): requests/s that met every given SLO (vLLM `--goodput`).

Failed requests (an `error`) count in `failed` and are left out of every latency metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.records import RequestRecord

DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el", "ntpot", "queue")


@dataclass(frozen=True, slots=True)
class Slo:
    """Latency limits in seconds that a request must all meet to count as good (None: no limit)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2el_s: float | None = None

    def met_by(self, r: RequestRecord) -> bool:
        checks = ((self.ttft_s, r.ttft_s), (self.tpot_s, r.tpot_s), (self.e2el_s, r.e2el_s))
        return all(lim is None or (v is not None and v <= lim) for lim, v in checks)


def percentile_key(p: float) -> str:
    """vLLM's key fragment for a percentile: 99 -> 'p99', 99.9 -> 'p99.9'."""
    return f"p{p:g}"


def _latency_arrays(ok: Sequence[RequestRecord]) -> dict[str, np.ndarray]:
    n = len(ok)
    first = np.fromiter((r.token_times_s[0] for r in ok), dtype=np.float64, count=n)
    last = np.fromiter((r.token_times_s[-1] for r in ok), dtype=np.float64, count=n)
    arrival = np.fromiter((r.arrival_s for r in ok), dtype=np.float64, count=n)
    finish = np.fromiter(
        (r.finish_s if r.finish_s is not None else r.token_times_s[-1] for r in ok),
        dtype=np.float64,
        count=n,
    )
    n_out = np.fromiter((r.num_output_tokens for r in ok), dtype=np.float64, count=n)
    sched = [r.scheduled_s for r in ok]
    multi = n_out > 1
    itl = (
        np.concatenate([np.diff(r.token_times_s) for r in ok if r.num_output_tokens > 1])
        if multi.any()
        else np.zeros(0)
    )
    out = {
        "ttft": first - arrival,
        "tpot": (last[multi] - first[multi]) / (n_out[multi] - 1),
        "itl": itl,
        "e2el": finish - arrival,
        "ntpot": (finish - arrival) / n_out,
    }
    if all(s is not None for s in sched):
        out["queue"] = np.asarray(sched, dtype=np.float64) - arrival
    return out


def summarize(
    records: Sequence[RequestRecord],
    *,
    num_gpus: int = 1,
    num_instances: int = 1,
    slo: Slo | None = None,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    duration_s: float | None = None,
) -> dict[str, float]:
    """vLLM-style summary of a run. Latencies in ms, throughputs per second.

    Keys: `completed`, `failed`, `duration_s`, `total_input_tokens`, `total_output_tokens`,
    `request_throughput`, `output_throughput`, `total_token_throughput` (and `_per_gpu`,
    `_per_instance` variants), `request_goodput` when an SLO is given, and for each latency
    metric `mean_<m>_ms`, `median_<m>_ms`, `std_<m>_ms`, `p<P>_<m>_ms`.
    """
    ok = [r for r in records if r.ok]
    failed = len(records) - len(ok)
    out: dict[str, float] = {"completed": len(ok), "failed": failed}
    if not records:
        return out
    if duration_s is None:
        start = min(r.arrival_s for r in records)
        end = max((r.finish_s if r.finish_s is not None else r.arrival_s) for r in records)
        duration_s = end - start
    out["duration_s"] = duration_s
    in_tok = sum(r.num_prompt_tokens for r in ok)
    out_tok = sum(r.num_output_tokens for r in ok)
    out["total_input_tokens"] = in_tok
    out["total_output_tokens"] = out_tok
    rate = 1.0 / duration_s if duration_s > 0 else float("nan")
    for key, value in (
        ("request_throughput", len(ok) * rate),
        ("output_throughput", out_tok * rate),
        ("total_token_throughput", (in_tok + out_tok) * rate),
    ):
        out[key] = value
        out[f"{key}_per_instance"] = value / num_instances
        out[f"{key}_per_gpu"] = value / num_gpus
    if slo is not None:
        good = sum(1 for r in ok if slo.met_by(r))
        out["request_goodput"] = good * rate
        out["request_goodput_per_gpu"] = good * rate / num_gpus
    if not ok:
        return out
    for name, values in _latency_arrays(ok).items():
        if values.size == 0:
            continue
        ms = values * 1e3
        out[f"mean_{name}_ms"] = float(ms.mean())
        out[f"median_{name}_ms"] = float(np.median(ms))
        out[f"std_{name}_ms"] = float(ms.std())
        for p in percentiles:
            out[f"{percentile_key(p)}_{name}_ms"] = float(np.percentile(ms, p))
    return out
