"""Where does the time between vLLM's first-token stamp and the client's first token go?

Sends requests one at a time over plain sockets with `SO_TIMESTAMPNS`, which makes the
kernel stamp each segment as it arrives, before any client code runs. For each request it
prints TTFT and E2E latency three ways: by the kernel's stamps, by the time the reading
code got the bytes (what any user-space client can see), and vLLM's own histogram means
over the same requests (read from `/metrics` before and after).

If the kernel's TTFT is already far above vLLM's, the server sent the first token late
(its API server was short of CPU, say), and no client can measure less. The gap between
the kernel's and the user-space stamps is what a client itself adds.

    python delivery_check.py http://127.0.0.1:8011 --num-requests 8
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import time
from urllib.parse import urlparse
from urllib.request import urlopen

import numpy as np

from llmsizer.bench.prompts import VOCABULARY
from llmsizer.bench.server_metrics import histogram_means, parse_prometheus

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux: asm-generic/socket.h


def _kernel_stamp(ancillary: list[tuple[int, int, bytes]], default: float) -> float:
    """The arrival time the kernel attached to a read (a `struct timespec`), if any."""
    for level, kind, data in ancillary:
        if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS):
            seconds, nanoseconds = struct.unpack("qq", data[:16])
            return seconds + nanoseconds * 1e-9
    return default


def stream_once(host: str, port: int, body: bytes) -> tuple[float, list[float], list[float]]:
    """Send one request; return the send time and, per SSE chunk, kernel and user stamps."""
    head = (
        f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    sock = socket.create_connection((host, port))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    kernel: list[float] = []
    user: list[float] = []
    sent = time.time()
    sock.sendall(head + body)
    while True:
        data, ancillary, _, _ = sock.recvmsg(65536, 1024)
        if not data:
            break
        now = time.time()
        n = data.count(b"data: {")
        kernel += [_kernel_stamp(ancillary, now)] * n
        user += [now] * n
    sock.close()
    return sent, kernel, user


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base_url")
    p.add_argument("--num-requests", type=int, default=8)
    p.add_argument("--isl-words", type=int, default=500)
    p.add_argument("--osl", type=int, default=128)
    a = p.parse_args()
    url = urlparse(a.base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    rng = random.Random(0)
    before = parse_prometheus(urlopen(f"{a.base_url}/metrics").read().decode())
    rows = []
    for k in range(a.num_requests):
        prompt = f"{k} " + " ".join(rng.choice(VOCABULARY) for _ in range(a.isl_words))
        body = {"model": "tiny", "prompt": prompt, "max_tokens": a.osl, "ignore_eos": True}
        sent, kernel, user = stream_once(host, port, json.dumps(body | {"stream": True}).encode())
        row = [kernel[0] - sent, user[0] - sent, kernel[-1] - sent, user[-1] - sent]
        rows.append(row)
        ms = 1e3 * np.array(row)
        print(
            f"request {k}: TTFT kernel {ms[0]:7.1f} user {ms[1]:7.1f} ms | "
            f"E2E kernel {ms[2]:7.1f} user {ms[3]:7.1f} ms"
        )
    after = parse_prometheus(urlopen(f"{a.base_url}/metrics").read().decode())
    server = histogram_means(before, after)
    mean = 1e3 * np.mean(rows, axis=0)
    print(
        f"mean TTFT: vLLM {server['server_mean_ttft_ms']:.1f}, "
        f"kernel {mean[0]:.1f}, user {mean[1]:.1f} ms"
    )
    print(
        f"mean E2E:  vLLM {server['server_mean_e2el_ms']:.1f}, "
        f"kernel {mean[2]:.1f}, user {mean[3]:.1f} ms"
    )


if __name__ == "__main__":
    main()
