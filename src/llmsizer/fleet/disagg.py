"""Disaggregated serving: a prefill pool hands each request's KV cache to a decode pool.

A request is routed to a prefill instance, which computes its prompt and its first token
(the request runs there with one output token). Its KV cache then crosses the link
(`KvTransfer`). The decode pool admits the request only when the transfer is done, with the
prompt's KV already in place: its prompt is the original prompt plus the first token, of
which all but that token is computed, so its first step computes the first token's KV (as an
aggregated engine's first decode step does) and yields token 1.

The first token reaches the client when a decode worker admits the request (the start of
its first decode step), not when the prefill ends: the decode worker streams the whole
answer, the prefill's token included (Dynamo's disaggregated flow: the prefill worker returns
only transfer metadata, `disaggregated_params`, to the router, and the decode worker streams
the tokens, `docs/design_docs/disagg_serving.md`; TensorRT-LLM's own disaggregated server
stamps the first token from the generation server's response, `on_first_token(gen_server)`
in `tensorrt_llm/serve/openai_disagg_server.py`; SGLang's decode worker sends the prefill's
token from its batch of transferred requests). So a request that waits for a decode slot
(`max_num_seqs` or KV blocks full) waits before its first token, in TTFT, not between its
first two tokens (docs/aic_measurement.md section 19).

Both pools are `sim.Engine` runs on one clock. The loop takes events in time order (ties:
arrivals first): an arrival is routed; an instance runs until the next event's time (at
least one step), and what it finished becomes new events, a handoff arrival at the decode
pool after the transfer, or in a closed loop the client's next request. An instance never
runs a step past the earliest time another could send it work, so no request is late; in a
closed loop its own finishes bring work back (the client's next request, through the prefill
pool), so with no other event waiting it runs one step at a time (it once ran on to the end
of its work: a decode pool with fewer slots than twice the clients left slots idle for a
whole request, docs/aic_measurement.md section 19).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from llmsizer.fleet.fleet import check_fleet, label_instances
from llmsizer.fleet.pool import Pool
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine, SimResult
from llmsizer.workload import Workload


@dataclass(frozen=True, slots=True)
class KvTransfer:
    """Seconds to move a request's KV cache from its prefill to its decode instance:
    `latency_s + prompt tokens x bytes_per_token / bytes_per_s`, starting when the prefill
    ends (no overlap with it). `bytes_per_s` may be `inf` (a free link)."""

    bytes_per_token: float
    bytes_per_s: float
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.bytes_per_token >= 0 or not self.latency_s >= 0:
            raise ValueError(
                f"KV transfer bytes_per_token ({self.bytes_per_token}) and latency_s "
                f"({self.latency_s}) must be >= 0"
            )
        if not self.bytes_per_s > 0:
            raise ValueError(f"KV transfer bytes_per_s must be > 0, got {self.bytes_per_s}")

    def seconds(self, num_tokens: int) -> float:
        return self.latency_s + num_tokens * self.bytes_per_token / self.bytes_per_s


FREE_LINK = KvTransfer(bytes_per_token=0.0, bytes_per_s=math.inf)


@dataclass(frozen=True, slots=True)
class DisaggResult:
    """Every request's record (request-id order; `instance_id` numbers the prefill
    instances 0..P-1 and the decode instances P..P+D-1, and names the decode instance, or
    the prefill one for a one-token output) and each pool's runs."""

    records: list[RequestRecord]
    prefill: list[SimResult]
    decode: list[SimResult]


_ARRIVAL, _HANDOFF, _INSTANCE = 0, 1, 2
FirstTokenAt = Literal["admission", "handoff"]


