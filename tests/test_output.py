"""Results reach the disk whole or not at all (issue 14): every writer goes through
`llmsizer.output.atomic_path`, and no command writes over a file unasked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmsizer import output, report
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine, EngineConfig, FixedTicks
from llmsizer.workload import WorkloadSpec, make_workload


def _records() -> list[RequestRecord]:
    spec = WorkloadSpec.model_validate({"arrival": "burst", "num_requests": 6, "isl": 8, "osl": 4})
    workload = make_workload(spec)
    engine = Engine(EngineConfig(max_num_seqs=2), FixedTicks(0.01))
    return list(engine.run(workload).records)


def test_a_failed_write_leaves_the_earlier_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text("earlier")
    with pytest.raises(RuntimeError), output.atomic_path(path) as tmp:
        tmp.write_text("half of")
        raise RuntimeError("killed mid-write")
    assert path.read_text() == "earlier"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_the_temporary_keeps_the_name_and_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl.gz"
    with output.atomic_path(path) as tmp:
        assert tmp.parent == tmp_path and tmp.name.endswith("-records.jsonl.gz")
        tmp.write_bytes(b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_bytes() == b"x" and path.stat().st_mode & 0o777 == 0o666 & ~umask


PLOTS = {
    "picture.png": report.timeline_png,
    "picture.html": report.timeline_html,
    "histograms.png": report.distributions_png,
    "histograms.html": report.distributions_html,
}


@pytest.mark.parametrize("name", sorted(PLOTS))
def test_plots_are_renamed_into_place(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renamed: list[tuple[Path, Path]] = []
    real = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        renamed.append((Path(src), Path(dst)))
        real(src, dst)

    monkeypatch.setattr(output.os, "replace", spy)
    path = tmp_path / name
    PLOTS[name](_records(), path)
    assert [dst for _, dst in renamed] == [path] and path.stat().st_size > 0
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_the_html_report_is_renamed_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renamed: list[Path] = []
    real = os.replace
    monkeypatch.setattr(output.os, "replace", lambda s, d: (renamed.append(Path(d)), real(s, d)))
    path = tmp_path / "report.html"
    report.write_html_report(path, title="t", parameters={}, summary={}, records=_records())
    assert renamed == [path] and "<html" in path.read_text()


@pytest.mark.parametrize(
    ("flag", "name", "magic"), [("--plot", "t.png", b"\x89PNG"), ("--html", "t.html", b"<")]
)
def test_simulate_never_replaces_a_picture_unasked(
    flag: str, name: str, magic: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmsizer.cli import main

    target = tmp_path / name
    target.write_bytes(b"earlier")
    args = ["llmsizer", "simulate", "--num-requests", "5", flag, str(target)]
    for extra, code in (([], 2), (["--overwrite"], 0)):
        monkeypatch.setattr("sys.argv", [*args, *extra])
        with pytest.raises(SystemExit) as e:
            main()
        assert (e.value.code or 0) == code
        assert target.read_bytes().startswith(b"earlier" if code else magic)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary left
