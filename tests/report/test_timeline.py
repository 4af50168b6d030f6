"""The timeline picture: its data, and PNG / HTML files that are written and self-contained."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmsizer.report import build_timeline, timeline_figure, timeline_html, timeline_png
from llmsizer.report.timeline import PHASES

from .conftest import continuous, make_record, measured, static_batches

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_points_are_ttft_at_first_token_and_e2e_at_finish() -> None:
    records = continuous(40, 4)
    tl = build_timeline(records)
    by_first = {float(r.token_times_s[0]): r.ttft_s for r in records}
    by_finish = {r.finish_s: r.e2el_s for r in records}
    assert len(tl.ttft_s) == len(tl.e2el_s) == 40
    for at, value in zip(tl.ttft_at_s, tl.ttft_s, strict=True):
        assert value == pytest.approx(by_first[float(at)])
    for at, value in zip(tl.e2el_at_s, tl.e2el_s, strict=True):
        assert value == pytest.approx(by_finish[float(at)])


def test_failed_requests_are_not_points() -> None:
    ok = make_record(0, arrival_s=0, scheduled_s=0, first_token_s=1, finish_s=2)
    failed = make_record(1, arrival_s=0, scheduled_s=0, first_token_s=1, finish_s=3, error="x")
    tl = build_timeline([ok, failed])
    assert tl.e2el_s.tolist() == [2.0]


def test_the_whole_run_by_default() -> None:
    records = static_batches()
    tl = build_timeline(records, padded=True, max_num_seqs=4)
    assert tl.t0_s == 0.0
    assert tl.t1_s == max(r.finish_s or 0.0 for r in records)
    assert tl.notes == ()
    assert tl.unit.label == "ms"  # a sub-second run reads in ms
    assert tl.queue is not None and tl.queue.at(0.0) == 8  # 12 arrive, 4 start at once


def test_segments_tile_each_request_and_padding_only_when_padded() -> None:
    records = static_batches()
    for padded in (False, True):
        tl = build_timeline(records, padded=padded, max_num_seqs=4)
        total = sum(float(np.sum(tl.segments(p).end_s - tl.segments(p).start_s)) for p in PHASES)
        held = float(np.sum(tl.occupancy.release_s - tl.occupancy.start_s))
        assert total == pytest.approx(held)
        assert (len(tl.segments("padding")) > 0) == padded


def test_big_runs_show_the_first_requests_and_say_so() -> None:
    records = continuous(3000, 16, rate=400.0)
    tl = build_timeline(records, max_num_seqs=16, max_requests=500)
    assert tl.occupancy.num_requests == 500
    assert tl.t1_s == tl.occupancy.complete_until_s
    assert "first 500 requests" in tl.notes[0]
    for phase in PHASES:
        seg = tl.segments(phase)
        assert np.all(seg.end_s <= tl.t1_s)


def test_a_window_clips_every_rectangle() -> None:
    records = continuous(400, 8, rate=100.0)
    tl = build_timeline(records, max_num_seqs=8, window_s=(1.0, 2.0))
    assert tl.occupancy.num_extra_rows == 0
    for phase in PHASES:
        seg = tl.segments(phase)
        assert np.all((seg.start_s >= 1.0) & (seg.end_s <= 2.0))
    assert np.all((tl.e2el_at_s >= 1.0) & (tl.e2el_at_s <= 2.0))
    assert tl.notes[0].startswith("window")
    with pytest.raises(ValueError, match="window_s"):
        build_timeline(records, window_s=(2.0, 1.0))


def test_measured_runs_have_no_queue_and_say_so() -> None:
    tl = build_timeline(measured(continuous(50, 4)))
    assert tl.queue is None
    assert any("measured" in n for n in tl.notes)


def test_extra_rows_are_noted() -> None:
    a = make_record(0, arrival_s=0, scheduled_s=0, first_token_s=1, finish_s=3)
    b = make_record(1, arrival_s=0, scheduled_s=1, first_token_s=2, finish_s=4)
    tl = build_timeline([a, b], max_num_seqs=1)
    assert tl.occupancy.num_rows == 2
    assert any("beyond max_num_seqs=1" in n for n in tl.notes)


def test_the_figure_touches_no_global_state() -> None:
    import matplotlib

    backend = matplotlib.get_backend()
    fig = timeline_figure(build_timeline(static_batches(), padded=True, max_num_seqs=4))
    assert len(fig.axes) == 3
    assert matplotlib.get_backend() == backend


@pytest.mark.parametrize(
    ("name", "records", "options"),
    [
        ("static", static_batches(), {"padded": True, "max_num_seqs": 4}),
        ("continuous", continuous(3000, 16, rate=400.0), {"max_num_seqs": 16}),
        ("measured", measured(continuous(50, 4)), {}),
        ("empty", [], {}),
    ],
)
def test_png_is_written(tmp_path: Path, name: str, records: list, options: dict) -> None:
    png = timeline_png(records, tmp_path / f"{name}.png", title=name, **options)
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert 10_000 < len(data) < 1_000_000


@pytest.mark.parametrize(
    ("records", "options"),
    [(static_batches(), {"padded": True, "max_num_seqs": 4}), (measured(continuous(50, 4)), {})],
)
def test_html_is_self_contained(tmp_path: Path, records: list, options: dict) -> None:
    html = timeline_html(records, tmp_path / "timeline.html", **options).read_text()
    assert html.count("* plotly.js v") == 1  # the bundle, inline, once
    assert '<script src="http' not in html
    assert len(html) < 6_000_000
