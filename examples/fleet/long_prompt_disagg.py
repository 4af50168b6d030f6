"""Aggregated against disaggregated serving for a long-prompt chat use case, by `plan`.

    .venv/bin/llmsizer plan examples/fleet/long_prompt_disagg.yaml \\
        --json examples/fleet/long_prompt_disagg.json --overwrite \\
        > examples/fleet/long_prompt_disagg.txt
    .venv/bin/python examples/fleet/long_prompt_disagg.py

The use case (`long_prompt_disagg.yaml`: Llama 3.1 70B FP8 on H100, 8k-token prompts,
256-token answers, 4 req/s, p95 TTFT <= 3 s and TPOT <= 40 ms) sets `disaggregated: auto`,
so `plan` sizes aggregated instances and disaggregated pools, checks the disaggregated
layout on the whole P/D fleet, and tabulates the crossover over prompt lengths and loads.
This script reads the plan's JSON and writes `long_prompt_disagg.md` and
`long_prompt_disagg.png` beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
READING = """Reading it (hand-written, for the committed run): a TP4 prefill worker turns 8k prompts
into first tokens at 1.81 req/s within the TTFT limit, a TP2 one at 0.89 (five of them, 10
GPUs, against three TP4, 12), and one TP4 decode worker carries 7.1 req/s of 256-token
answers within 40 ms a token, because its steps never carry prompt chunks; aggregated TP4
instances must fit both into the same steps and stop at 0.88 req/s each on the TPOT limit.
Disaggregation pays off from ~4k-token prompts at 4 req/s (from 2k at 8 req/s, where
rounding the two pools up costs less), and fades at 32k, where the prefill dominates both
forms.
"""


def table(d: dict[str, Any]) -> str:
    agg, dis, cross = d["aggregated"], d["disaggregated"], d["crossover"]
    loads = cross["load_factors"]
    lines = [
        "# Llama 3.1 70B FP8, 8k-token prompts: aggregated or disaggregated?",
        "",
        "Produced by `llmsizer plan examples/fleet/long_prompt_disagg.yaml` (`disaggregated: "
        "auto`; output in `long_prompt_disagg.txt` and `.json`) and "
        "`examples/fleet/long_prompt_disagg.py`.",
        "",
        "| answer | layout | GPUs | $ / month |",
        "|---|---|---:|---:|",
    ]
    if agg is not None:
        lines.append(
            f"| aggregated | {agg['num_instances']}x {agg['config']} | {agg['num_gpus']} | "
            f"{_usd(agg['usd_per_month'])} |"
        )
    if dis.get("num_gpus") is not None:
        lines.append(
            f"| disaggregated | {dis['num_prefill']}x TP{dis['prefill_tensor_parallel_size']} "
            f"prefill + {dis['num_decode']}x TP{dis['decode_tensor_parallel_size']} decode | "
            f"{dis['num_gpus']} | {_usd(dis['usd_per_month'])} |"
        )
    lines += ["", f"Winner: **{d['winner']}**; recommended: **{d['recommended']}**.", ""]
    lines += ["One worker's rate within its own limit (req/s):", ""]
    lines += ["| pool | TP | req/s per worker |", "|---|---:|---:|"]
    for r in dis["pool_rates"]:
        rate = f"{r['request_rate']:.2f}" if r["request_rate"] is not None else r["reason"]
        lines.append(f"| {r['role']} | {r['tensor_parallel_size']} | {rate} |")
    lines += ["", "The whole P/D fleet at the planning load (KV handoff: " + dis["kv_link"] + "):"]
    lines += [""]
    for run in dis["fleet_runs"]:
        judged = ", ".join(f"{k}: {v:,.0f} ms" for k, v in run.items() if k.startswith("p"))
        verdict = "meets" if run["meets"] else "misses"
        lay = run["layout"]
        lines.append(
            f"- {lay['num_prefill']}x TP{lay['prefill_tensor_parallel_size']} prefill + "
            f"{lay['num_decode']}x TP{lay['decode_tensor_parallel_size']} decode "
            f"({lay['num_gpus']} GPUs): {verdict} ({judged})"
        )
    lines += [
        "",
        "Crossover (GPUs aggregated / disaggregated, from the workers' rates; mean prompt "
        "tokens by rows, the planning load's multiples by columns):",
        "",
        "| mean prompt | " + " | ".join(f"{g:g}x load" for g in loads) + " |",
        "|---:|" + "---:|" * len(loads),
    ]
    for row in cross["rows"]:
        cells = [f"{_n(c['aggregated'])} / {_n(c['disaggregated'])}" for c in row["gpus"]]
        lines.append(f"| {row['mean_prompt_tokens']:,.0f} | " + " | ".join(cells) + " |")
    lines += ["", d["summary"], "", READING]
    return "\n".join(lines)


def _n(x: int | None) -> str:
    return "-" if x is None else str(x)


def _usd(x: float | None) -> str:
    return "-" if x is None else f"${x:,.0f}"


def picture(d: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cross = d["crossover"]
    loads, rows = cross["load_factors"], cross["rows"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    prompts = [r["mean_prompt_tokens"] for r in rows]
    for k, g in enumerate(loads):  # below 1: disaggregated needs fewer GPUs
        pairs = [(p, r["gpus"][k]) for p, r in zip(prompts, rows, strict=True)]
        pts = [(p, c["disaggregated"] / c["aggregated"]) for p, c in pairs
               if c["aggregated"] and c["disaggregated"]]  # fmt: skip
        a.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=f"{g:g}x load")
    a.axhline(1.0, color="black", linestyle="--", linewidth=1)
    a.set_xscale("log")
    a.set_xticks(prompts, labels=[f"{x:,.0f}" for x in prompts])
    a.minorticks_off()
    a.set(xlabel="mean prompt tokens", ylabel="GPUs disaggregated / aggregated",
          title="the crossover: below 1, disaggregation wins")  # fmt: skip
    a.legend(fontsize=8)
    mid = next(r for r in rows if r["isl_factor"] == 1.0)
    for key in ("aggregated", "disaggregated"):
        b.plot(loads, [c[key] for c in mid["gpus"]], marker="o", label=key)
    b.set_xscale("log")
    b.set_xticks(loads, labels=[f"{g:g}x" for g in loads])
    b.minorticks_off()
    b.set(xlabel="load / planning load (4 req/s)", ylabel="GPUs",
          title=f"GPUs against load ({mid['mean_prompt_tokens']:,.0f}-token prompts)")  # fmt: skip
    b.legend(fontsize=8)
    fig.suptitle("Llama 3.1 70B FP8 on H100, p95 TTFT <= 3 s, TPOT <= 40 ms")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    data = json.loads((HERE / "long_prompt_disagg.json").read_text())["disaggregated"]
    (HERE / "long_prompt_disagg.md").write_text(table(data))
    picture(data, HERE / "long_prompt_disagg.png")


if __name__ == "__main__":
    main()
