"""The course's NeMo 43B fleet (`examples/sizing/nemo43b_dgx_h100.yaml`) checked with its router.

    .venv/bin/python examples/fleet/nemo43b_routers.py

`plan` answers 10 DGX H100, one TP8 TensorRT-LLM instance each, for 31 req/s of
3500-in / 500-out requests with p95 TTFT <= 3 s, judging one instance at 31/10 req/s: a
perfectly balanced fleet. Here the whole fleet is simulated at 31 req/s (Poisson, seed 0,
the same 9,300 requests for every fleet) behind each router, with 10 to 13 instances; the
table gives p95 / p99 TTFT and whether the limit holds, and the smallest fleet that meets it
per router. Writes `nemo43b_routers.md` and `nemo43b_routers.png` beside this file.
"""

from __future__ import annotations

from pathlib import Path

from llmsizer.fleet import simulate_fleet
from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.metrics import summarize
from llmsizer.sim import Engine
from llmsizer.workload import WorkloadSpec, make_workload

HERE = Path(__file__).resolve().parent
RATE, ISL, OSL, NUM_REQUESTS = 31.0, 3500, 500, 9300
LIMIT_MS = 3000.0
ROUTERS = ["round_robin", "random", "power_of_two", "least_outstanding", "least_kv"]
PLANNED = 10  # `examples/sizing/nemo43b_dgx_h100.txt`
FLEETS = [PLANNED, PLANNED + 1, PLANNED + 2, PLANNED + 3]


def engine() -> Engine:
    spec = DeploymentSpec.model_validate(
        {
            "model": "nemo-gpt-43b",
            "gpu": "h100-sxm",
            "precision": "bf16",
            "tp": 8,
            "engine": "trtllm",
        }
    )
    inst = make_instance(spec, max_model_len=ISL + OSL)
    return Engine(inst.engine, inst.step)


def main() -> None:
    workload = make_workload(
        WorkloadSpec(
            arrival="poisson",
            request_rate=RATE,
            num_requests=NUM_REQUESTS,
            isl=ISL,
            osl=OSL,
            seed=0,
        )
    )
    e = engine()
    rows: dict[str, dict[int, tuple[float, float, float]]] = {r: {} for r in ROUTERS}
    for router in ROUTERS:
        for n in FLEETS:
            res = simulate_fleet([e] * n, workload, router)
            s = summarize(res.records)
            counts = res.num_requests_per_instance
            rows[router][n] = (s["p95_ttft_ms"], s["p99_ttft_ms"], counts.max() / counts.mean())
            print(router, n, f"{s['p95_ttft_ms']:.0f}", flush=True)
    (HERE / "nemo43b_routers.md").write_text(table(rows))
    picture(rows, HERE / "nemo43b_routers.png")


def table(rows: dict[str, dict[int, tuple[float, float, float]]]) -> str:
    lines = [
        "# NeMo 43B on DGX H100 (TP8, TensorRT-LLM), 31 req/s: the fleet behind its router",
        "",
        f"Produced by `examples/fleet/nemo43b_routers.py`. `plan` sizes {PLANNED} instances from",
        f"one instance at 31/{PLANNED} req/s (perfect balance). Whole fleet simulated at 31 req/s,",
        "Poisson,",
        f"{NUM_REQUESTS} requests of {ISL} in / {OSL} out tokens; limit p95 TTFT <= 3000 ms.",
        "",
        "| router | instances | p95 TTFT ms | p99 TTFT ms | busiest / mean requests | meets |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for router, by_n in rows.items():
        for n, (p95, p99, split) in by_n.items():
            meets = "yes" if p95 <= LIMIT_MS else "no"
            lines.append(f"| {router} | {n} | {p95:,.0f} | {p99:,.0f} | {split:.2f} | {meets} |")
    lines += ["", "Smallest fleet that meets the limit:", ""]
    for router, by_n in rows.items():
        ok = [n for n, (p95, _, _) in by_n.items() if p95 <= LIMIT_MS]
        lines.append(f"- {router}: {min(ok) if ok else f'more than {max(FLEETS)}'} instances")
    return "\n".join(lines) + "\n"


def picture(rows: dict[str, dict[int, tuple[float, float, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for router, by_n in rows.items():
        ns = list(by_n)
        ax.plot(ns, [by_n[n][0] / 1e3 for n in ns], marker="o", label=router)
    ax.axhline(LIMIT_MS / 1e3, color="black", linestyle="--", linewidth=1, label="limit 3 s")
    ax.set_yscale("log")
    ax.set_xticks(FLEETS)
    ax.set_xlabel("instances (DGX H100, TP8)")
    ax.set_ylabel("p95 TTFT (s)")
    ax.set_title("NeMo 43B at 31 req/s: p95 TTFT by router and fleet size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
