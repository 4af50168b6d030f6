"""`bench/fit_aic.py` with `prefill_layer_overhead_s` fitted without a prior, as
`first_token_delay_s` (whose general value 0 gives it none) already is: the eager launch and
the per-request hold then compete on the rows alone (docs/aic_measurement.md section 20).

    .venv/bin/python bench/fit_aic_free_eager.py [fit_aic.py's arguments]

An experiment, not the shipped fit: it never writes the factor files unless `--write` is
passed, which it should not be.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

from llmsizer.calibrate import aic_prior

EAGER = "prefill_layer_overhead_s"
_sigmas = aic_prior.FitPrior.sigmas


def free_eager_sigmas(prior: aic_prior.FitPrior, fit: Sequence[str]) -> dict[str, float]:
    """The prior's sigmas without the eager launch's (no prior: `calibrate.fit`)."""
    return {name: sigma for name, sigma in _sigmas(prior, fit).items() if name != EAGER}


if __name__ == "__main__":
    aic_prior.FitPrior.sigmas = free_eager_sigmas  # type: ignore[method-assign]
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    sys.argv = [str(here / "fit_aic.py"), *sys.argv[1:]]
    runpy.run_path(str(here / "fit_aic.py"), run_name="__main__")
