"""A day of chat traffic on an autoscaled fleet against a fleet fixed at the peak.

    .venv/bin/python examples/fleet/day_autoscale.py

Load: 24 hours of Poisson arrivals whose rate follows a daily profile scaled to a peak of
4 req/s (an assumed chat-service shape, stated here: 20 % of the peak at 04:00 rising to
100 % at 16:00, `rate(h) = peak (0.2 + 0.8 sin^2(pi (h - 4) / 24))`), with prompt and output
lengths drawn from the Azure LLM inference conversation trace (2023-11-16, the hour the
trace covers). Deployment: Llama 3.1 70B, FP8 weights and KV cache, TP4 on L40S, vLLM
preset, least-outstanding routing. Fixed fleet: 3 instances, the peak at half their
measured saturated throughput (2.7 req/s each). Autoscaled: 1 to 3 instances,
target 24 requests in flight per instance, decisions every 30 s, 10 min cool-down, and a
start-up delay of the weights' 72.7 GB read at a stated 2 GB/s (36 s; a lower bound: engine
start-up beyond the read is left out). Limit: TTFT <= 2 s. Price: $3 per GPU-hour
(illustrative cloud price, not a quote). Writes `day_autoscale.md` and `day_autoscale.png`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from llmsizer.fleet import simulate_fleet
from llmsizer.fleet.autoscale import AutoscaledResult, Autoscaler, simulate_autoscaled
from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.instance.startup import load_time_s
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine
from llmsizer.workload import Workload, read_trace

HERE = Path(__file__).resolve().parent
TRACE = HERE.parents[1].parent / "shared" / "traces" / "AzureLLMInferenceTrace_conv.csv"
PEAK_RPS, HOURS, FIXED = 4.0, 24, 3
STORAGE_BYTES_PER_S = 2e9  # stated assumption: where the weights are read from
TTFT_LIMIT_S, USD_PER_GPU_HOUR = 2.0, 3.0
SPEC = DeploymentSpec.model_validate(
    {
        "model": "llama-3.1-70b",
        "gpu": "l40s",
        "precision": "fp8",
        "kv_cache_dtype": "fp8",
        "tp": 4,
        "engine": "vllm",
    }
)


def profile(hour: np.ndarray) -> np.ndarray:
    return 0.2 + 0.8 * np.sin(np.pi * (hour - 4) / 24) ** 2


def day_workload(seed: int = 0) -> Workload:
    """Non-homogeneous Poisson by thinning at the peak rate; lengths from the trace."""
    rng = np.random.default_rng(seed)
    span = HOURS * 3600.0
    t = np.cumsum(rng.exponential(1 / PEAK_RPS, int(PEAK_RPS * span * 1.05)))
    t = t[t < span]
    t = t[rng.random(t.shape[0]) < profile(t / 3600)]
    trace = read_trace(TRACE)
    pick = rng.integers(0, trace.num_requests, t.shape[0])
    return Workload(
        num_prompt_tokens=trace.num_prompt_tokens[pick],
        num_output_tokens=trace.num_output_tokens[pick],
        arrival_s=t,
        source=f"daily profile, peak {PEAK_RPS} req/s, Azure conversation lengths",
    )


def hourly(records: list[RequestRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per hour: requests, p95 TTFT (s), fraction within the TTFT limit."""
    hour = np.array([int(r.arrival_s // 3600) for r in records])
    ttft = np.array([r.ttft_s if r.ttft_s is not None else math.inf for r in records])
    n = np.bincount(hour, minlength=HOURS)[:HOURS]
    p95 = np.array([np.percentile(ttft[hour == h], 95) for h in range(HOURS)])
    ok = np.array([np.mean(ttft[hour == h] <= TTFT_LIMIT_S) for h in range(HOURS)])
    return n, p95, ok


def main() -> None:
    inst = make_instance(SPEC, max_model_len=16_384)
    engine = Engine(inst.engine, inst.step)
    startup = load_time_s(inst, STORAGE_BYTES_PER_S)
    w = day_workload()
    print(f"{w.num_requests} requests, start-up {startup:.0f} s", flush=True)
    fixed = simulate_fleet([engine] * FIXED, w, "least_outstanding")
    print("fixed done", flush=True)
    scaler = Autoscaler(
        target_in_flight=24,
        max_instances=FIXED,
        startup_s=startup,
        interval_s=30,
        cooldown_s=600,
    )
    auto = simulate_autoscaled(engine, w, scaler, "least_outstanding")
    print("autoscaled done", flush=True)
    report(w, fixed.records, auto, inst.num_gpus, startup)


def _instances_per_hour(auto: AutoscaledResult) -> np.ndarray:
    """Mean instances paid for in each hour, from the paid intervals (drain included)."""
    out = np.zeros(HOURS)
    for _, start, end in auto.paid_s:
        for h in range(int(start // 3600), min(HOURS, int(end // 3600) + 1)):
            lo, hi = max(start, h * 3600.0), min(end, (h + 1) * 3600.0)
            out[h] += max(0.0, hi - lo) / 3600
    return out


def report(
    w: Workload, fixed: list[RequestRecord], auto: AutoscaledResult, gpus: int, startup: float
) -> None:
    n, p95_f, ok_f = hourly(fixed)
    _, p95_a, ok_a = hourly(auto.fleet.records)
    inst_a = _instances_per_hour(auto)
    span_h = HOURS
    gpu_h_fixed = FIXED * gpus * span_h
    gpu_h_auto = auto.instance_seconds / 3600 * gpus
    met_f = np.mean([r.ttft_s is not None and r.ttft_s <= TTFT_LIMIT_S for r in fixed])
    met_a = np.mean([r.ttft_s is not None and r.ttft_s <= TTFT_LIMIT_S for r in auto.fleet.records])
    lines = [
        "# A day of chat traffic: autoscaled fleet against a fleet fixed at the peak",
        "",
        f"Produced by `examples/fleet/day_autoscale.py` (settings in its docstring): "
        f"{w.num_requests:,} requests, Llama 3.1 70B FP8 TP4 on L40S, start-up {startup:.0f} s.",
        "",
        "| fleet | GPU-hours | cost ($3/GPU-h) | requests within TTFT <= 2 s | worst hour |",
        "|---|---:|---:|---:|---:|",
        f"| fixed at peak ({FIXED} instances) | {gpu_h_fixed:.0f} | "
        f"${gpu_h_fixed * USD_PER_GPU_HOUR:,.0f} | {100 * met_f:.2f} % | "
        f"{100 * ok_f.min():.1f} % |",
        f"| autoscaled (1-{FIXED} instances) | {gpu_h_auto:.0f} | "
        f"${gpu_h_auto * USD_PER_GPU_HOUR:,.0f} | {100 * met_a:.2f} % | "
        f"{100 * ok_a.min():.1f} % |",
        "",
        f"Autoscaling saves {100 * (1 - gpu_h_auto / gpu_h_fixed):.0f} % of the GPU-hours.",
        "",
        "| hour | req/s | instances (auto) | p95 TTFT fixed s | p95 TTFT auto s "
        "| within limit fixed | within limit auto |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for h in range(HOURS):
        lines.append(
            f"| {h:02d} | {n[h] / 3600:.2f} | {inst_a[h]:.2f} | {p95_f[h]:.2f} | {p95_a[h]:.2f} "
            f"| {100 * ok_f[h]:.1f} % | {100 * ok_a[h]:.1f} % |"
        )
    (HERE / "day_autoscale.md").write_text("\n".join(lines) + "\n")
    picture(n, inst_a, p95_f, p95_a, HERE / "day_autoscale.png")


def picture(
    n: np.ndarray, inst: np.ndarray, p95_f: np.ndarray, p95_a: np.ndarray, path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hours = np.arange(HOURS) + 0.5
    fig, (a, b, c) = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    a.bar(hours, n / 3600, width=0.9, color="#888")
    a.set_ylabel("load (req/s)")
    b.step(hours, inst, where="mid", label="autoscaled")
    b.axhline(FIXED, color="black", linestyle="--", label=f"fixed ({FIXED})")
    b.set_ylabel("instances")
    b.legend(fontsize=8)
    c.plot(hours, p95_f, marker="o", label="fixed")
    c.plot(hours, p95_a, marker="o", label="autoscaled")
    c.axhline(TTFT_LIMIT_S, color="black", linestyle="--", linewidth=1, label="limit")
    c.set_yscale("log")
    c.set_ylabel("p95 TTFT (s)")
    c.set_xlabel("hour of day")
    c.legend(fontsize=8)
    fig.suptitle("Llama 3.1 70B FP8 TP4 on L40S: a day, autoscaled vs fixed at the peak")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
