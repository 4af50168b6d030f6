"""Workloads: samplers against their theory, trace files against their published statistics,
and the spec's strictness at the boundary."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from scipy.special import gammainc

from llmsizer.workload import (
    LengthSpec,
    TraceError,
    Workload,
    WorkloadSpec,
    burst_arrivals,
    empirical_lengths,
    fixed_lengths,
    gamma_arrivals,
    lognormal_lengths,
    make_workload,
    normal_lengths,
    poisson_arrivals,
    read_azure_csv,
    read_mooncake_jsonl,
    read_trace,
    uniform_lengths,
)
from llmsizer.workload.lengths import lognormal_parameters
from tests.conftest import shared_path

TRACES = shared_path("traces")
AZURE_CONV = TRACES / "AzureLLMInferenceTrace_conv.csv"
AZURE_CODE = TRACES / "AzureLLMInferenceTrace_code.csv"
MOONCAKE_CONV = TRACES / "mooncake_conversation_trace.jsonl"
MOONCAKE_SYNTHETIC = TRACES / "mooncake_synthetic_trace.jsonl"
N = 100_000  # samples for statistical checks: standard errors well under 1 %


def cv(values: np.ndarray) -> float:
    return float(values.std() / values.mean())


def arrivals_of(workload: Workload) -> np.ndarray:
    assert workload.arrival_s is not None, "expected an open-loop workload"
    return workload.arrival_s


def span_of(workload: Workload) -> float:
    assert workload.span_s is not None, "expected an open-loop workload"
    return workload.span_s


def ks_distance(sample: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
    """Kolmogorov-Smirnov D: the largest gap between the sample's CDF and `cdf`."""
    x = np.sort(sample)
    theory = cdf(x)
    n = x.shape[0]
    above = np.arange(1, n + 1) / n - theory
    below = theory - np.arange(n) / n
    return float(max(above.max(), below.max()))


def ks_critical(n: int, alpha: float = 1e-3) -> float:
    """D that a true sample exceeds with probability `alpha` (Kolmogorov's asymptotic bound,
    sqrt(-ln(alpha / 2) / 2) / sqrt(n); Massey 1951)."""
    return math.sqrt(-math.log(alpha / 2) / 2 / n)


@pytest.fixture(scope="module")
def azure_conv() -> Workload:
    return read_trace(AZURE_CONV)


@pytest.fixture(scope="module")
def mooncake_conv() -> Workload:
    return read_trace(MOONCAKE_CONV)


# --- lengths ---------------------------------------------------------------------------------


def test_fixed_lengths_are_the_value_and_capped() -> None:
    assert fixed_lengths(3, 1000).tolist() == [1000, 1000, 1000]
    assert fixed_lengths(2, 1000, max_tokens=512).tolist() == [512, 512]


def test_uniform_lengths_cover_both_ends_with_the_midpoint_mean() -> None:
    drawn = uniform_lengths(N, 10, 20, np.random.default_rng(1))
    assert drawn.min() == 10 and drawn.max() == 20
    assert drawn.mean() == pytest.approx(15, rel=0.01)


def test_normal_lengths_have_the_moments_asked_for() -> None:
    drawn = normal_lengths(N, 1000, 200, np.random.default_rng(2))
    assert drawn.mean() == pytest.approx(1000, rel=0.01)
    assert drawn.std() == pytest.approx(200, rel=0.02)


def test_normal_lengths_are_clipped_to_one() -> None:
    drawn = normal_lengths(N, 5, 100, np.random.default_rng(3))
    assert drawn.min() == 1
    assert (drawn == 1).mean() > 0.4  # about half the normal's mass lies below 1


def test_lognormal_lengths_have_the_mean_and_std_of_the_lengths() -> None:
    drawn = lognormal_lengths(N, 1000, 500, np.random.default_rng(4))
    assert drawn.mean() == pytest.approx(1000, rel=0.01)
    assert drawn.std() == pytest.approx(500, rel=0.03)
    mu, _ = lognormal_parameters(1000, 500)
    assert np.median(drawn) == pytest.approx(math.exp(mu), rel=0.01)  # median = exp(mu)


