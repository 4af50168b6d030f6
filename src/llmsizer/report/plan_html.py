"""The plan as one self-contained HTML page a solution architect can send to a customer.

Reads only the plain data of `llmsizer.sizing.plan_data` (never simulator objects). plotly.js
is inlined once in the page head (no CDN, works offline); every figure is a `div` that uses
it. Sections: the answer and why, the ranking, cost comparison, latency-throughput curves with
the limits drawn, the winner's Pareto points, timeline, uncertainty band, headroom, business
view, and every configuration's verdict.
"""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.answer { font-size: 1.15em; background: #eef4fa; padding: 0.8em 1em; border-radius: 6px; }
.muted { color: #666; font-size: 0.9em; }
"""


def plan_html(data: dict[str, Any]) -> str:
    """The whole page for a plan's plain data."""
    winner = _winner(data)
    sections = [
        f"<h1>Sizing plan: {_e(data['name'])} ({_e(data['model'])})</h1>",
        _summary(data),
        "<h2>Candidates</h2>",
        _ranking_table(data),
        "<h2>Cost and size by GPU</h2>",
        _figure(_cost_figure(data), "cost"),
        "<h2>Latency against throughput</h2>",
        _figure(curve_figure(data), "curves"),
    ]
    for c in data["candidates"]:
        if c.get("pareto"):
            sections += [
                f"<h2>Pareto points on {_e(c['gpu'])}</h2>",
                "<p class=muted>Throughput-optimal at the top, latency-optimal at the bottom "
                "(a request alone on the instance), over every configuration searched.</p>",
                _pareto_table(c, data),
            ]
    if data["timeline"] is not None:
        sections += [
            "<h2>The chosen configuration at its planned load</h2>",
            _figure(_timeline_figure(data["timeline"], arrivals(data)), "timeline"),
        ]
    if data.get("levers"):
        sections += ["<h2>What each lever buys</h2>", _levers_table(data["levers"])]
    sections += [f"<p class=muted>warning: {_e(n)}</p>" for n in data.get("notes", [])]
    if data["band"] is not None:
        sections += ["<h2>Uncertainty</h2>", _band_table(data["band"])]
    if winner is not None:
        sections += [
            "<h2>Headroom and business view</h2>",
            _headroom_table(winner),
            _business_table(winner),
        ]
    sections += ["<h2>Every configuration</h2>", _configurations_table(data)]
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>Sizing plan: {_e(data['name'])}</title><style>{STYLE}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>\n{body}\n</body></html>\n"
    )


def _e(value: object) -> str:
    return html.escape(str(value))


def _winner(data: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in data["candidates"] if c["gpu"] == data["winner"]), None)


def _figure(fig: go.Figure, name: str) -> str:
    """A figure's div; a fixed id keeps the page the same for the same plan."""
    return str(fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"figure-{name}"))


