"""Real-time priority: asked for, it is set for the run and restored; refused, a clear error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmsizer.bench import priority
from llmsizer.bench.errors import BenchError
from llmsizer.bench.runner import run_benchmark
from llmsizer.bench.spec import BenchSpec
from tests.bench.fakes import FakeVllm

linux_only = pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="Linux only")


class FakeScheduler:
    """Stands in for the kernel: records policy changes, refuses real time unless allowed."""

    def __init__(self, allowed: bool) -> None:
        self.allowed, self.policy, self.calls = allowed, 0, []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(os, "sched_getscheduler", lambda pid: self.policy, raising=False)
        monkeypatch.setattr(os, "sched_getparam", lambda pid: os.sched_param(0), raising=False)
        monkeypatch.setattr(os, "sched_setscheduler", self.set, raising=False)

    def set(self, pid: int, policy: int, param: os.sched_param) -> None:
        if policy == os.SCHED_RR and not self.allowed:
            raise PermissionError(1, "Operation not permitted")
        self.policy = policy
        self.calls.append((policy, param.sched_priority))


@linux_only
def test_run_is_real_time_then_restored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    kernel = FakeScheduler(allowed=True)
    kernel.install(monkeypatch)
    seen: list[int] = []
    fake = FakeVllm()
    transport = fake.transport()
    original = transport.handle_async_request

    async def handle(request):  # type: ignore[no-untyped-def]
        seen.append(kernel.policy)
        return await original(request)

    monkeypatch.setattr(transport, "handle_async_request", handle)
    spec = BenchSpec(base_url="http://fake", isl=8, osl=3, num_prompts=3, realtime=True)
    [result] = run_benchmark(spec, transport=transport)
    assert set(seen) == {os.SCHED_RR}  # every request was sent under real-time priority
    assert kernel.calls == [(os.SCHED_RR, priority.REALTIME_PRIORITY), (0, 0)]
    assert result.params["realtime"] is True


@linux_only
def test_refused_real_time_names_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeScheduler(allowed=False).install(monkeypatch)
    refused = pytest.raises(BenchError, match=r"CAP_SYS_NICE.*or leave out --realtime")
    with refused, priority.realtime_priority():
        pass


@linux_only
def test_allowed_says_whether_real_time_can_be_had(monkeypatch: pytest.MonkeyPatch) -> None:
    FakeScheduler(allowed=False).install(monkeypatch)
    assert not priority.realtime_allowed()
    kernel = FakeScheduler(allowed=True)
    kernel.install(monkeypatch)
    assert priority.realtime_allowed() and kernel.policy == 0  # restored


def test_off_touches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_setscheduler", raising=False)
    with priority.realtime_priority(enabled=False):
        pass
    with pytest.raises(BenchError, match="leave out --realtime"), priority.realtime_priority():
        pass