def test_lognormal_parameters_invert_the_moments() -> None:
    mu, sigma = lognormal_parameters(1000, 500)
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(1000)
    assert math.sqrt(math.exp(sigma**2) - 1) * 1000 == pytest.approx(500)


def test_empirical_lengths_draw_only_the_given_values() -> None:
    values = np.array([3, 30, 300])
    drawn = empirical_lengths(N, values, np.random.default_rng(5), max_tokens=100)
    assert set(drawn.tolist()) == {3, 30, 100}
    assert (drawn == 3).mean() == pytest.approx(1 / 3, abs=0.01)


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: fixed_lengths(10, 7),
        lambda rng: uniform_lengths(10, 1, 5, rng),
        lambda rng: normal_lengths(10, 3, 10, rng),
        lambda rng: lognormal_lengths(10, 3, 10, rng),
        lambda rng: empirical_lengths(10, np.array([1, 2]), rng),
    ],
)
def test_lengths_are_read_only_int64_at_least_one(draw) -> None:
    drawn = draw(np.random.default_rng(6))
    assert drawn.dtype == np.int64 and drawn.shape == (10,)
    assert drawn.min() >= 1
    assert not drawn.flags.writeable


@pytest.mark.parametrize(
    ("draw", "message"),
    [
        (lambda rng: uniform_lengths(3, 5, 4, rng), "low <= high"),
        (lambda rng: normal_lengths(3, 100, -1, rng), "std >= 0"),
        (lambda rng: lognormal_lengths(3, 0, 1, rng), "mean > 0"),
        (lambda rng: fixed_lengths(-1, 5), "num_requests must be >= 0"),
        (lambda rng: fixed_lengths(3, 5, max_tokens=0), "max_tokens must be >= 1"),
        (lambda rng: empirical_lengths(3, np.array([], dtype=int), rng), "non-empty"),
    ],
)
def test_length_samplers_reject_impossible_parameters(draw, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        draw(np.random.default_rng(0))


# --- arrivals --------------------------------------------------------------------------------


def test_burst_puts_every_request_at_zero() -> None:
    assert burst_arrivals(4).tolist() == [0.0, 0.0, 0.0, 0.0]


def test_poisson_gaps_are_exponential_with_mean_one_over_rate() -> None:
    arrival_s = poisson_arrivals(N, 4.0, np.random.default_rng(7))
    gaps_s = np.diff(arrival_s)
    assert arrival_s[0] == 0.0
    assert gaps_s.mean() == pytest.approx(0.25, rel=0.015)
    assert cv(gaps_s) == pytest.approx(1.0, abs=0.025)
    assert ks_distance(gaps_s, lambda x: 1 - np.exp(-x / 0.25)) < ks_critical(gaps_s.shape[0])


def test_poisson_counts_per_window_have_variance_equal_to_mean() -> None:
    arrival_s = poisson_arrivals(N, 10.0, np.random.default_rng(8))
    counts = np.bincount(arrival_s.astype(np.int64))[:-1]  # whole 1 s windows
    assert counts.mean() == pytest.approx(10.0, rel=0.02)
    assert counts.var() / counts.mean() == pytest.approx(1.0, abs=0.05)  # index of dispersion


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_gaps_keep_the_rate_with_cv_one_over_sqrt_burstiness(burstiness: float) -> None:
    gaps_s = np.diff(gamma_arrivals(N, 2.0, burstiness, np.random.default_rng(9)))
    assert gaps_s.mean() == pytest.approx(0.5, rel=0.02)
    assert cv(gaps_s) == pytest.approx(1 / math.sqrt(burstiness), rel=0.04)
    scale_s = 1 / (2.0 * burstiness)
    distance = ks_distance(gaps_s, lambda x: gammainc(burstiness, x / scale_s))
    assert distance < ks_critical(gaps_s.shape[0])


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: poisson_arrivals(3, 0.0, rng),
        lambda rng: poisson_arrivals(3, math.inf, rng),
        lambda rng: gamma_arrivals(3, 1.0, 0.0, rng),
    ],
)
def test_arrival_processes_reject_impossible_parameters(draw) -> None:
    with pytest.raises(ValueError, match="> 0"):
        draw(np.random.default_rng(0))


