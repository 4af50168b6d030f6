"""The day replay's picture: load, instances and p95 TTFT per hour, autoscaled against fixed.

Reads plain data (the JSON `llmsizer day` writes), never the simulation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def day_figure(data: dict[str, Any]) -> Figure:
    """Three panels over the hours of `data["hours"]` (a list of per-hour rows)."""
    rows = data["hours"]
    hour = [r["hour"] + 0.5 for r in rows]
    fig = Figure(figsize=(8, 7))
    FigureCanvasAgg(fig)
    load, inst, ttft = fig.subplots(3, 1, sharex=True)
    load.bar(hour, [r["request_rate"] for r in rows], width=0.9, color="#888")
    load.set_ylabel("load (req/s)")
    fixed = data["fixed"]["num_instances"]
    inst.step(hour, [r["autoscaled_instances"] for r in rows], where="mid", label="autoscaled")
    inst.axhline(fixed, color="black", linestyle="--", label=f"fixed ({fixed})")
    inst.set_ylabel("instances (mean paid)")
    inst.legend(fontsize=8)
    for key, label in (("fixed_p95_ttft_ms", "fixed"), ("autoscaled_p95_ttft_ms", "autoscaled")):
        ttft.plot(hour, [(r[key] or float("nan")) / 1e3 for r in rows], marker="o", label=label)
    limit = data["limits"].get("ttft_ms")
    if limit is not None:
        ttft.axhline(limit / 1e3, color="black", linestyle="--", linewidth=1, label="limit")
    ttft.set_yscale("log")
    ttft.set_ylabel("p95 TTFT (s)")
    ttft.set_xlabel("hour of the day")
    ttft.legend(fontsize=8)
    fig.suptitle(data.get("title", "a day: autoscaled against fixed at the peak"))
    fig.tight_layout()
    return fig


def day_png(data: dict[str, Any], path: Path) -> None:
    """`day_figure` written to `path` (PNG, 120 dpi)."""
    day_figure(data).savefig(path, dpi=120)
