"""The client's CPU scheduling: real-time priority, so the OS never queues it behind a server.

When the client shares a machine with the server it measures (a CPU test server, a load
generator on a busy host), the kernel can leave the client's event loop waiting on the run
queue for hundreds of milliseconds while the server's processes run: on the reference vLLM
(2 cores) a probe sleeping 10 ms at a time waited up to 2.3 s, all of it on the run queue,
with no time stolen by the hypervisor. Each such stall lands in every latency the client
stamps meanwhile (`loop_lag` reports it). Under `SCHED_RR` the client runs as soon as it is
runnable: the same run then showed stalls of at most 3 ms and latencies within a few ms of
vLLM's own histograms (examples/reference-server/README.md). The client takes CPU first,
so a server on the same cores runs a little slower; it is the server's speed that is then
measured, not the client's wait.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from llmsizer.bench.errors import BenchError

REALTIME_PRIORITY = 10  # of 1..99: above every normal task, below the kernel's own threads


@contextmanager
def realtime_priority(enabled: bool = True) -> Iterator[None]:
    """Run the calling thread (and threads it starts) under `SCHED_RR`; restore on exit."""
    if not enabled:
        yield
        return
    if not hasattr(os, "sched_setscheduler"):
        raise BenchError(
            f"--realtime needs Linux scheduling calls (os.sched_setscheduler), which "
            f"{sys.platform} lacks; leave out --realtime"
        )
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(REALTIME_PRIORITY))
    except PermissionError as e:
        raise BenchError(
            f"could not give the client real-time priority (SCHED_RR {REALTIME_PRIORITY}): "
            f"{e.strerror}; run it as root or with CAP_SYS_NICE "
            "(setcap cap_sys_nice+ep on the Python binary), or leave out --realtime"
        ) from e
    try:
        yield
    finally:
        os.sched_setscheduler(0, policy, param)


def realtime_allowed() -> bool:
    """Whether this process may run under `SCHED_RR` (Linux, root or CAP_SYS_NICE)."""
    try:
        with realtime_priority():
            return True
    except BenchError:
        return False