class _Disagg:
    def __init__(
        self,
        prefill: Sequence[Engine],
        decode: Sequence[Engine],
        workload: Workload,
        transfer: KvTransfer,
        routers: tuple[str, str],
        seed: int,
        first_token_at: FirstTokenAt = "admission",
    ) -> None:
        check_fleet(prefill, _open(workload))
        check_fleet(decode, _open(workload))
        rng = np.random.default_rng(seed)
        self.w, self.transfer, self.first_token_at = workload, transfer, first_token_at
        self.prefill_engines = list(prefill)
        isl, osl = workload.num_prompt_tokens, workload.num_output_tokens
        one = np.ones_like(osl)
        self.prefill = Pool(
            prefill, dataclasses.replace(workload, num_output_tokens=one), routers[0], rng
        )
        handoff = dataclasses.replace(
            workload,
            num_prompt_tokens=isl + 1,
            num_output_tokens=np.maximum(osl - 1, 1),
            prefix_hashes=None,
            system_prompt_tokens=0,
        )
        self.decode = Pool([_chunked(e) for e in decode], handoff, routers[1], rng, isl.tolist())
        self.events: list[tuple[float, int, int, int]] = []  # (time, kind, seq, what)
        self.seq = 0
        self.in_heap = {id(p): np.zeros(p.num_instances, dtype=bool) for p in self.pools}
        self.handoff_s = np.full(workload.num_requests, np.nan)
        self.next_request = 0

    @property
    def pools(self) -> tuple[Pool, Pool]:
        return self.prefill, self.decode

    def _push(self, t: float, kind: int, what: int) -> None:
        heapq.heappush(self.events, (t, kind, self.seq, what))
        self.seq += 1

    def _arrive(self, t: float) -> None:
        """The next request of the workload arrives now (closed loop) or at its time."""
        if self.next_request < self.w.num_requests:
            self._push(t, _ARRIVAL, self.next_request)
            self.next_request += 1

    def run(self) -> DisaggResult:
        if self.w.arrival_s is None:
            for _ in range(min(self.w.concurrency or 1, self.w.num_requests)):
                self._arrive(0.0)
        else:
            for i, t in enumerate(self.w.arrival_s.tolist()):
                self._push(t, _ARRIVAL, i)
        while self.events:
            t, kind, _, what = heapq.heappop(self.events)
            if kind == _INSTANCE:
                self._run_instance(t, what)
            else:
                pool = self.prefill if kind == _ARRIVAL else self.decode
                i = pool.route(what, t)
                self._wake(pool, i, t)
        return self._result()

    def _wake(self, pool: Pool, i: int, t: float) -> None:
        flags = self.in_heap[id(pool)]
        if not flags[i]:
            flags[i] = True
            self._push(t, _INSTANCE, i if pool is self.prefill else ~i)

    def _run_instance(self, t: float, what: int) -> None:
        pool, i = (self.prefill, what) if what >= 0 else (self.decode, ~what)
        until = self.events[0][0] if self.events else None
        if until is None and self.w.arrival_s is None:
            until = t  # a closed loop: a finish brings the client's next request back
        if until is not None and until <= t:
            until = math.nextafter(t, math.inf)  # at least the step starting now
        pool.advance(i, until)
        for request_id, end in pool.new_finishes(i):
            self._finished(pool, request_id, end)
        self.in_heap[id(pool)][i] = False
        if pool.has_work(i):
            self._wake(pool, i, pool.runs[i].now)

    def _finished(self, pool: Pool, request_id: int, end: float) -> None:
        if pool is self.prefill and self.w.num_output_tokens[request_id] > 1:
            handoff = end + self.transfer.seconds(int(self.w.num_prompt_tokens[request_id]))
            self.handoff_s[request_id] = handoff
            self._push(handoff, _HANDOFF, request_id)
        elif self.w.arrival_s is None:
            self._arrive(end)  # closed loop: the client sends its next request

    def _result(self) -> DisaggResult:
        n = self.w.num_requests
        pre = [run.result() for run in self.prefill.runs]
        dec = [run.result() for run in self.decode.runs]
        first = label_instances(pre, n)
        then: list[tuple[RequestRecord, int] | None] = [None] * n
        offset = len(pre)
        for j, res in enumerate(dec):
            for r in res.records:
                then[r.request_id] = (r, offset + j)
        delays = [e.first_token_delay_s for e in self.prefill_engines]
        records = [
            _join(
                p, d, self.handoff_s[p.request_id], delays[p.instance_id or 0], self.first_token_at
            )
            for p, d in zip(first, then, strict=True)
        ]
        return DisaggResult(records=records, prefill=pre, decode=dec)