def test_zero_and_one_requests() -> None:
    rng = np.random.default_rng(0)
    assert poisson_arrivals(0, 1.0, rng).shape == (0,)
    assert poisson_arrivals(1, 1.0, rng).tolist() == [0.0]


# --- traces ----------------------------------------------------------------------------------


@pytest.mark.shared
def test_azure_conversation_trace_matches_its_readme(azure_conv: Workload) -> None:
    assert azure_conv.num_requests == 19_366
    assert arrivals_of(azure_conv)[0] == 0.0
    assert span_of(azure_conv) == pytest.approx(3_502, abs=1)
    assert azure_conv.num_prompt_tokens.mean() == pytest.approx(1155, abs=1)
    assert azure_conv.num_output_tokens.mean() == pytest.approx(211, abs=1)
    assert np.percentile(azure_conv.num_prompt_tokens, 50) == pytest.approx(1020, abs=1)
    assert np.percentile(azure_conv.num_output_tokens, 99) == pytest.approx(601, abs=2)
    assert cv(np.diff(arrivals_of(azure_conv))) == pytest.approx(1.09, abs=0.01)
    assert azure_conv.prefix_hashes is None


@pytest.mark.shared
def test_azure_code_trace_is_very_bursty() -> None:
    code = read_azure_csv(AZURE_CODE)
    assert code.num_requests == 8_819
    assert cv(np.diff(arrivals_of(code))) == pytest.approx(13, abs=0.5)
    assert code.num_prompt_tokens.mean() == pytest.approx(2048, abs=1)


@pytest.mark.shared
def test_mooncake_conversation_trace_matches_its_readme(mooncake_conv: Workload) -> None:
    assert mooncake_conv.num_requests == 12_031
    assert mooncake_conv.span_s == pytest.approx(3_537, abs=1)
    assert mooncake_conv.num_prompt_tokens.mean() == pytest.approx(12_035, abs=1)
    assert mooncake_conv.num_output_tokens.mean() == pytest.approx(343, abs=1)
    assert mooncake_conv.prefix_block_tokens == 512
    assert mooncake_conv.prefix_hashes is not None
    num_blocks = [len(hashes) for hashes in mooncake_conv.prefix_hashes]
    assert num_blocks == (-(-mooncake_conv.num_prompt_tokens // 512)).tolist()
    first_blocks = {hashes[0] for hashes in mooncake_conv.prefix_hashes}
    assert len(first_blocks) < mooncake_conv.num_requests / 2  # prompts do share prefixes


@pytest.mark.shared
def test_mooncake_synthetic_trace_size() -> None:
    synthetic = read_mooncake_jsonl(MOONCAKE_SYNTHETIC)
    assert synthetic.num_requests == 3_993
    assert synthetic.span_s == pytest.approx(1_022, abs=1)


@pytest.mark.shared
def test_time_scale_stretches_gaps_and_rate_scale_compresses_them(azure_conv: Workload) -> None:
    slow = read_trace(AZURE_CONV, time_scale=2.0)
    fast = read_trace(AZURE_CONV, "azure", rate_scale=2.0)
    assert span_of(slow) == pytest.approx(2 * span_of(azure_conv))
    assert span_of(fast) == pytest.approx(span_of(azure_conv) / 2)
    assert arrivals_of(slow)[0] == 0.0
    np.testing.assert_array_equal(slow.num_prompt_tokens, azure_conv.num_prompt_tokens)


@pytest.mark.shared
def test_max_requests_keeps_the_first_ones(mooncake_conv: Workload) -> None:
    first = read_trace(MOONCAKE_CONV, max_requests=100)
    assert first.num_requests == 100
    assert first.prefix_hashes is not None and mooncake_conv.prefix_hashes is not None
    assert first.prefix_hashes == mooncake_conv.prefix_hashes[:100]
    np.testing.assert_array_equal(arrivals_of(first), arrivals_of(mooncake_conv)[:100])


# --- malformed trace files -------------------------------------------------------------------

AZURE_OK = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
MOONCAKE_OK = '{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n'


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("time,in,out\n", ":1:", "expected the header"),
        (AZURE_OK + "2023-11-16 18:15:47,12\n", ":3:", "expected 'YYYY-MM-DD"),
        (AZURE_OK + "16/11/2023 18:15:47,12,3\n", ":3:", "expected 'YYYY-MM-DD"),
        (AZURE_OK + "2023-13-16 18:15:47.1,12,3\n", ":3:", "invalid date or time"),
        (AZURE_OK + "2023-11-16 18:15:47.1,0,3\n", ":3:", "ContextTokens must be >= 1"),
        (AZURE_OK + "2023-11-16 18:15:40.0,12,3\n", ":3:", "in time order"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n", ": ", "no requests"),
    ],
)
def test_malformed_azure_csv_names_file_line_and_expectation(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(TraceError, match=message) as caught:
        read_trace(path)
    assert str(caught.value).startswith(f"{path}{where}")


def test_azure_csv_tolerates_a_bom_crlf_blank_lines_and_short_fractions(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    rows = "2023-11-16 18:15:46.5,10,2\r\n\r\n2023-11-16 18:15:48,10,2\r\n"
    path.write_text("\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\r\n" + rows)
    trace = read_azure_csv(path)
    assert arrivals_of(trace).tolist() == [0.0, 1.5]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json\n", "invalid JSON"),
        ("[1, 2]\n", "expected a JSON object"),
        ('{"timestamp": 0, "input_length": 5}\n', "output_length is missing"),
        ('{"timestamp": "0", "input_length": 5, "output_length": 1}\n', "timestamp must be"),
        ('{"timestamp": 0, "input_length": 5.5, "output_length": 1}\n', "must be an integer"),
        ('{"timestamp": 0, "input_length": true, "output_length": 1}\n', "must be an integer"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 0}\n', "output_length must be >="),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": 3}\n', "hash_ids"),
    ],
)
def test_malformed_mooncake_jsonl_names_file_line_and_expectation(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(MOONCAKE_OK + "\n" + text)  # the bad row is on line 3
    with pytest.raises(TraceError, match=message) as caught:
        read_trace(path)
    assert str(caught.value).startswith(f"{path}:3:")
    assert caught.value.line == 3


def test_unreadable_trace_files_raise_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "missing.csv")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceError, match="UTF-8"):
        read_trace(binary)
    with pytest.raises(TraceError, match=r"suffix '\.txt'"):
        read_trace(tmp_path / "trace.txt")


