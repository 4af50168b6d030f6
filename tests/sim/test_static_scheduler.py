"""Static and dynamic batching decided step by step, without the engine.

A batch launches when full (static), after `batch_timeout_s` (dynamic), or when nothing more
can arrive; it prefills every prompt padded to the longest, then decodes until its longest
output ends, finished members padding; KV for padded prompt + longest output is booked per
slot at launch. Expectations are worked by hand from those rules.
"""

from __future__ import annotations

import pytest

from llmsizer.sim.batch import Batch, PrefillChunk
from llmsizer.sim.request import Status

from .conftest import drive, make_request, make_scheduler, step


def test_static_waits_for_a_full_batch_while_more_requests_can_arrive() -> None:
    s = make_scheduler(batching="static", max_num_seqs=2)
    a, b = make_request(0, 10, 2), make_request(1, 30, 4, arrival_s=1.0)
    s.add(a)
    assert s.schedule(0.0, next_arrival_s=1.0) is None
    assert s.wakeup_s(0.0) is None  # no timeout: only an arrival can wake it
    s.add(b)
    out = s.schedule(1.0, next_arrival_s=5.0)
    assert out is not None
    assert out.batch == Batch((PrefillChunk(30, 0),) * 2)  # both padded to the longest prompt
    assert out.prefills == [(a, 10), (b, 30)] and out.num_prefill_tokens == 60
    assert a.scheduled_s == b.scheduled_s == 1.0


def test_static_launches_a_partial_batch_when_nothing_more_can_arrive() -> None:
    s = make_scheduler(batching="static", max_num_seqs=4)
    a = make_request(0, 10, 2)
    s.add(a)
    out, _ = step(s, 0, next_arrival_s=None)
    assert out.prefills == [(a, 10)]


def test_a_static_batch_pads_finished_members_until_its_longest_ends() -> None:
    s = make_scheduler(batching="static", max_num_seqs=2, block_size=16)
    a, b, c = make_request(0, 10, 2), make_request(1, 30, 4), make_request(2, 5, 1)
    s.add(a)
    s.add(b)
    step(s, 0, next_arrival_s=1.0)  # the prefill: both get their first token
    assert s.kv.num_used == 2 * 3  # per slot: ceil((30 + 4) / 16) blocks
    s.add(c)  # a free slot appears below, but nobody joins a running static batch
    decode_steps = [step(s, i, next_arrival_s=None) for i in (1, 2, 3)]
    # every step computes both slots, with the padded prompt's context growing by one
    assert [out.batch for out, _ in decode_steps] == [Batch((), 2, 2 * (30 + k)) for k in range(3)]
    assert [out.num_padding_seqs for out, _ in decode_steps] == [0, 1, 1]
    assert [done for _, done in decode_steps] == [[a], [], [b]]
    assert c.status is Status.WAITING and s.kv.num_used == 0
    out, done = step(s, 4, next_arrival_s=None)  # the next batch: c alone
    assert out.prefills == [(c, 5)] and done == [c]


def test_a_batch_shrinks_from_the_back_until_its_kv_fits() -> None:
    s = make_scheduler(batching="static", max_num_seqs=3, num_gpu_blocks=5, block_size=16)
    requests = [make_request(i, 10, 20) for i in range(3)]  # 2 blocks a slot: 6 > 5
    for r in requests:
        s.add(r)
    out, _ = step(s, 0)
    assert [r for r, _ in out.prefills] == requests[:2] and s.kv.num_used == 4
    assert list(s.waiting) == requests[2:]


def test_a_request_that_fits_no_batch_is_named() -> None:
    s = make_scheduler(batching="static", num_gpu_blocks=1, block_size=16)
    s.add(make_request(7, 10, 20))
    with pytest.raises(ValueError, match=r"request 7 \(10 \+ 20 tokens\) does not fit"):
        s.schedule(0.0, None)


def test_dynamic_launches_a_partial_batch_once_its_oldest_request_waited_the_timeout() -> None:
    s = make_scheduler(batching="dynamic", max_num_seqs=4, batch_timeout_ms=100)
    a, b = make_request(0, 10, 2, arrival_s=0.0), make_request(1, 10, 2, arrival_s=0.05)
    assert s.wakeup_s(0.0) is None  # nothing waits
    s.add(a)
    assert s.schedule(0.0, next_arrival_s=0.05) is None
    s.add(b)
    wake = s.wakeup_s(0.05)
    assert wake == pytest.approx(0.1)  # counted from a's arrival, not b's
    assert s.schedule(0.099, next_arrival_s=1.0) is None
    out = s.schedule(wake, next_arrival_s=1.0)
    assert out is not None and out.prefills == [(a, 10), (b, 10)]
    assert a.scheduled_s == b.scheduled_s == wake
    assert s.wakeup_s(wake) is None  # a running batch waits for no timeout


def test_a_late_wakeup_is_now_and_a_full_batch_does_not_wait() -> None:
    s = make_scheduler(batching="dynamic", max_num_seqs=2, batch_timeout_ms=100)
    s.add(make_request(0, 10, 2))
    assert s.wakeup_s(0.5) == 0.5  # already overdue: at once, never in the past
    s.add(make_request(1, 10, 2))
    assert s.schedule(0.0, next_arrival_s=1.0) is not None  # full before the timeout


@pytest.mark.parametrize("batching", ["static", "dynamic"])
def test_every_batch_is_padded_runs_to_its_longest_output_and_gives_its_blocks_back(
    batching: str,
) -> None:
    s = make_scheduler(batching=batching, max_num_seqs=3, num_gpu_blocks=12, block_size=16)
    requests = [
        make_request(i, 10 + 37 * i % 90, 1 + 13 * i % 40, arrival_s=0.03 * i) for i in range(20)
    ]
    outs = drive(s, requests)
    launches = [i for i, out in enumerate(outs) if out.prefills]
    for start, end in zip(launches, [*launches[1:], len(outs)], strict=True):
        members = [r for r, _ in outs[start].prefills]
        longest = PrefillChunk(max(r.num_prompt_tokens for r in members), 0)
        assert 1 <= len(members) <= 3
        assert outs[start].batch == Batch((longest,) * len(members))
        decodes = outs[start + 1 : end]  # nobody joins: the batch's own steps until the next
        assert len(decodes) == max(r.num_output_tokens for r in members) - 1
        assert all(out.batch.num_decode_seqs == len(members) for out in decodes)
    assert s.num_preemptions == 0 and s.kv.num_used == 0
    assert all(r.num_generated == r.num_output_tokens for r in requests)
