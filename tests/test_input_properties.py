"""Property-based tests of every reader of user files and of the commands (issue 14): an
input parses, or raises the project's own error naming the problem; never another exception
type, never a hang, never a silently wrong number. The inputs are the seeds of
`tests/fuzz_targets.py` mutated by a Hypothesis-driven random generator, so Hypothesis
shrinks a failure to a few changes. `bench/fuzz_campaign.py` runs the same targets longer."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_targets import COMMANDS, command_argv, fault_server, reader_targets, run_command

TARGETS = {t.name: t for t in reader_targets()}
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("name", sorted(TARGETS))
@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_a_reader_parses_or_names_the_problem(
    name: str, rng: random.Random, tmp_path: Path
) -> None:
    target = TARGETS[name]
    target.check(target.generate(rng), tmp_path)  # raises Crash on a failure


@SETTINGS
@given(data=st.binary(max_size=300))
def test_every_reader_takes_random_bytes(data: bytes, tmp_path: Path) -> None:
    for target in TARGETS.values():
        target.check(data, tmp_path)


FAST_COMMANDS = sorted(set(COMMANDS) - {"plan", "calibrate", "bench"})


@pytest.mark.parametrize("command", FAST_COMMANDS)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_a_command_exits_0_1_or_2_never_with_a_traceback(
    command: str, rng: random.Random, tmp_path: Path
) -> None:
    run_command(command_argv(command, rng, tmp_path))


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with fault_server(lifetime_s=600.0) as server:
        yield server.url


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_bench_against_a_faulty_server_exits_0_1_or_2(
    rng: random.Random, tmp_path: Path, server_url: str
) -> None:
    run_command(command_argv("bench", rng, tmp_path, server_url))


@pytest.mark.slow
@pytest.mark.parametrize("command", ["plan", "calibrate"])
@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_slow_commands_exit_0_1_or_2(command: str, rng: random.Random, tmp_path: Path) -> None:
    run_command(command_argv(command, rng, tmp_path))
