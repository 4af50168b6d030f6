"""Slot occupancy and queue size: the data behind the timeline."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsizer.report.occupancy import (
    Occupancy,
    RequestColumns,
    assign_slots,
    batch_release_s,
    occupancy,
    queue_size,
)

from .conftest import continuous, make_record, measured, static_batches


def max_overlap(start: np.ndarray, end: np.ndarray) -> int:
    """The most intervals [start, end) holding at one time (ends before starts at a tie)."""
    times = np.concatenate((end, start))
    deltas = np.concatenate((-np.ones(end.size), np.ones(start.size)))
    order = np.lexsort((deltas, times))
    return int(np.cumsum(deltas[order]).max(initial=0))


def assert_no_two_in_one_slot(slot: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
    for row in np.unique(slot):
        mine = np.flatnonzero(slot == row)
        by_start = mine[np.argsort(start[mine], kind="stable")]
        assert np.all(end[by_start[:-1]] <= start[by_start[1:]]), f"overlap in slot {row}"


def assert_invariants(occ: Occupancy) -> None:
    assert np.all(occ.start_s <= occ.first_token_s)
    assert np.all(occ.first_token_s <= occ.finish_s)
    assert np.all(occ.finish_s <= occ.release_s)
    assert np.all(np.diff(occ.start_s) >= 0)
    assert np.all((occ.slot >= 0) & (occ.slot < occ.num_rows))
    assert_no_two_in_one_slot(occ.slot, occ.start_s, occ.release_s)


intervals = st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 10)), min_size=0, max_size=60
).map(lambda xs: (np.array([a for a, _ in xs], float), np.array([a + d for a, d in xs], float)))


@settings(max_examples=40, deadline=None)
@given(intervals)
def test_assign_slots_never_overlaps_and_uses_the_fewest_rows(iv: tuple) -> None:
    start, end = iv
    slot, num_rows, extra = assign_slots(start, end)
    assert_no_two_in_one_slot(slot, start, end)
    assert num_rows == max_overlap(start, end)
    assert extra == 0


def test_assign_slots_takes_the_lowest_free_row() -> None:
    # rows:  0: [0,4) [4,6)    1: [1,3) [3,9)    2: [2,5)
    start = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    end = np.array([4.0, 3.0, 5.0, 9.0, 6.0])
    slot, num_rows, _ = assign_slots(start, end)
    assert slot.tolist() == [0, 1, 2, 1, 0]
    assert num_rows == 3


def test_assign_slots_counts_rows_beyond_max_num_seqs() -> None:
    start = np.array([0.0, 0.0, 0.0, 1.0])
    end = np.array([2.0, 2.0, 2.0, 3.0])
    _, num_rows, extra = assign_slots(start, end, max_num_seqs=2)
    assert (num_rows, extra) == (4, 2)
    _, num_rows, extra = assign_slots(start, end, max_num_seqs=8)
    assert (num_rows, extra) == (8, 0)


@pytest.mark.parametrize("max_num_seqs", [1, 3, 8])
def test_a_valid_run_fits_in_max_num_seqs_rows(max_num_seqs: int) -> None:
    occ = occupancy(continuous(300, max_num_seqs, rate=80.0), max_num_seqs=max_num_seqs)
    assert occ.num_rows == max_num_seqs
    assert occ.num_extra_rows == 0
    assert occ.num_requests == 300
    assert_invariants(occ)


def test_batch_release_is_the_last_finish_of_the_batch() -> None:
    start = np.array([0.0, 0.0, 5.0, 0.0, 5.0])
    finish = np.array([1.0, 3.0, 6.0, 2.0, 9.0])
    assert batch_release_s(start, finish).tolist() == [3.0, 3.0, 9.0, 3.0, 9.0]


def test_padding_appears_only_when_padded() -> None:
    records = static_batches()
    plain = occupancy(records, max_num_seqs=4)
    padded = occupancy(records, max_num_seqs=4, padded=True)
    assert np.array_equal(plain.release_s, plain.finish_s)
    assert np.any(padded.release_s > padded.finish_s)
    for occ in (plain, padded):
        assert occ.num_rows == 4 and occ.num_extra_rows == 0
        assert_invariants(occ)
    # A padded batch frees all its slots at once, when its longest member ends.
    for s in np.unique(padded.start_s):
        batch = padded.start_s == s
        assert np.all(padded.release_s[batch] == padded.finish_s[batch].max())


def test_padded_needs_scheduled_times() -> None:
    with pytest.raises(ValueError, match="scheduled_s"):
        occupancy(measured(static_batches()), padded=True)


def test_measured_records_take_their_slot_at_arrival() -> None:
    records = measured(continuous(50, 4))
    occ = occupancy(records)
    assert occ.from_arrival
    assert np.array_equal(occ.start_s, occ.arrival_s)
    assert_invariants(occ)


def test_unscheduled_and_unfinished_requests_hold_no_slot() -> None:
    done = make_record(0, arrival_s=0, scheduled_s=0, first_token_s=1, finish_s=2)
    rejected = make_record(1, arrival_s=0, scheduled_s=None, first_token_s=1, finish_s=1)
    occ = occupancy([done, rejected])
    assert occ.request_id.tolist() == [0]


def test_max_requests_keeps_the_first_to_start_and_says_until_when() -> None:
    records = continuous(100, 4)
    full = occupancy(records, max_num_seqs=4)
    first = occupancy(records, max_num_seqs=4, max_requests=30)
    assert first.num_requests == 30
    assert np.array_equal(first.request_id, full.request_id[:30])
    assert np.array_equal(first.slot, full.slot[:30])  # the rows are exact
    assert first.complete_until_s == full.start_s[30]
    assert full.complete_until_s == np.inf


def test_started_before_keeps_whole_history() -> None:
    records = continuous(100, 4)
    full = occupancy(records)
    cut = occupancy(records, started_before_s=float(full.start_s[40]))
    assert np.all(np.diff(full.start_s[:41]) > 0)  # distinct starts: exactly 40 came before
    assert cut.num_requests == 40
    assert np.array_equal(cut.slot, full.slot[: cut.num_requests])


def test_queue_size_by_hand() -> None:
    # arrivals 0, 0, 1, 2; scheduled 0 (at once), 3, 1.5, never.
    arrival = np.array([0.0, 0.0, 1.0, 2.0])
    scheduled = np.array([0.0, 3.0, 1.5, np.nan])
    q = queue_size(arrival, scheduled)
    assert q.times_s.tolist() == [0.0, 1.0, 1.5, 2.0, 3.0]
    assert q.sizes.tolist() == [1, 2, 1, 2, 1]
    assert q.at(np.array([-1.0, 0.0, 0.99, 1.0, 1.7, 2.9, 3.0, 100.0])).tolist() == [
        0, 1, 1, 2, 1, 2, 1, 1,
    ]  # fmt: skip
    x, y = q.between(0.5, 2.5)
    assert x.tolist() == [0.5, 1.0, 1.5, 2.0, 2.5]
    assert y.tolist() == [1, 2, 1, 2, 2]


def test_queue_size_matches_a_direct_count() -> None:
    cols = RequestColumns.from_records(continuous(300, 2, rate=100.0))
    q = queue_size(cols.arrival_s, cols.scheduled_s)
    probes = np.linspace(0, float(cols.finish_s.max()), 500)
    direct = [int(np.sum((cols.arrival_s <= t) & (t < cols.scheduled_s))) for t in probes]
    assert q.at(probes).tolist() == direct
    assert q.sizes.max() > 3  # the test queue does build up


def test_empty() -> None:
    occ = occupancy([], max_num_seqs=2)
    assert occ.num_requests == 0 and occ.num_rows == 2
    q = queue_size(np.zeros(0), np.zeros(0))
    assert q.at(1.0) == 0
