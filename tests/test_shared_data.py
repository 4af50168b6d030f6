"""Tests that read ../shared say so: the `shared` marker skips them where the folder is
absent, visibly, and fails them in CI, which always has it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import SHARED_DIR, require_shared, shared_path

TESTS = Path(__file__).resolve().parent


def test_absent_shared_data_skips_naming_the_folder(tmp_path: Path) -> None:
    missing = tmp_path / "shared"
    with pytest.raises(pytest.skip.Exception, match=re.escape(f"needs ../shared ({missing})")):
        require_shared(missing, ci=False)


def test_absent_shared_data_fails_in_ci(tmp_path: Path) -> None:
    missing = tmp_path / "shared"
    with pytest.raises(pytest.fail.Exception, match=r"needs \.\./shared .* CI is set"):
        require_shared(missing, ci=True)


def test_present_shared_data_runs_in_and_out_of_ci(tmp_path: Path) -> None:
    require_shared(tmp_path, ci=True)
    require_shared(tmp_path, ci=False)


def test_shared_is_beside_the_repository_root() -> None:
    assert SHARED_DIR.parent == TESTS.parent.parent and SHARED_DIR.name == "shared"
    assert shared_path("traces", "a.csv") == SHARED_DIR / "traces" / "a.csv"


def test_every_module_reaching_shared_data_goes_through_the_marker() -> None:
    """No hand-built path to ../shared (it would skip, or fail, on its own terms), and each
    module that calls `shared_path` marks its tests."""
    users = []
    for path in sorted(TESTS.rglob("*.py")):
        if path in (TESTS / "conftest.py", Path(__file__)):
            continue
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""/\s*["']shared["']""", text), f"{path}: use shared_path"
        if "shared_path(" in text:
            users.append(path.relative_to(TESTS).as_posix())
            assert "pytest.mark.shared" in text, f"{path}: mark the tests that read ../shared"
    # the scan sees the known users (it would pass vacuously on a wrong folder otherwise)
    assert {"calibrate/test_calibration.py", "test_workload.py"} <= set(users)
