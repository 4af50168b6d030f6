"""`llmsizer plan` runs on the CPUs it may use by default (issue 13: its parts on forked
workers), and writes the same plan as in one process (`--workers 1`)."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from typer.testing import CliRunner

from llmsizer.cli import app
from llmsizer.sweep import open_sweep, usable_cpus
from tests.sizing.cases import two_gpus

USECASE = two_gpus(uncertainty=0.1, curves=True)


def test_the_default_workers_are_the_cpus_this_process_may_use() -> None:
    assert usable_cpus() == len(os.sched_getaffinity(0)) >= 1
    with open_sweep() as sweep:
        assert sweep.workers == usable_cpus()


def test_a_plan_on_the_default_workers_writes_what_one_process_writes(tmp_path: Path) -> None:
    usecase = tmp_path / "usecase.yaml"
    usecase.write_text(yaml.safe_dump(USECASE))
    runner = CliRunner()
    outputs = {}
    for name, flags in {"all": [], "one": ["--workers", "1"]}.items():
        json_path = tmp_path / f"{name}.json"  # names of one length: the same line breaks
        r = runner.invoke(app, ["plan", str(usecase), "--json", str(json_path), *flags])
        assert r.exit_code == 0, r.output
        outputs[name] = (r.output.replace(str(json_path), "PLAN.json"), json_path.read_text())
    assert outputs["all"] == outputs["one"]
    assert '"band"' in outputs["one"][1] and '"levers"' in outputs["one"][1]
