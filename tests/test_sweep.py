"""Sweeps (`llmsizer.sweep`): every item once, in order, in chunks; and one sweep on a real
local Ray head (127.0.0.1, 2 CPUs) gives value for value what the process pool gives:
`predict --cases` rows, the calibration's recorded schedules, and a plan's searches.

The Ray tests need the extra `llmsizer[ray]`: without it they skip, saying so, except under
CI (`CI` set), which installs it, where they fail."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from llmsizer.calibrate.record import record_traces
from llmsizer.cli import app
from llmsizer.cli.predict import _predict_row, run_cases
from llmsizer.errors import MissingExtraError, read_csv_rows
from llmsizer.instance import PredictSpec
from llmsizer.perf import default_efficiency
from llmsizer.sizing.plan import plan, search_space
from llmsizer.sizing.search import search
from llmsizer.sizing.usecase import UseCase
from llmsizer.sweep import (
    CHUNKS_PER_WORKER,
    InProcess,
    ProcessPool,
    RayCluster,
    Sweep,
    chunk_size,
    open_sweep,
)
from tests.sizing.cases import two_gpus

CASES = Path(__file__).parents[1] / "examples" / "predict" / "cases.csv"


def square(x: int) -> int:
    return x * x


@pytest.mark.parametrize(("num_items", "workers"), [(0, 2), (1, 2), (7, 2), (100, 2), (9, 3)])
def test_chunks_are_about_four_per_worker(num_items: int, workers: int) -> None:
    size = chunk_size(num_items, workers)
    num_chunks = math.ceil(num_items / size)
    assert size >= 1
    assert num_chunks <= CHUNKS_PER_WORKER * workers
    if num_items >= workers:
        assert num_chunks >= workers  # every worker gets a chunk


def test_one_worker_runs_here_and_more_in_a_pool() -> None:
    with open_sweep(1) as one:
        assert isinstance(one, InProcess) and one.workers == 1
    with open_sweep(2) as two:
        assert isinstance(two, ProcessPool) and two.workers == 2
        seen: list[tuple[int, int]] = []
        got = two.map(square, list(range(37)), progress=lambda d, t: seen.append((d, t)))
    assert got == [x * x for x in range(37)]
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (37, 37)


def test_zero_workers_is_refused_naming_the_value() -> None:
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"), open_sweep(0):
        pass


def test_a_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as when not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'llmsizer\[ray\]'"):  # noqa: SIM117
        with open_sweep(ray=True):
            pass


# --- a real local Ray head ---------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_head() -> Iterator[Any]:
    """Ray started once for the module: a head on 127.0.0.1 with 2 CPUs, no dashboard.

    Ray replaces a loopback node address with the machine's routable one, except where it
    keeps clusters local (its switch for Windows and macOS, read when `ray` is imported):
    that switch keeps the test's head, and its workers, on 127.0.0.1."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        try:
            import ray
        except ImportError:
            reason = "needs the extra llmsizer[ray] (pip install 'llmsizer[ray]')"
            if os.environ.get("CI"):
                pytest.fail(f"{reason}, and CI is set: CI installs it", pytrace=False)
            pytest.skip(reason)
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )
        try:
            yield ray
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def on_ray(ray_head: Any) -> Iterator[Sweep]:
    with open_sweep(ray=True) as sweep:
        yield sweep
    assert ray_head.is_initialized()  # a Ray the caller started is left running


@pytest.fixture(scope="module")
def pool() -> Iterator[Sweep]:
    with open_sweep(2) as sweep:
        yield sweep


def assert_same(a: Any, b: Any) -> None:
    """Equal value for value: numpy arrays element-wise with their dtype, floats exactly
    (NaN equal to NaN), dataclasses field by field."""
    assert type(a) is type(b)
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name))
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


def test_ray_runs_every_item_in_order(on_ray: Sweep, ray_head: Any) -> None:
    assert isinstance(on_ray, RayCluster) and on_ray.workers == 2
    assert [node["NodeManagerAddress"] for node in ray_head.nodes()] == ["127.0.0.1"]
    seen: list[tuple[int, int]] = []
    assert on_ray.map(square, list(range(50)), lambda d, t: seen.append((d, t))) == [
        x * x for x in range(50)
    ]
    assert seen[-1] == (50, 50)
    assert on_ray.map(square, []) == []


def test_predict_cases_on_ray_equal_the_process_pool(on_ray: Sweep, pool: Sweep) -> None:
    rows = read_csv_rows(CASES, "cases file")[:12]
    rows.append({**rows[0], "tp": "3"})  # a row that fails: its error, the same way
    job = partial(_predict_row, efficiency=None)
    local, remote = pool.map(job, rows), on_ray.map(job, rows)
    assert local[-1]["error"] and not local[0]["error"]
    assert_same(remote, local)


def test_the_cli_sweep_on_ray_writes_the_same_file(on_ray: Sweep, tmp_path: Path) -> None:
    cases = tmp_path / "cases.csv"
    cases.write_text("".join(CASES.read_text().splitlines(keepends=True)[:5]))
    run_cases(cases, tmp_path / "here.csv", None)
    run_cases(cases, tmp_path / "ray.csv", None, ray=True)
    assert (tmp_path / "ray.csv").read_text() == (tmp_path / "here.csv").read_text()


def test_recorded_schedules_on_ray_equal_the_process_pool(on_ray: Sweep, pool: Sweep) -> None:
    specs = [
        PredictSpec(model="llama-3.1-8b", gpu="h100-sxm", isl=512, osl=64, num_requests=40, **load)
        for load in ({"concurrency": 4}, {"request_rate": 3.0}, {"concurrency": 16})
    ]
    eff = default_efficiency("vllm")
    latencies = [True, True, False]
    assert_same(
        record_traces(specs, eff, latencies, on_ray), record_traces(specs, eff, latencies, pool)
    )


def test_a_plan_search_on_ray_equals_the_serial_search(on_ray: Sweep) -> None:
    usecase = UseCase.model_validate(two_gpus(uncertainty=0.0, levers=False))
    space = search_space(usecase)
    serial = search(space, lambda spec: default_efficiency(spec.preset))
    assert search(space, lambda spec: default_efficiency(spec.preset), sweep=on_ray) == serial
    assert plan(usecase, sweep=on_ray) == plan(usecase)


PLAN_FLAGS = [
    "plan", "--model", "llama-3-8b", "--isl", "2000", "--osl", "200", "--peak-rps", "50",
    "--ttft-ms", "300", "--gpu", "h100-sxm,l40s", "--tp", "1,2",
]  # fmt: skip


def test_plan_on_ray_from_the_command_line_writes_the_same_plan(
    on_ray: Sweep, tmp_path: Path
) -> None:
    runner = CliRunner()
    here, there = tmp_path / "here.json", tmp_path / "ray.json"
    r = runner.invoke(app, [*PLAN_FLAGS, "--json", str(here)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*PLAN_FLAGS, "--json", str(there), "--ray"])
    assert r.exit_code == 0, r.output
    assert "running on Ray (this machine): 2 CPUs" in r.output
    assert json.loads(there.read_text()) == json.loads(here.read_text())


def test_ray_flags_without_a_sweep_are_refused() -> None:
    r = CliRunner().invoke(
        app, ["predict", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--ray"]
    )
    assert r.exit_code != 0
    assert "--ray and --ray-address run the rows of --cases" in str(r.exception)
