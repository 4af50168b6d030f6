"""`bench/cold_stall.py`: the stall S = excess mean TTFT x prompts per client a row would
hold, flat over the clients for a one-off build, growing for a dearer step
(docs/aic_measurement.md sections 41, 58)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

PLAIN = {  # a TensorRT-LLM DeepSeek row before the warm-up (10c), as the calibration file has it
    "backend": "trtllm",
    "system": "b200_sxm",
    "precision": "fp8",
    "osl": "1024",
    "silicon_data_source": "source_file=2026-04-06.csv; measured=2025-12-15T00:00:00.000Z",
}
DOCKER = {**PLAIN, "backend": "sglang", "silicon_data_source": "measured=2025-11-18T00:00:00Z"}


@pytest.fixture
def cold_stall(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("cold_stall")


def rows_of(
    shipped_ms: Callable[[int], float], measured_ms: Callable[[int], float], raw: dict[str, str]
) -> tuple[list[dict[str, str]], dict[str, dict[str, str]]]:
    """A `--rows` CSV's rows at 4-128 clients and their calibration rows."""
    rows, by_id = [], {}
    for c in (4, 8, 16, 32, 64, 128):
        rows.append({
            "id": f"r{c}", "model": "deepseek-r1", "concurrency": str(c),
            "measured_mean_ttft_ms": str(measured_ms(c)),
            "shipped_mean_ttft_ms": str(shipped_ms(c)),
            "measured_mean_tpot_ms": "20", "shipped_mean_tpot_ms": "20",
        })  # fmt: skip
        by_id[f"r{c}"] = {**raw, "id": f"r{c}"}
    return rows, by_id


def test_a_one_off_build_is_one_flat_stall(cold_stall: ModuleType) -> None:
    # a 2 s build waited for by each first wave of c out of 10c prompts: +200 ms of mean TTFT
    rows, raw = rows_of(lambda c: 100.0 + 8 * c, lambda c: 100.0 + 8 * c + 200, PLAIN)
    items = cold_stall.stalls(rows, raw)
    assert [it.stall_s for it in items] == pytest.approx([2.0] * 6)
    assert all(it.tpot_error == 0 and not it.key[0] for it in items)  # no TPOT, before warm-up
    a, b = cold_stall.stall_line(items)
    assert a == pytest.approx(2.0) and b == pytest.approx(0.0, abs=1e-12)


def test_a_dearer_step_grows_with_the_clients(cold_stall: ModuleType) -> None:
    # measured 25 % over a TTFT that grows with the queue: S grows, its share of TTFT does not
    rows, raw = rows_of(lambda c: 100.0 + 8 * c, lambda c: 1.25 * (100.0 + 8 * c), PLAIN)
    items = cold_stall.stalls(rows, raw)
    assert {round(it.ttft_error, 6) for it in items} == {-20.0}
    a, b = cold_stall.stall_line(items)
    assert b == pytest.approx(0.25 * 8 * 10 / 1000) and a == pytest.approx(0.25)


def test_the_stall_counts_the_launchers_prompts(cold_stall: ModuleType) -> None:
    # the B200 docker runner's SGLang DeepSeek FP8 runs sent 50c prompts (aic_clients)
    rows, raw = rows_of(lambda c: 100.0, lambda c: 101.0, DOCKER)
    assert [it.stall_s for it in cold_stall.stalls(rows, raw)] == pytest.approx([0.05] * 6)


def test_rows_without_a_date_or_of_another_model_are_left_out(cold_stall: ModuleType) -> None:
    rows, raw = rows_of(lambda c: 100.0, lambda c: 110.0, {**PLAIN, "silicon_data_source": "x"})
    assert cold_stall.stalls(rows, raw) == []
    rows, raw = rows_of(lambda c: 100.0, lambda c: 110.0, PLAIN)
    assert cold_stall.stalls([{**r, "model": "llama-3.1-70b"} for r in rows], raw) == []


def test_a_line_needs_two_client_counts(cold_stall: ModuleType) -> None:
    rows, raw = rows_of(lambda c: 100.0, lambda c: 110.0, PLAIN)
    items = cold_stall.stalls(rows[:1] * 2, raw)
    with pytest.raises(ValueError, match=r"two client counts, got \[4\]"):
        cold_stall.stall_line(items)
