"""`llmsizer serve`: the real command starts the studio on 127.0.0.1 and stops on SIGTERM; a
port in use is one clear line, not a traceback."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

LLMSIZER = shutil.which("llmsizer", path=str(Path(sys.executable).parent)) or "llmsizer"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_starts_the_studio_on_localhost() -> None:
    port = free_port()
    proc = subprocess.Popen(
        [LLMSIZER, "serve", "--port", str(port)], stderr=subprocess.PIPE, text=True
    )
    try:
        end = time.monotonic() + 60
        while True:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < end and proc.poll() is None, "serve did not start"
                time.sleep(0.1)
        assert page.status_code == 200 and "How many requests per second?" in page.text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert f"http://127.0.0.1:{port}/" in stderr
    assert "Traceback" not in stderr


def test_a_port_out_of_range_is_one_line() -> None:
    done = subprocess.run(
        [LLMSIZER, "serve", "--port", "70000"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "65535" in done.stderr and "Traceback" not in done.stderr


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [LLMSIZER, "serve", "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 2
    assert f"--port {port}: cannot listen on 127.0.0.1" in done.stderr
    assert "Traceback" not in done.stderr