def test_mooncake_rows_without_hash_ids_share_nothing(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 5, "output_length": 1, "text": "hi"}\n')
    assert read_mooncake_jsonl(path).prefix_hashes is None


# --- the Workload's invariants ---------------------------------------------------------------

ONE = np.ones(2, dtype=np.int64)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"num_output_tokens": np.ones(3, dtype=np.int64)}, "1-D with 2 entries"),
        ({"num_prompt_tokens": np.array([1, 0])}, r"num_prompt_tokens\[1\] = 0"),
        ({"num_prompt_tokens": np.array([1.0, 2.0])}, "must hold integers"),
        ({"arrival_s": np.array([1.0, 0.5])}, "non-decreasing"),
        ({"arrival_s": None}, "closed-loop workload .* needs concurrency"),
        ({"concurrency": 4}, "applies only to a closed loop"),
        ({"prefix_hashes": ((1,),)}, "prefix_hashes has 1 entries for 2 requests"),
        ({"system_prompt_tokens": 5}, "shorter than the shared system prompt"),
        ({"system_prompt_tokens": 1, "prefix_hashes": ((1,), (1,))}, "not both"),
    ],
)
def test_workload_rejects_broken_invariants(fields: dict, message: str) -> None:
    arguments = {"num_prompt_tokens": ONE, "num_output_tokens": ONE, "arrival_s": np.zeros(2)}
    with pytest.raises(ValueError, match=message):
        Workload(**(arguments | fields))


def test_workload_head_and_time_scale() -> None:
    workload = Workload(ONE, ONE, arrival_s=np.array([3.0, 5.0]), source="test")
    assert workload.head(1).num_requests == 1
    assert arrivals_of(workload.with_time_scale(10)).tolist() == [3.0, 23.0]
    closed = Workload(ONE, ONE, concurrency=2)
    assert closed.is_closed_loop and closed.span_s is None
    assert closed.with_time_scale(10) is closed


