"""Aggregated against disaggregated serving for a long-prompt chat use case.

    .venv/bin/python examples/fleet/long_prompt_disagg.py

Llama 3.1 70B, FP8 weights and KV cache, on one DGX H100 (8 GPUs) as four TP2 workers;
prompts of 8,192 tokens (a long conversation or a retrieved document), answers of 256
(lengths uniform in [0.8 L, L]), Poisson arrivals at each rate (seed 0, 1,200 requests).
Aggregated: four vLLM-style instances behind least-outstanding routing. Disaggregated: the
same four workers split P:D = 1:3, 2:2 and 3:1, the KV cache moving over NVLink inside the
node. Limits: p95 TTFT <= 3 s and p95 TPOT <= 40 ms. The table gives both percentiles per
rate; the winner is the configuration meeting both limits at the highest rate. Writes
`long_prompt_disagg.md` and `long_prompt_disagg.png` beside this file.
"""

from __future__ import annotations

from pathlib import Path

from llmsizer.fleet import KvTransfer, simulate_fleet
from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.instance.disagg import make_disaggregated
from llmsizer.metrics import summarize
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine
from llmsizer.workload import LengthSpec, WorkloadSpec, make_workload

HERE = Path(__file__).resolve().parent
ISL, OSL, NUM_REQUESTS = 8192, 256, 1200
RATES = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
TTFT_MS, TPOT_MS = 3000.0, 40.0
WORKER = DeploymentSpec.model_validate(
    {
        "model": "llama-3.1-70b",
        "gpu": "h100-sxm",
        "precision": "fp8",
        "kv_cache_dtype": "fp8",
        "tp": 2,
        "engine": "vllm",
    }
)
SPLITS = [(1, 3), (2, 2), (3, 1)]
Result = dict[str, dict[float, tuple[float, float]]]


def workload(rate: float):  # type: ignore[no-untyped-def]
    return make_workload(
        WorkloadSpec(
            arrival="poisson",
            request_rate=rate,
            num_requests=NUM_REQUESTS,
            seed=0,
            isl=LengthSpec(kind="uniform", low=int(0.8 * ISL), high=ISL),
            osl=LengthSpec(kind="uniform", low=int(0.8 * OSL), high=OSL),
        )
    )


def _p95(records: list[RequestRecord]) -> tuple[float, float]:
    s = summarize(records)
    return s["p95_ttft_ms"], s["p95_tpot_ms"]


def main() -> None:
    inst = make_instance(WORKER, max_model_len=ISL + OSL)
    engine = Engine(inst.engine, inst.step)
    results: Result = {"aggregated 4": {}}
    for p, d in SPLITS:
        results[f"disaggregated {p}P:{d}D"] = {}
    for rate in RATES:
        w = workload(rate)
        results["aggregated 4"][rate] = _p95(
            simulate_fleet([engine] * 4, w, "least_outstanding").records
        )
        for p, d in SPLITS:
            fleet = make_disaggregated(
                WORKER, WORKER, num_prefill=p, num_decode=d, link="nvlink", max_model_len=ISL + OSL
            )
            results[f"disaggregated {p}P:{d}D"][rate] = _p95(fleet.run(w).records)
        print(rate, {k: v[rate] for k, v in results.items()}, flush=True)
    (HERE / "long_prompt_disagg.md").write_text(table(results, fleet.transfer))
    picture(results, HERE / "long_prompt_disagg.png")


def _meets(v: tuple[float, float]) -> bool:
    return v[0] <= TTFT_MS and v[1] <= TPOT_MS


def table(results: Result, link: KvTransfer) -> str:
    lines = [
        "# Llama 3.1 70B FP8, 8k-token prompts, one DGX H100: aggregated or disaggregated?",
        "",
        "Produced by `examples/fleet/long_prompt_disagg.py`: four TP2 workers (8 H100), vLLM",
        f"preset; prompts uniform in [{int(0.8 * ISL)}, {ISL}], answers in "
        f"[{int(0.8 * OSL)}, {OSL}],",
        f"Poisson, {NUM_REQUESTS} requests per point. KV handoff over NVLink: "
        f"{link.bytes_per_token / 1e3:.0f} kB per token per GPU at "
        f"{link.bytes_per_s / 1e9:.0f} GB/s, {link.seconds(ISL) * 1e3:.2f} ms for an 8k prompt.",
        f"Limits: p95 TTFT <= {TTFT_MS:.0f} ms, p95 TPOT <= {TPOT_MS:.0f} ms. Cells: p95 TTFT ms /"
        " p95 TPOT ms, * where both limits hold.",
        "",
        "| configuration | " + " | ".join(f"{r:g} req/s" for r in RATES) + " | best rate |",
        "|---|" + "---:|" * (len(RATES) + 1),
    ]
    for name, by_rate in results.items():
        cells = [f"{t:,.0f} / {p:.1f}{' *' if _meets((t, p)) else ''}" for t, p in by_rate.values()]
        ok = [r for r, v in by_rate.items() if _meets(v)]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {max(ok) if ok else '-'} |")
    best = {
        n: max([r for r, v in by.items() if _meets(v)], default=0.0) for n, by in results.items()
    }
    winner = max(best, key=lambda n: best[n])
    agg = best["aggregated 4"]
    lines += [
        "",
        f"Winner: **{winner}** at {best[winner]:g} req/s within both limits "
        f"(aggregated: {agg:g} req/s).",
    ]
    return "\n".join(lines) + "\n"


def picture(results: Result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for name, by_rate in results.items():
        rates = list(by_rate)
        a.plot(rates, [by_rate[r][0] / 1e3 for r in rates], marker="o", label=name)
        b.plot(rates, [by_rate[r][1] for r in rates], marker="o", label=name)
    a.axhline(TTFT_MS / 1e3, color="black", linestyle="--", linewidth=1)
    b.axhline(TPOT_MS, color="black", linestyle="--", linewidth=1)
    a.set(xlabel="request rate (req/s)", ylabel="p95 TTFT (s)", yscale="log", title="first token")
    b.set(xlabel="request rate (req/s)", ylabel="p95 TPOT (ms)", title="per output token")
    a.legend(fontsize=8)
    fig.suptitle("Llama 3.1 70B FP8, 8k prompts, 8x H100: aggregated vs disaggregated")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
