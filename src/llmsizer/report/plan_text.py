"""The plan on a terminal (rich), from plain data (`plan_data`): the ranking, the winner's
business view, headroom and Pareto tables, and the explanation.

`plan_text(data, width)` renders to a string on a fixed-width console without colour, which
golden tests compare; `print_plan(data, console)` prints to a live console.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text


def plan_text(data: dict[str, Any], width: int = 120) -> str:
    """The plan as plain text at a fixed width."""
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    print_plan(data, console)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in out.splitlines()) + "\n"


def print_plan(data: dict[str, Any], console: Console) -> None:
    """Print every section of the plan."""
    console.print(_header(data))
    console.print(_ranking(data))
    winner = next((c for c in data["candidates"] if c["gpu"] == data["winner"]), None)
    if winner is not None:
        console.print(Group(_business(winner), _headroom(winner), _pareto(winner, data)))
    for c in data["candidates"]:
        if len(c.get("price_models", [])) > 1:
            console.print(_price_models(c))
    if data.get("levers"):
        console.print(_levers(data["levers"]))
    for note in data.get("notes", []):
        console.print(Text(f"warning: {note}"))
    if data["band"] is not None:
        console.print(_band(data["band"]))
        for note in data["band"].get("notes", []):
            console.print(f"  {note}", highlight=False)
    console.print(Text("Why", style="bold"))
    for sentence in data["explanation"]:
        console.print(Text(f"- {sentence}"))


def _header(data: dict[str, Any]) -> Text:
    load = data["load"]
    lengths = data["lengths"]
    limits = ", ".join(item["label"] for item in data["limits"]) or "none (throughput only)"
    text = Text()
    text.append(f"Plan: {data['name']} ({data['model']})\n", style="bold")
    text.append(
        f"  lengths: {lengths['source']} (mean {lengths['mean_input_tokens']:.0f} in / "
        f"{lengths['mean_output_tokens']:.0f} out tokens)\n"
    )
    text.append(
        f"  load: planning peak {load['planning_peak_rps']:.4g} req/s, headroom "
        f"{load['headroom']:.0%}, sized for {load['load_rps']:.4g} req/s\n"
    )
    text.append(f"  limits: {limits}")
    return text


def _money(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"${value:,.{digits}f}"


def _ranking(data: dict[str, Any]) -> Table:
    table = Table(title=f"Candidates (ranked by {data['ranked_by']})", title_justify="left")
    for name in ("#", "GPU", "configuration", "binds"):
        table.add_column(name)
    for name in ("rps/GPU", "rps/server", "inst", "GPUs", "servers", "$/month", "$/Mtok"):
        table.add_column(name, justify="right")
    for i, c in enumerate(data["candidates"], start=1):
        if not c["feasible"]:
            near = c["closest"]["label"] if c["closest"] else "nothing fits"
            table.add_row(str(i), c["gpu"], f"none meets the limits (closest: {near})", *["-"] * 8)
            continue
        s, cost, config = c["sizing"], c["cost"], c["configuration"]
        short = config["label"].removeprefix(c["gpu"]).strip()
        table.add_row(
            str(i),
            c["gpu"],
            short,
            config["binding"] or "-",
            f"{c['rate_per_gpu_rps']:.3g}",
            f"{c['rate_per_server_rps']:.3g}",
            str(s["num_instances"]),
            str(s["num_gpus"]),
            str(s["num_servers"]),
            _money(cost and cost["usd_per_month"]),
            _money(cost and cost["usd_per_million_tokens"], 3),
        )
    return table


def _business(c: dict[str, Any]) -> Table:
    b = c["business"]
    table = Table(title="Business view (at capacity, per working day)", title_justify="left")
    for name in (
        "capacity req/s",
        "requests/day",
        "input tok/day",
        "output tok/day",
        "users served",
        "requests/day/server",
    ):
        table.add_column(name, justify="right")
    table.add_row(
        f"{b['capacity_rps']:.4g}",
        f"{b['requests_per_day']:,.0f}",
        f"{b['input_tokens_per_day']:,.0f}",
        f"{b['output_tokens_per_day']:,.0f}",
        f"{b['users_served']:,.0f}",
        f"{b['requests_per_day_per_server']:,.0f}",
    )
    return table


def _headroom(c: dict[str, Any]) -> Table:
    table = Table(title="Headroom in instances", title_justify="left")
    for name in ("headroom", "instances", "GPUs", "servers"):
        table.add_column(name, justify="right")
    for row in c["headroom"]:
        table.add_row(
            f"{row['headroom']:.0%}",
            str(row["num_instances"]),
            str(row["num_gpus"]),
            str(row["num_servers"]),
        )
    return table


def _pareto(c: dict[str, Any], data: dict[str, Any]) -> Table:
    # without limits, the TTFT at the use case's percentile (whatever the key says it is)
    ttft = [k for k in (c["pareto"] or [{}])[0] if k.endswith("_ttft_ms")][:1]
    keys = [item["key"] for item in data["limits"]] or ttft
    table = Table(
        title=f"Pareto points on {c['gpu']} (latency vs req/s per GPU)", title_justify="left"
    )
    for name in ("configuration", "req/s/GPU", *keys, "meets"):
        table.add_column(name, justify="left" if name == "configuration" else "right")
    for p in c["pareto"]:
        table.add_row(
            p["label"],
            f"{p['rate_per_gpu_rps']:.3g}",
            *[f"{p[k]:,.1f}" for k in keys],
            "yes" if p["meets"] else "no",
        )
    return table


def _band(band: dict[str, Any]) -> Table:
    low, high = band["num_servers"]
    span = f"{low} to {'more' if high is None else high}" if low != high else str(low)
    unit = "server" if span == "1" else "servers"
    table = Table(title=f"Uncertainty: {span} {unit}", title_justify="left")
    for name in ("assumption", "req/s/inst", "instances", "GPUs", "servers"):
        table.add_column(name, justify="left" if name == "assumption" else "right")
    for v in band["variants"]:
        rate = v["rate_per_instance_rps"]
        table.add_row(
            v["label"],
            "-" if rate is None else f"{rate:.3g}",
            str(v.get("num_instances", "-")),
            str(v.get("num_gpus", "-")),
            str(v.get("num_servers", "-")),
        )
    return table


def _levers(rows: list[dict[str, Any]]) -> Table:
    """What each lever buys: GPUs and servers per lever group, against the baseline."""
    base = rows[0]["sizing"]
    gpu = next((r["configuration"]["gpu"] for r in rows if r["configuration"]), "")
    table = Table(title=f"What each lever buys on {gpu}", title_justify="left")
    for name in ("lever", "configuration", "accepted", "GPUs", "vs base", "servers", "quality"):
        table.add_column(name, justify="right" if name in ("GPUs", "servers") else "left")
    for row in rows:
        s, config = row["sizing"], row["configuration"]
        if s is None:
            table.add_row(row["lever"], "none meets the limits", "", "-", "-", "-", "")
            continue
        change = "-" if base is None else f"{s['num_gpus'] / base['num_gpus'] - 1:+.0%}"
        table.add_row(
            row["lever"],
            config["label"].removeprefix(gpu).strip(),
            "yes" if row["accepted"] else "no",
            str(s["num_gpus"]),
            change,
            str(s["num_servers"]),
            row["quality"],
        )
    return table


def _price_models(c: dict[str, Any]) -> Table:
    """Every price model of one candidate, and when owning beats renting."""
    u = c.get("break_even_utilisation")
    note = ""
    if u is not None:
        note = (
            f"; owning is cheaper above {u:.0%} cloud utilisation"
            if u <= 1
            else "; renting is cheaper at any utilisation"
        )
    table = Table(title=f"Price models on {c['gpu']}{note}", title_justify="left")
    for name in ("model", "$/month", "$/Mtok", "basis", "source"):
        table.add_column(name, justify="right" if name.startswith("$") else "left")
    for m in c["price_models"]:
        table.add_row(
            "cloud" if m["is_cloud"] else "on-premises",
            _money(m["usd_per_month"]),
            _money(m["usd_per_million_tokens"], 3),
            m["basis"],
            m["source"],
        )
    return table
