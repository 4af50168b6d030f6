"""Compare the benchmark client's latencies with vLLM's own server-side view.

Runs a closed-loop (or Poisson) sweep against a running vLLM with `server_metrics` on, so
every point reads `/metrics` before and after, and prints, per point, the client's mean
TTFT, TPOT, ITL and E2E latency beside the means of vLLM's histograms over the same requests.

It also reports the share of tokens that reached the client less than 1 ms after the
previous one: the engine cannot make tokens that fast (a decode step takes several ms
here), so these were held back and read in a burst, by a client whose event loop was
stalled (see README.md: without --realtime, 12-25 % of tokens here) or by a server process
short of CPU. vLLM's histograms see neither.

    PID=$(../../../shared/reference-server/serve.sh | tail -1)
    python client_vs_server.py http://127.0.0.1:8011 --concurrency 1,4,16 --realtime
    python client_vs_server.py http://127.0.0.1:8011 --request-rate 1,6 --realtime
    kill $PID
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from llmsizer.bench import BenchResult, BenchSpec, run_benchmark
from llmsizer.records import RequestRecord

METRICS = ("ttft", "tpot", "itl", "e2el")


def burst_share(records: tuple[RequestRecord, ...]) -> float:
    """Share of inter-token gaps shorter than 1 ms (tokens delivered in a burst)."""
    gaps = [np.diff(r.token_times_s) for r in records if r.ok and r.num_output_tokens > 1]
    return float(np.mean(np.concatenate(gaps) < 1e-3)) if gaps else 0.0


def table(result: BenchResult) -> str:
    s, v = result.summary, result.server or {}
    lines = [
        f"{result.point.label}: {s['completed']:.0f} requests, "
        f"{burst_share(result.records):.0%} of tokens came < 1 ms after the previous one",
        f"  {'metric':6} {'client ms':>10} {'server ms':>10} {'diff ms':>9}",
    ]
    for m in METRICS:
        client, server = s.get(f"mean_{m}_ms"), v.get(f"server_mean_{m}_ms")
        if client is None or server is None:
            continue
        lines.append(f"  {m:6} {client:10.2f} {server:10.2f} {client - server:9.2f}")
    if result.loop_lag is not None:
        lag = result.loop_lag
        lines.append(
            f"  client event loop late by up to {lag.max_s * 1e3:.1f} ms "
            f"(p99 {lag.p99_s * 1e3:.1f} ms)"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base_url")
    p.add_argument("--isl", type=int, default=512)
    p.add_argument("--osl", type=int, default=128)
    p.add_argument("--concurrency", default="1,4")
    p.add_argument("--request-rate", default="", help="Poisson rates (req/s) instead")
    p.add_argument("--num-prompts", type=int, default=20)
    p.add_argument("--realtime", action="store_true", help="client at real-time priority")
    p.add_argument("--out", type=Path, default=Path("client_vs_server"))
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    spec = BenchSpec(
        base_url=a.base_url,
        isl=a.isl,
        osl=a.osl,
        num_prompts=a.num_prompts,
        concurrency=() if a.request_rate else tuple(int(c) for c in a.concurrency.split(",")),
        request_rate=tuple(float(r) for r in a.request_rate.split(",") if r),
        server_metrics=True,
        realtime=a.realtime,
        result_path=a.out / "results.json",
        records_path=a.out / "requests.jsonl",
    )
    for result in run_benchmark(spec):
        print(table(result))


if __name__ == "__main__":
    main()
