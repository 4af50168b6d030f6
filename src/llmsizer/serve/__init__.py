"""The sizing studio: `llmsizer serve`, a local web page over the library (optional extra
`llmsizer[serve]`: Starlette, uvicorn, Jinja2; htmx vendored in `static/`, plotly.js from the
plotly package). It calls the library as the CLI does: `sizing.plan` for the use case,
`report` for figures and the HTML report, `calibrate` for measured vs predicted.

    from llmsizer.serve import make_app
    uvicorn.run(make_app(), host="127.0.0.1", port=8000)
"""

from llmsizer.serve.app import make_app

__all__ = ["make_app"]
