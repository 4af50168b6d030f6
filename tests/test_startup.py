"""Startup stays light: the CLI and a prediction load no plotting library and no scipy
(about 1.3 s of imports on the development machine); pictures and fits load them on use."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "plotly", "scipy", "torch")  # torch: `collect` imports it on use
HEAVY += ("ray",)  # `--ray` imports it (`llmsizer.sweep`), and it is an extra (issue 13)


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    return {name.split(".")[0] for name in out.split()}


@pytest.mark.parametrize(
    "code",
    [
        "import llmsizer.cli",
        "import llmsizer",
        "from llmsizer.sizing.peak import poisson_peak_rps; poisson_peak_rps(64)",
        "from llmsizer.report import print_summary",
    ],
)
def test_no_heavy_library_is_loaded(code: str) -> None:
    assert not _loaded_after(code) & set(HEAVY)


def test_a_picture_still_loads_its_library_on_demand() -> None:
    assert "matplotlib" in _loaded_after("from llmsizer.report import timeline_png")