def _chunked(engine: Engine) -> Engine:
    """A decode worker schedules one new token per handed-off request; only a preempted
    request's recompute prefills more, and it does so in chunks even where the engine's
    prefill pool would not (so a prompt over `max_num_batched_tokens` is not refused). Its
    first token is not the stream's first: the front end's hold applies to the joined
    record (`_join`), once."""
    engine = dataclasses.replace(engine, first_token_delay_s=0.0)
    if engine.config.enable_chunked_prefill:
        return engine
    config = engine.config.model_copy(update={"enable_chunked_prefill": True})
    return dataclasses.replace(engine, config=config)


def _join(
    p: RequestRecord,
    decoded: tuple[RequestRecord, int] | None,
    handoff_s: float,
    first_token_delay_s: float,
    first_token_at: FirstTokenAt = "admission",
) -> RequestRecord:
    """The client's view: prefill's record, the first token when decode admits it (module
    docstring; never before the handoff), then decode's
    (`decoded`: its record and decode instance), the first chunk held by the prefill
    engine's front end (`Engine.first_token_delay_s`, as `hold_first_token` holds it; a
    one-token answer is prefill's record, already held). One record built per request: the
    join runs once for every request of a run."""
    if decoded is None:
        return p
    d, instance_id = decoded
    admitted_s = handoff_s
    if first_token_at == "admission" and d.scheduled_s is not None:
        admitted_s = max(handoff_s, d.scheduled_s)
    times = np.concatenate(([admitted_s], d.token_times_s))
    finish_s = d.finish_s
    if first_token_delay_s < 0:
        raise ValueError(f"first_token_delay_s must be >= 0, got {first_token_delay_s}")
    if first_token_delay_s > 0:
        times = np.maximum(times, times[0] + first_token_delay_s)
        finish_s = float(times[-1])
    return dataclasses.replace(
        p,
        num_output_tokens_requested=p.num_output_tokens_requested + d.num_output_tokens_requested,
        token_times_s=times,
        finish_s=finish_s,
        num_preemptions=p.num_preemptions + d.num_preemptions,
        instance_id=instance_id,
    )


def _open(workload: Workload) -> Workload:
    """A stand-in with arrival times, for the checks that a closed loop would fail: the
    disaggregated loop runs closed loops itself."""
    if workload.arrival_s is not None:
        return workload
    return dataclasses.replace(
        workload, arrival_s=np.zeros(workload.num_requests), concurrency=None
    )


def simulate_disaggregated(
    prefill: Sequence[Engine],
    decode: Sequence[Engine],
    workload: Workload,
    transfer: KvTransfer = FREE_LINK,
    *,
    prefill_router: str = "least_outstanding",
    decode_router: str = "least_outstanding",
    seed: int = 0,
    first_token_at: FirstTokenAt = "admission",
) -> DisaggResult:
    """Run `workload` (open or closed loop) on a prefill pool and a decode pool joined by
    `transfer` (module docstring). `seed` seeds the routers' own random choices.
    `first_token_at`: when the client sees the first token, `admission` (the decode worker
    streams it, module docstring) or `handoff` (the transfer's end: a decode pool's wait for
    a slot then lands between the first two tokens, in TPOT, as a probe of one decode
    worker's TPOT limit wants it)."""
    routers = (prefill_router, decode_router)
    return _Disagg(prefill, decode, workload, transfer, routers, seed, first_token_at).run()
