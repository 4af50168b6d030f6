"""The issue's bar: every row of the calibration file predicted or refused with a reason,
no more than 2 % refused, counted over the whole file without simulating."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic_refusals import tally_refusals
from tests.conftest import shared_path


@pytest.mark.shared
def test_no_more_than_two_percent_of_the_whole_file_is_refused() -> None:
    tally = tally_refusals(shared_path("calibration", "aic_silicon_calibration.csv"))
    assert tally.num_rows == 3555
    # every row is predicted by one mapping or refused, none counted twice
    assert tally.num_agg + tally.num_disagg + tally.num_refused == tally.num_rows
    assert tally.num_refused <= 0.02 * tally.num_rows
    # what remains: 4 GB200 rows without a layout that two InferenceX sweeps ran (the rows
    # only an MTP sweep ran are predicted on its pools, `aic_launches`)
    assert tally.num_refused == 4
    assert all("2 InferenceX GB200 sweeps ran" in reason for reason in tally.reasons)
    table = tally.table()
    assert table[0].startswith("3555 rows:") and f"{tally.num_refused} refused" in table[0]