# --- WorkloadSpec and make_workload ----------------------------------------------------------


def test_default_spec_is_the_notebook_lengths_at_one_request_per_second() -> None:
    workload = make_workload(WorkloadSpec())
    assert workload.num_requests == 1000
    assert set(workload.num_prompt_tokens.tolist()) == {1000}
    assert set(workload.num_output_tokens.tolist()) == {100}
    assert np.diff(arrivals_of(workload)).mean() == pytest.approx(1.0, rel=0.1)
    assert workload.source == "poisson at 1 req/s; isl fixed 1000; osl fixed 100; seed 0"


def test_every_spec_field_has_a_default_and_a_description() -> None:
    for model in (WorkloadSpec, LengthSpec):
        for name, field in model.model_fields.items():
            assert not field.is_required(), name
            assert field.description and "\n" not in field.description, name


def test_same_seed_same_workload_and_an_explicit_generator_wins() -> None:
    spec = WorkloadSpec(
        arrival="gamma",
        request_rate=3,
        burstiness=0.5,
        isl=LengthSpec(kind="lognormal", mean=800, std=400),
        osl=LengthSpec(kind="uniform", low=10, high=300),
        seed=42,
    )
    first, again = make_workload(spec), make_workload(spec)
    for name in ("num_prompt_tokens", "num_output_tokens", "arrival_s"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    other = make_workload(spec.model_copy(update={"seed": 43}))
    assert not np.array_equal(arrivals_of(first), arrivals_of(other))
    explicit = make_workload(spec, np.random.default_rng(42))
    np.testing.assert_array_equal(first.num_prompt_tokens, explicit.num_prompt_tokens)
    assert "seed" not in explicit.source


def test_yaml_style_input_with_integer_lengths() -> None:
    spec = WorkloadSpec.model_validate(
        {"arrival": "burst", "num_requests": 4, "isl": 512, "osl": {"kind": "fixed", "value": 8}}
    )
    workload = make_workload(spec)
    assert workload.num_prompt_tokens.tolist() == [512] * 4
    assert arrivals_of(workload).tolist() == [0.0] * 4


def test_closed_loop_has_concurrency_and_no_arrival_times() -> None:
    workload = make_workload(WorkloadSpec(arrival="closed_loop", concurrency=8, num_requests=50))
    assert workload.arrival_s is None and workload.concurrency == 8
    assert workload.num_requests == 50


def test_system_prompt_is_added_in_front_of_every_prompt() -> None:
    spec = WorkloadSpec(isl=LengthSpec(kind="uniform", low=1, high=10), system_prompt_tokens=200)
    workload = make_workload(spec)
    assert workload.system_prompt_tokens == 200
    assert workload.num_prompt_tokens.min() >= 201 and workload.num_prompt_tokens.max() <= 210


@pytest.mark.shared
def test_trace_lengths_with_poisson_arrivals_keep_prompt_output_pairs(
    azure_conv: Workload,
) -> None:
    spec = WorkloadSpec(trace=AZURE_CONV, request_rate=5, num_requests=20_000)
    workload = make_workload(spec)
    assert workload.num_prompt_tokens.mean() == pytest.approx(1155, rel=0.02)
    assert workload.num_output_tokens.mean() == pytest.approx(211, rel=0.02)
    trace_pairs = set(
        zip(
            azure_conv.num_prompt_tokens.tolist(),
            azure_conv.num_output_tokens.tolist(),
            strict=True,
        )
    )
    pairs = set(
        zip(workload.num_prompt_tokens.tolist(), workload.num_output_tokens.tolist(), strict=True)
    )
    assert pairs <= trace_pairs
    assert np.diff(arrivals_of(workload)).mean() == pytest.approx(0.2, rel=0.03)


@pytest.mark.shared
def test_trace_replay_takes_the_first_requests_and_scales_time(azure_conv: Workload) -> None:
    spec = WorkloadSpec(arrival="trace", trace=AZURE_CONV, num_requests=1000, time_scale=10)
    workload = make_workload(spec)
    first = azure_conv.head(1000)
    assert span_of(workload) == pytest.approx(10 * span_of(first))
    np.testing.assert_array_equal(workload.num_output_tokens, first.num_output_tokens)
    with pytest.raises(ValueError, match="has only 19366 requests"):
        make_workload(spec.model_copy(update={"num_requests": 20_000}))


@pytest.mark.shared
def test_mooncake_replay_keeps_hashes_cut_to_capped_prompts() -> None:
    isl = LengthSpec(kind="trace", max_tokens=1024)
    workload = make_workload(WorkloadSpec(arrival="trace", trace=MOONCAKE_CONV, isl=isl))
    assert workload.num_prompt_tokens.max() == 1024
    assert workload.prefix_hashes is not None
    assert max(len(hashes) for hashes in workload.prefix_hashes) == 2


def test_replay_with_other_prompt_lengths_drops_the_hashes(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(MOONCAKE_OK * 3)
    replay = make_workload(WorkloadSpec(arrival="trace", trace=path))
    assert replay.prefix_hashes == ((0, 1),) * 3
    assert arrivals_of(replay).tolist() == [0.0] * 3
    fixed = make_workload(WorkloadSpec(arrival="trace", trace=path, isl=LengthSpec(value=100)))
    assert fixed.prefix_hashes is None  # prompts of another length share nothing
    assert fixed.num_prompt_tokens.tolist() == [100] * 3


def test_a_million_requests_in_well_under_a_second() -> None:
    spec = WorkloadSpec(
        num_requests=1_000_000,
        isl=LengthSpec(kind="lognormal", mean=1000, std=500),
        osl=LengthSpec(kind="normal", mean=200, std=50),
    )
    start = time.perf_counter()
    workload = make_workload(spec)
    assert time.perf_counter() - start < 1.0
    assert workload.num_requests == 1_000_000


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rate": 2}, "Extra inputs are not permitted"),
        ({"isl": {"kind": "fixed", "value": 5, "spread": 1}}, "Extra inputs are not permitted"),
        ({"request_rate": -1}, "greater than 0"),
        ({"request_rate": math.inf}, "finite number"),
        ({"arrival": "gamma", "burstiness": 0}, "greater than 0"),
        ({"arrival": "closed_loop", "concurrency": 0}, "greater than or equal to 1"),
        ({"arrival": "uniform"}, "'burst', 'poisson', 'gamma', 'closed_loop' or 'trace'"),
        ({"isl": 0}, "greater than or equal to 1"),
        ({"isl": {"kind": "uniform", "low": 5}}, "kind='uniform' needs high"),
        ({"isl": {"kind": "uniform", "low": 5, "high": 4}}, "low <= high"),
        ({"isl": {"kind": "fixed", "value": 5, "mean": 3}}, "takes value, not mean"),
        ({"arrival": "burst", "request_rate": 3}, "request_rate=3.0 applies only to arrival"),
        ({"burstiness": 0.5}, "burstiness=0.5 applies only to arrival gamma, not 'poisson'"),
        ({"arrival": "trace"}, "arrival 'trace' needs a trace file"),
        ({"osl": {"kind": "trace"}}, "a length of kind 'trace' needs a trace file"),
        ({"trace": "/no/such/trace.csv"}, "trace file '/no/such/trace.csv' does not exist"),
        ({"trace_format": "azure"}, "needs a trace file"),
    ],
)
def test_spec_rejects_bad_values_naming_them(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        WorkloadSpec.model_validate(fields)


@pytest.mark.shared
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"trace": AZURE_CONV, "isl": 5, "osl": 5}, "is unused"),
        ({"arrival": "trace", "trace": AZURE_CONV, "time_scale": 2, "rate_scale": 2}, "not both"),
        ({"trace": AZURE_CONV, "time_scale": 2}, "time_scale=2.0 applies only to arrival trace"),
        ({"arrival": "trace", "trace": MOONCAKE_CONV, "system_prompt_tokens": 5}, "hash_ids"),
        ({"arrival": "trace", "trace": TRACES / "README.md"}, r"suffix '\.md'"),
    ],
)
def test_spec_rejects_contradictions_around_traces(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        WorkloadSpec.model_validate(fields)
