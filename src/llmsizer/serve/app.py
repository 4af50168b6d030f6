"""The Starlette app: pages, htmx fragments, exports and uploads.

    app = make_app()                     # uvicorn.run(app, host="127.0.0.1", port=8000)

Pages render server side (Jinja2); htmx (vendored, `static/`) swaps fragments in, so the
form is never re-rendered while the user types and nothing typed is lost. The page's URL is
the use case (`form.py`). Long work runs in `Jobs`; requests only read a job's state.
Every error becomes a message beside its field or a short page: the app never answers with
a traceback (`NoTraceback`).
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from llmsizer.serve import views
from llmsizer.serve.form import GENERAL, SECTIONS, clean_form, usecase_from_form
from llmsizer.serve.jobs import Jobs
from llmsizer.serve.uploads import UploadError, Uploads

log = logging.getLogger("llmsizer.serve")
STATIC = Path(__file__).parent / "static"


def make_app(jobs: Jobs | None = None, upload_dir: Path | None = None) -> Starlette:
    """The sizing studio. `jobs`: the job table (default: a new one, closed on shutdown);
    `upload_dir`: where uploaded files are kept (default: a new temporary folder)."""
    own_jobs = jobs is None
    table = Jobs() if jobs is None else jobs
    folder = Path(tempfile.mkdtemp(prefix="llmsizer-serve-")) if upload_dir is None else upload_dir
    env = Environment(loader=PackageLoader("llmsizer.serve"), autoescape=select_autoescape())
    env.globals.update(
        sections=SECTIONS, general=GENERAL, fmt=views.fmt, curve_html=views.curve_html
    )
    studio = Studio(table, Uploads(folder), env)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if own_jobs:
            table.close()

    routes = [
        Route("/", studio.index),
        Route("/plan", studio.plan),
        Route("/job/{job_id}", studio.job),
        Route("/job/{job_id}/cancel", studio.cancel, methods=["POST"]),
        Route("/timeline", studio.timeline),
        Route("/compare", studio.compare),
        Route("/measured", studio.measured, methods=["GET", "POST"]),
        Route("/export/report.html", studio.export_report),
        Route("/export/usecase.yaml", studio.export_yaml),
        Route("/upload/{kind}", studio.upload, methods=["POST"]),
        Route("/static/plotly.min.js", _plotly_js),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
        middleware=[Middleware(NoTraceback)],
    )


async def _plotly_js(request: Request) -> Response:
    """plotly.js from the installed plotly package (no CDN, no copy in this package)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return FileResponse(path, media_type="text/javascript")


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 400
    detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
    return PlainTextResponse(f"{status}: {detail}", status_code=status)


