"""What the pages show, computed off the event loop: finished plans, the winner's timeline,
compare columns, measured-vs-predicted rows, uploads checked.

Each function that simulates or reads a file runs in a worker thread (`anyio.to_thread`),
so a request never holds the event loop; errors come back as messages, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from anyio import to_thread
from pydantic import ValidationError
from starlette.datastructures import QueryParams

from llmsizer.calibrate.compare import compare_summaries
from llmsizer.calibrate.readers import import_results
from llmsizer.errors import read_yaml_mapping
from llmsizer.instance import PredictSpec, calibrated_for, predict
from llmsizer.metrics import summarize
from llmsizer.report.plan_html import curve_figure, plan_html
from llmsizer.report.timeline import build_timeline
from llmsizer.report.timeline_interactive import timeline_plotly
from llmsizer.serve.form import clean_form, form_from_usecase, unused_keys, usecase_from_form
from llmsizer.serve.jobs import Job, Jobs, State
from llmsizer.serve.uploads import UploadError
from llmsizer.sizing.plan import search_space
from llmsizer.specs import get_model, model_catalog
from llmsizer.workload.traces import read_trace

PLAN_TIMEOUT_S = 600.0  # a page that needs a finished plan waits this long for it
MEASURED_DEFAULTS = {
    "model": "",
    "gpu": "h100-sxm",
    "tp": "1",
    "precision": "bf16",
    "engine": "vllm",
}
MAX_MEASURED_RUNS = 8  # points predicted for one uploaded file
MAX_PREDICTED_REQUESTS = 2000
TIMELINE_REQUESTS = 400  # drawn on the timeline (a few hundred stay readable; zoom for more)


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table: `digits` significant figures, thousands separated."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or (abs(value) >= 10**digits and float(value).is_integer()):
        return f"{value:,.0f}"
    return f"{value:,.{digits}g}" if abs(value) < 10**digits else f"{value:,.0f}"


def model_names() -> list[str]:
    return sorted(model_catalog())


async def finished_plan(jobs: Jobs, form: Mapping[str, str]) -> Job | str:
    """The finished job of a form's use case, or a message saying why there is none."""
    usecase, errors = usecase_from_form(form)
    if usecase is None:
        return "the use case has errors: " + "; ".join(f"{k}: {v}" for k, v in errors.items())
    job = jobs.submit(usecase)
    await to_thread.run_sync(jobs.wait, job, PLAN_TIMEOUT_S)
    if job.state is State.DONE and job.data is not None:
        return job
    if job.state is State.FAILED:
        return f"the plan failed: {job.error}"
    return f"the plan is {job.state.value}; open the use case page and plan it again"


async def timeline_figure(jobs: Jobs, job: Job) -> tuple[str, str]:
    """The winner at its planned load per instance: the course's timeline (plotly div), and
    a caption; or no figure and why."""
    return await to_thread.run_sync(_timeline_figure, jobs, job)


def _timeline_figure(jobs: Jobs, job: Job) -> tuple[str, str]:
    result = job.result
    winner = result.winner if result is not None else None
    if result is None or winner is None or winner.best is None or winner.sizing is None:
        return "", "no configuration meets the limits: there is no instance to show"
    space = search_space(result.usecase)
    probe = jobs.probes(space, winner.best.config, calibrated_for)
    rate = space.load_rps / winner.sizing.num_instances
    records = probe.run(rate).records
    timeline = build_timeline(records, max_requests=TIMELINE_REQUESTS)  # rows: slots used
    title = f"{winner.best.config.label()} at {rate:.3g} req/s (its share of the planned load)"
    figure = timeline_plotly(timeline, title=title)
    html = figure.to_html(full_html=False, include_plotlyjs=False, div_id="timeline")
    caption = (
        f"One instance under {space.arrivals.source} at {rate:.3g} req/s, the first "
        f"{min(TIMELINE_REQUESTS, len(records)):,} of {len(records):,} simulated requests: "
        "slots over time, the queue, and each request's TTFT and E2E. "
        "Drag to zoom, double-click to reset, hover a bar for its request."
    )
    return html, caption


def curve_html(data: dict[str, Any]) -> str:
    """The plan's latency-throughput curves with the limits (a plotly div)."""
    figure = curve_figure(data)
    figure.update_layout(height=380, margin={"t": 40, "b": 40})
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id="curve")


