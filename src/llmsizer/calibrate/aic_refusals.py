"""Which AIC silicon rows are refused, and why: the whole file mapped, nothing simulated.

Every row is either predicted by the aggregated mapping (`llmsizer.calibrate.aic`), or by
the disaggregated one (`llmsizer.calibrate.aic_disagg`: the `disagg` rows and the InferenceX
GB200 `agg` rows, which are disaggregated runs), or refused with a one-line reason. Both
mappings build each deployment's instances (`check_fit`), so a deployment the model cannot
hold is refused here exactly, not estimated from the simulated sample.
`bench/aic_refusals.py` prints the table; `tests/calibrate/test_aic_refusals.py` holds the
issue's bar (no more than 2 % refused).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from llmsizer.calibrate.aic import AicSkipped, load_aic
from llmsizer.calibrate.aic_disagg import load_aic_disagg


@dataclass(frozen=True, slots=True)
class Refusals:
    """Rows of the file, rows predicted by each mapping, refused rows per reason."""

    num_rows: int
    num_agg: int
    num_disagg: int
    reasons: Counter[str]

    @property
    def num_refused(self) -> int:
        return sum(self.reasons.values())

    def table(self) -> list[str]:
        """The markdown lines: the count, the share, one row per reason."""
        share = 100 * self.num_refused / self.num_rows
        return [
            f"{self.num_rows} rows: {self.num_agg} predicted aggregated, {self.num_disagg} "
            f"disaggregated, {self.num_refused} refused ({share:.1f} %).",
            "",
            "| reason | rows |",
            "|---|---:|",
            *(f"| {reason} | {n} |" for reason, n in self.reasons.most_common()),
        ]


def tally_refusals(path: Path) -> Refusals:
    """Map every row of the CSV at `path` (module docstring) and count the refusals by
    reason (each reason up to its parenthesis: `agg: ...` or `disagg: ...`)."""
    agg = load_aic(path)
    disagg = load_aic_disagg(path)
    reasons: Counter[str] = Counter()
    for mode, mapped in (("agg", agg), ("disagg", disagg)):
        for m in mapped:
            if isinstance(m, AicSkipped) and not (mode == "agg" and m.reason.startswith("disagg")):
                reasons[f"{mode}: {m.reason.split(' (')[0]}"] += 1
    return Refusals(
        num_rows=len(agg),
        num_agg=sum(not isinstance(m, AicSkipped) for m in agg),
        num_disagg=sum(not isinstance(m, AicSkipped) for m in disagg),
        reasons=reasons,
    )
