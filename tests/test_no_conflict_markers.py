"""No merge leaves its conflict markers in a tracked text file (session 8 left some in a doc)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = {".py", ".md", ".yaml", ".yml", ".toml", ".csv", ".json", ".txt", ".html", ".js", ".cfg"}
SKIP = {".git", ".venv", "build", "dist", "node_modules", "__pycache__", ".mypy_cache"}
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)


def _files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT).parts
        if any(p in SKIP or p.endswith(".egg-info") for p in rel):
            continue
        if path.suffix in TEXT and path.is_file():
            out.append(path)
    return out


def test_no_file_holds_a_conflict_marker() -> None:
    files = _files()
    assert len(files) > 100  # the walk found the repository
    bad = [
        f"{p.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for p in files
        for text in [p.read_text(errors="replace")]
        for m in MARKER.finditer(text)
    ]
    assert not bad, f"conflict markers left by a merge: {bad}"