class NoTraceback:
    """A bug in a handler becomes a one-line 500 (the log has the traceback), and the
    connection stays usable: Starlette's own handler re-raises to the server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if scope["type"] != "http" or started:
                raise
            log.error("internal error on %s", scope.get("path"), exc_info=exc)
            text = f"internal error ({type(exc).__name__}); the server log has the details"
            await PlainTextResponse(text, status_code=500)(scope, receive, send)


def share_query(form: dict[str, str]) -> str:
    """The query string of a form: what the address bar and shared links hold."""
    return urlencode(form)


class Studio:
    """The request handlers, over one job table, upload folder and template environment."""

    def __init__(self, jobs: Jobs, uploads: Uploads, env: Environment) -> None:
        self.jobs = jobs
        self.uploads = uploads
        self.env = env

    def page(
        self,
        name: str,
        status_code: int = 200,
        headers: dict[str, str] | None = None,
        **context: Any,
    ) -> HTMLResponse:
        html = self.env.get_template(name).render(**context)
        return HTMLResponse(html, status_code, headers=headers)

    async def index(self, request: Request) -> Response:
        form = clean_form(request.query_params)
        return self.page(
            "index.html",
            form=form,
            query=share_query(form),
            models=views.model_names(),
            note=request.query_params.get("note", ""),
            tab=uuid.uuid4().hex,
        )

    async def plan(self, request: Request) -> Response:
        form = clean_form(request.query_params)
        query = share_query(form)
        usecase, errors = usecase_from_form(form)
        headers = {"HX-Push-Url": f"/?{query}"}
        if usecase is None:
            return self.page("_errors.html", errors=errors, headers=headers)
        tab = request.query_params.get("tab", "")
        job = self.jobs.submit(usecase, tab=tab or None)
        return self.page(
            "_job.html", job=job, query=query, tab=tab, errors={}, oob=True, headers=headers
        )

    async def job(self, request: Request) -> Response:
        job = self.jobs.get(request.path_params["job_id"])
        query, tab = request.query_params.get("q", ""), request.query_params.get("tab", "")
        return self.page("_job.html", job=job, query=query, tab=tab, errors={}, oob=False)

    async def cancel(self, request: Request) -> Response:
        tab = request.query_params.get("tab", "")
        job = self.jobs.cancel(request.path_params["job_id"], tab=tab or None)
        query = request.query_params.get("q", "")
        return self.page("_job.html", job=job, query=query, tab=tab, errors={}, oob=False)

    async def timeline(self, request: Request) -> Response:
        form = clean_form(request.query_params)
        result = await views.finished_plan(self.jobs, form)
        if isinstance(result, str):
            return self.page("message.html", 400, title="One instance", message=result)
        figure, caption = await views.timeline_figure(self.jobs, result)
        return self.page("timeline.html", figure=figure, caption=caption, query=share_query(form))

    async def compare(self, request: Request) -> Response:
        links = [v for v in request.query_params.getlist("plan") if v.strip()][:3]
        columns = await asyncio.gather(*(views.compare_column(self.jobs, x) for x in links))
        return self.page("compare.html", links=links, columns=columns)

    async def measured(self, request: Request) -> Response:
        if request.method == "GET":
            return self.page("measured.html", fields=dict(views.MEASURED_DEFAULTS), errors={})
        async with request.form(max_files=1, max_part_size=self.uploads.max_bytes) as data:
            fields = {k: str(v) for k, v in data.items() if isinstance(v, str)}
            upload = data.get("file")
            try:
                path = await self.uploads.save(upload, "measured")
            except UploadError as e:
                return self.page("measured.html", 400, fields=fields, errors={"file": str(e)})
        rows, errors = await views.measured_rows(path, fields)
        code = 400 if errors else 200
        return self.page("measured.html", code, fields=fields, errors=errors, rows=rows)

    async def export_report(self, request: Request) -> Response:
        form = clean_form(request.query_params)
        result = await views.finished_plan(self.jobs, form)
        if isinstance(result, str):
            return self.page("message.html", 400, title="Report", message=result)
        assert result.data is not None
        html = await views.report_html(result.data)
        disposition = 'attachment; filename="plan.html"'
        return HTMLResponse(html, headers={"Content-Disposition": disposition})

    async def export_yaml(self, request: Request) -> Response:
        form = clean_form(request.query_params)
        usecase, errors = usecase_from_form(form)
        if usecase is None:
            text = "\n".join(f"{k}: {v}" for k, v in errors.items())
            return PlainTextResponse(f"the use case has errors:\n{text}", status_code=400)
        data = usecase.model_dump(mode="json", exclude_defaults=True)
        data.setdefault("load", {}).update(usecase.load.model_dump(mode="json", exclude_none=True))
        body = yaml.safe_dump(data, sort_keys=False)
        headers = {"Content-Disposition": 'attachment; filename="usecase.yaml"'}
        return Response(body, media_type="application/yaml", headers=headers)

    async def upload(self, request: Request) -> Response:
        kind = request.path_params["kind"]
        if kind not in ("config", "trace", "usecase"):
            raise HTTPException(404, f"no upload of kind {kind!r}; known: config, trace, usecase")
        async with request.form(max_files=1, max_part_size=self.uploads.max_bytes) as data:
            try:
                path = await self.uploads.save(data.get("file"), kind)
                field, value = await views.check_upload(kind, path)
            except UploadError as e:
                return self.page("_upload.html", kind=kind, error=str(e))
        if kind == "usecase":  # the whole form: open the page of that use case
            return Response(headers={"HX-Redirect": f"/?{value}"})
        return self.page("_upload.html", kind=kind, error="", field=field, value=value)
