"""`llmsizer serve`: the sizing studio, a local web page (optional extra `llmsizer[serve]`)."""

from __future__ import annotations

import socket
import threading
import webbrowser
from typing import Annotated

import typer

from llmsizer.cli.common import err

EXTRA = "llmsizer serve needs the serve extra: pip install 'llmsizer[serve]'"


def serve(
    port: Annotated[
        int, typer.Option(help="Port to listen on (127.0.0.1 only).", min=1, max=65535)
    ] = 8000,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
) -> None:
    """Start the sizing studio on http://127.0.0.1:PORT: the use case with its answer as you
    type, one instance's timeline, plans compared, measured vs predicted. Works offline."""
    try:
        import uvicorn

        from llmsizer.serve import make_app
    except ImportError as e:
        raise ValueError(f"{EXTRA} ({e.name} is missing)") from None
    _check_port(port)
    url = f"http://127.0.0.1:{port}/"
    err.print(f"llmsizer studio on {url} (Ctrl-C stops it)", highlight=False)
    if open_browser:
        threading.Timer(1.0, webbrowser.open, (url,)).start()
    uvicorn.run(make_app(), host="127.0.0.1", port=port, log_level="warning")


def _check_port(port: int) -> None:
    """A port taken by another program is one line naming it (uvicorn would log and exit 3)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise ValueError(
                f"--port {port}: cannot listen on 127.0.0.1 ({e.strerror}); give another port"
            ) from None