async def report_html(data: dict[str, Any]) -> str:
    return await to_thread.run_sync(plan_html, data)


async def compare_column(jobs: Jobs, link: str) -> dict[str, Any]:
    """One plan of the compare page, from a shared link (or its query string)."""
    query = link.split("?", 1)[1] if "?" in link else link
    form = clean_form(QueryParams(query))
    column: dict[str, Any] = {"query": urlencode(form), "error": None}
    result = await finished_plan(jobs, form)
    if isinstance(result, str):
        column["error"] = result
        return column
    data = result.data
    assert data is not None
    column["name"] = data["name"]
    column["model"] = data["model"]
    column["load_rps"] = data["load"]["load_rps"]
    column["limits"] = ", ".join(lim["label"] for lim in data["limits"]) or "none (offline)"
    column["candidates"] = data["candidates"]
    column["winner"] = next((c for c in data["candidates"] if c["feasible"]), None)
    return column


async def check_upload(kind: str, path: Path) -> tuple[str, str]:
    """The form field an upload fills and its value (`usecase`: the query of the whole
    form); raises `UploadError` saying why the file cannot be used."""
    return await to_thread.run_sync(_check_upload, kind, path)


def _check_upload(kind: str, path: Path) -> tuple[str, str]:
    try:
        if kind == "config":
            get_model(str(path))  # raises naming what is missing or wrong
            return "model", str(path)
        if kind == "trace":
            read_trace(path)
            return "lengths_trace", str(path)
        data = read_yaml_mapping(path, "use case")
    except (ValueError, OSError) as e:
        raise UploadError(f"not a usable {kind} file: {e}") from None
    form = form_from_usecase(data)
    note = unused_keys(data)
    if note:
        form["note"] = f"not shown on the page (the plan uses defaults): {', '.join(note)}"
    return "", urlencode(form)


async def measured_rows(
    path: Path, fields: Mapping[str, str]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Measured beside predicted for each run in an uploaded result file (at most
    `MAX_MEASURED_RUNS`), and errors by field."""
    return await to_thread.run_sync(_measured_rows, path, dict(fields))


def _measured_rows(
    path: Path, fields: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    try:
        runs = import_results(path)
    except (ValueError, OSError) as e:
        return [], {"file": str(e).replace(str(path), "the file")}
    rows: list[dict[str, Any]] = []
    for run in runs[:MAX_MEASURED_RUNS]:
        ok = [r for r in run.records if r.ok]
        if not ok:
            continue
        measured = summarize(run.records, duration_s=run.duration_s)
        load: dict[str, Any] = {"request_rate": run.request_rate}
        label = f"Poisson {run.request_rate:g} req/s" if run.request_rate else ""
        if run.request_rate is None:
            load = {"concurrency": run.max_concurrency or len(run.records)}
            label = f"concurrency {load['concurrency']}"
        spec_data = {
            "model": fields.get("model", ""),
            "gpu": fields.get("gpu", ""),
            "tensor_parallel_size": fields.get("tp", "1"),
            "precision": fields.get("precision", ""),
            "engine": fields.get("engine", ""),
            "isl": max(1, round(sum(r.num_prompt_tokens for r in ok) / len(ok))),
            "osl": max(1, round(sum(r.num_output_tokens for r in ok) / len(ok))),
            "num_requests": min(len(run.records), MAX_PREDICTED_REQUESTS),
            **load,
        }
        try:
            prediction = predict(PredictSpec.model_validate(spec_data))
        except ValidationError as e:
            return [], {_measured_field(p["loc"]): p["msg"] for p in e.errors()}
        except ValueError as e:  # an unknown name, a model that does not fit: whose is it?
            named = (k for k in ("gpu", "model", "precision", "engine") if fields.get(k))
            return [], {next((k for k in named if fields[k] in str(e)), "model"): str(e)}
        for c in compare_summaries(measured, prediction.summary, label):
            rows.append({"point": label, "metric": c.name, "measured": c.measured,
                         "predicted": c.predicted, "error_pct": 100 * c.error})  # fmt: skip
    if not rows:
        return [], {"file": "the file holds no successful requests to compare"}
    return rows, {}


def _measured_field(loc: tuple[int | str, ...]) -> str:
    name = str(loc[0]) if loc else "model"
    return {"tensor_parallel_size": "tp"}.get(name, name if name in MEASURED_DEFAULTS else "model")
