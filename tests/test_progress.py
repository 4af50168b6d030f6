"""The time left on a long command's progress bar (issue 14: `plan` runs 30-170 s)."""

from __future__ import annotations

import pytest

from llmsizer.cli import common
from llmsizer.cli.common import Eta


def test_time_left_is_the_pace_so_far_times_what_remains() -> None:
    eta = Eta(start_s=100.0)
    assert eta.left_s(110.0, 1, 5) == pytest.approx(40.0)  # 10 s a step, 4 to go
    assert eta.left_s(130.0, 3, 5) == pytest.approx(20.0)  # still 10 s a step
    assert eta.left_s(150.0, 5, 5) == 0.0


def test_a_new_stage_is_timed_from_the_end_of_the_one_before() -> None:
    eta = Eta(start_s=0.0)
    eta.left_s(50.0, 5, 5)  # the search: done at 50 s
    assert eta.left_s(56.0, 1, 3) == pytest.approx(12.0)  # a lever's search: 6 s a step
    assert eta.left_s(70.0, 2, 4) == pytest.approx(14.0)  # another total: a stage from 56 s
    assert eta.left_s(71.0, 0, 4) is None and eta.text(71.0, 0, 4) == ""


def test_no_bar_off_a_terminal_or_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with common.progress_bar("sizing") as update:
        assert update is None