def _table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    def cell(tag: str, i: int, v: str) -> str:
        return f"<{tag}{' class=l' if i < left else ''}>{v}</{tag}>"

    head = "".join(cell("th", i, _e(h)) for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _summary(data: dict[str, Any]) -> str:
    load, lengths = data["load"], data["lengths"]
    limits = ", ".join(x["label"] for x in data["limits"]) or "none (throughput only)"
    answer, *why = data["explanation"] or ["(no explanation)"]
    items = "".join(f"<li>{_e(s)}</li>" for s in why)
    return (
        f"<p class=answer>{_e(answer)}</p><ul>{items}</ul>"
        f"<p class=muted>Lengths: {_e(lengths['source'])}. Planning peak "
        f"{load['planning_peak_rps']:.4g} req/s, headroom {load['headroom']:.0%}, sized for "
        f"{load['load_rps']:.4g} req/s. Limits: {_e(limits)}. Prices are user inputs.</p>"
    )


def _ranking_table(data: dict[str, Any]) -> str:
    rows = []
    for i, c in enumerate(data["candidates"], start=1):
        if not c["feasible"]:
            near = c["closest"]["label"] if c["closest"] else "nothing fits in memory"
            rows.append(
                [str(i), _e(c["gpu"]), _e(f"no configuration meets the limits (closest: {near})")]
                + ["-"] * 7
            )
            continue
        s, cost = c["sizing"], c["cost"]
        rows.append(
            [
                str(i),
                _e(c["gpu"]),
                _e(c["configuration"]["label"]),
                f"{c['rate_per_gpu_rps']:.3g}",
                f"{c['rate_per_server_rps']:.3g}",
                _e(c["configuration"]["binding"] or "-"),
                str(s["num_instances"]),
                f"{s['num_servers']} x {_e(c['server']['name'])}",
                "-" if cost is None else f"${cost['usd_per_month']:,.0f}",
                "-" if cost is None else f"${cost['usd_per_million_tokens']:,.3f}",
            ]
        )
    headers = [
        "#",
        "GPU",
        "best configuration",
        "req/s per GPU",
        "req/s per server",
        "binds",
        "instances",
        "servers",
        "$ per month",
        "$ per M tokens",
    ]
    return _table(headers, rows, left=3)


def _cost_figure(data: dict[str, Any]) -> go.Figure:
    feasible = [c for c in data["candidates"] if c["feasible"]]
    priced = feasible and all(c["cost"] is not None for c in feasible)
    names = [c["gpu"] for c in feasible]
    if priced:
        values = [c["cost"]["usd_per_month"] for c in feasible]
        title, axis = "Cost per month (user-given prices)", "US$ per month"
    else:
        values = [c["sizing"]["num_servers"] for c in feasible]
        title, axis = "Servers needed (no prices given)", "servers"
    fig = go.Figure(
        go.Bar(
            x=names,
            y=values,
            marker_color=COLOURS[: len(names)],
            text=[f"{v:,.0f}" for v in values],
            textposition="auto",
        )
    )
    fig.update_layout(title=title, yaxis_title=axis, height=360, margin={"t": 50})
    return fig


def curve_figure(data: dict[str, Any]) -> go.Figure:
    """Each GPU's latency-throughput curve with the limits drawn (also the studio's)."""
    keys = [x["key"] for x in data["limits"]] or ["p95_ttft_ms"]
    fig = go.Figure()
    for i, c in enumerate(data["candidates"]):
        if not c.get("curve"):
            continue
        x = [p["rate_per_gpu_rps"] for p in c["curve"]]
        for j, key in enumerate(keys):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[p[key] for p in c["curve"]],
                    mode="lines+markers",
                    name=f"{c['gpu']} {key}",
                    line={
                        "color": COLOURS[i % len(COLOURS)],
                        "dash": ("solid", "dot", "dash")[j % 3],
                    },
                    hovertext=[p["label"] for p in c["curve"]],
                )
            )
    for x in data["limits"]:
        fig.add_hline(
            y=x["limit_ms"],
            line_dash="dash",
            line_color="#d62728",
            annotation_text=x["label"],
            annotation_position="top left",
        )
    fig.update_layout(
        xaxis_title=f"requests/s per GPU (offered, {arrivals(data)})",
        height=460,
        yaxis_title="latency at the limit's percentile (ms)",
        yaxis_type="log",
        title="Each GPU's best configuration: latency rises with load",
    )
    return fig


def arrivals(data: dict[str, Any]) -> str:
    """The plan's arrival pattern in words ("Poisson arrivals", "gamma arrivals, burstiness
    0.2", a trace's gaps): what the curves and the timeline were simulated under."""
    return str(data["load"].get("arrivals") or "Poisson arrivals")


