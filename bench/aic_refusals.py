"""Count the AIC silicon rows each mapping refuses, over the whole file, without simulating.

    .venv/bin/python bench/aic_refusals.py [--csv PATH]

Prints the markdown table (rows predicted by the aggregated and disaggregated mappings,
refused rows per reason) that `bench/fit_aic.py`'s report also carries
(`llmsizer.calibrate.aic_refusals`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llmsizer.calibrate.aic_refusals import tally_refusals

CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args()
    print("\n".join(tally_refusals(args.csv).table()))


if __name__ == "__main__":
    main()