def _timeline_figure(tl: dict[str, Any], pattern: str) -> go.Figure:
    t = tl["time_s"]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=tl["num_running"], name="running requests"))
    fig.add_trace(go.Scatter(x=t, y=tl["num_waiting"], name="waiting requests"))
    fig.add_trace(
        go.Scatter(
            x=t,
            y=[100 * v for v in tl["kv_used"]],
            name="KV cache used (%)",
            yaxis="y2",
            line={"dash": "dot"},
        )
    )
    fig.update_layout(
        title=f"One instance at {tl['rate']:.3g} req/s ({pattern}), engine step by step",
        xaxis_title="simulated time (s)",
        yaxis_title="requests",
        height=380,
        yaxis2={
            "title": "KV cache used (%)",
            "overlaying": "y",
            "side": "right",
            "range": [0, 100],
        },
    )
    return fig


def _pareto_table(c: dict[str, Any], data: dict[str, Any]) -> str:
    keys = [x["key"] for x in data["limits"]] or ["p95_ttft_ms"]
    rows = [
        [
            _e(p["label"]),
            f"{p['rate_per_gpu_rps']:.3g}",
            *[f"{p[k]:,.1f}" for k in keys],
            "yes" if p["meets"] else "no",
        ]
        for p in reversed(c["pareto"])
    ]
    return _table(["configuration", "req/s per GPU", *keys, "meets the limits"], rows)


def _levers_table(rows: list[dict[str, Any]]) -> str:
    """GPUs per lever group on the winner's GPU (`sizing.levers`), as the terminal shows."""
    out = []
    for r in rows:
        c, s = r["configuration"], r["sizing"]
        out.append(
            [
                _e(r["lever"]),
                _e(c["label"]) if c else "none meets the limits",
                "yes" if r["accepted"] else "no",
                _e(r["quality"]),
                str(s["num_gpus"]) if s else "-",
                str(s["num_servers"]) if s else "-",
            ]
        )
    return _table(["lever", "configuration", "accepted", "quality", "GPUs", "servers"], out, 4)


def _band_table(band: dict[str, Any]) -> str:
    rows = [
        [
            _e(v["label"]),
            "-" if v["rate_per_instance_rps"] is None else f"{v['rate_per_instance_rps']:.3g}",
            str(v.get("num_instances", "-")),
            str(v.get("num_servers", "-")),
        ]
        for v in band["variants"]
    ]
    return _table(["assumption", "req/s per instance", "instances", "servers"], rows)


def _headroom_table(c: dict[str, Any]) -> str:
    rows = [
        [f"{r['headroom']:.0%}", str(r["num_instances"]), str(r["num_gpus"]), str(r["num_servers"])]
        for r in c["headroom"]
    ]
    return _table(["headroom", "instances", "GPUs", "servers"], rows, left=0)


def _business_table(c: dict[str, Any]) -> str:
    b = c["business"]
    rows = [
        [
            f"{b['capacity_rps']:.4g}",
            f"{b['requests_per_day']:,.0f}",
            f"{b['input_tokens_per_day']:,.0f}",
            f"{b['output_tokens_per_day']:,.0f}",
            f"{b['users_served']:,.0f}",
        ]
    ]
    headers = [
        "capacity req/s",
        "requests per working day",
        "input tokens per day",
        "output tokens per day",
        "daily users served",
    ]
    return _table(headers, rows, left=0)


def _configurations_table(data: dict[str, Any]) -> str:
    rows = []
    for r in data["configurations"]:
        rate = r["rate_per_gpu_rps"]
        rows.append(
            [
                _e(r["label"]),
                _e(r["status_text"]),
                "-" if r["capacity_rps"] is None else f"{r['capacity_rps']:.3g}",
                "-" if rate is None else f"{rate:.3g}",
                _e(r["binding"] or "-"),
                f"<span class=muted>{_e(r['reason'])}</span>",
            ]
        )
    headers = [
        "configuration",
        "verdict",
        "capacity req/s per instance",
        "req/s per GPU",
        "binds",
        "why",
    ]
    return _table(headers, rows, left=2)
