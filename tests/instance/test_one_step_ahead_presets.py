"""The engine presets schedule one step ahead where their engines do by default, and a
deployment's features turn it off where they turn it off in the engine (`llmsizer.sim.config`,
`llmsizer.instance.deployment.one_step_ahead`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llmsizer.instance import DeploymentSpec, PredictSpec, predict
from llmsizer.sim import Engine, EngineConfig, FixedTicks, config
from llmsizer.workload import Workload

BASE = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "precision": "fp8"}
DRAFT = {"num_speculative_tokens": 3, "method": "draft_model", "draft_model": "llama-3.1-8b"}


def overlap(**fields: Any) -> bool:
    return DeploymentSpec.model_validate({**BASE, **fields}).engine.overlap_scheduler


def test_the_preset_notes_name_each_engines_default_and_its_source() -> None:
    """vLLM: async scheduling None resolved on since 0.14.0 (PR 27614), off on the CPU (PR
    31525); SGLang: `disable_overlap_schedule` False, speculation only with spec v2."""
    notes = config.__doc__ or ""
    for source in ("vllm-project/vllm#27614", "0.14.0", "vllm#31525", "disable_overlap_schedule"):
        assert source in notes
    assert "SGLANG_ENABLE_SPEC_V2" in notes
    assert all(config.PRESETS[e]["overlap_scheduler"] for e in ("vllm", "sglang", "trtllm"))


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"engine": "vllm"}, True),
        ({}, True),  # the default engine is vLLM's preset
        ({"engine": "vllm", "pp": 2}, True),  # vLLM 0.14 only (vllm#32359)
        ({"engine": "vllm", "speculative": {"num_speculative_tokens": 3}}, True),  # EAGLE / MTP
        ({"engine": "vllm", "speculative": DRAFT}, False),  # not EAGLE/MTP: off by default
        ({"engine": "sglang"}, True),
        ({"engine": "sglang", "pipeline_parallel_size": 2}, False),
        ({"engine": "sglang", "speculative": {"num_speculative_tokens": 2}}, False),
        ({"engine": "trtllm"}, True),
        ({"engine": "trtllm", "pp": 2}, False),  # `_executor_loop_pp`, no overlap loop
        ({"engine": {"engine": "sglang", "max_num_seqs": 64}, "pp": 2}, False),  # YAML form
    ],
)
def test_a_feature_turns_it_off_where_it_does_in_the_engine(
    fields: dict[str, Any], expected: bool
) -> None:
    assert overlap(**fields) is expected


@pytest.mark.parametrize("given", [True, False])
def test_a_setting_given_wins_over_the_features(given: bool) -> None:
    assert overlap(engine="sglang", pp=2, overlap_scheduler=given) is given
    assert overlap(engine={"engine": "vllm", "overlap_scheduler": given}) is given
    assert overlap(engine=EngineConfig(engine="sglang", overlap_scheduler=given), pp=2) is given


def test_plan_candidates_resolve_it_per_configuration() -> None:
    """A CSV row or a plan candidate (flat keys, the engine by name) gets the same answer."""
    row = {**BASE, "engine": "sglang", "tp": 1, "pp": 2, "isl": 128, "osl": 8, "concurrency": 1}
    assert PredictSpec.model_validate(row).engine.overlap_scheduler is False
    assert PredictSpec.model_validate({**row, "pp": 1}).engine.overlap_scheduler is True


def _ttft(workload: Workload, ahead: bool, tick_s: float) -> np.ndarray:
    cfg = EngineConfig(engine="vllm", max_num_seqs=256, overlap_scheduler=ahead)
    records = Engine(cfg, FixedTicks(tick_s)).run(workload).records
    return np.asarray(records.first_token_s() - records.arrival_s)


def test_an_arrival_waits_at_most_one_more_step_before_its_prompt_runs() -> None:
    """Every step 10 ms, capacity never binding: a request arriving while step n runs has its
    prompt in step n + 1 when each step is scheduled after the last one ends (TTFT <= two
    steps), in step n + 2 one step ahead (<= three); on an idle engine at once (one step).
    The extra step is seen (some TTFT above two steps) and never more than one."""
    tick = 0.010
    rng = np.random.default_rng(7)
    n = 400
    arrivals = np.cumsum(rng.exponential(0.012, n))  # busy most of the time, idle at times
    workload = Workload(
        num_prompt_tokens=np.full(n, 64, dtype=np.int64),
        num_output_tokens=rng.integers(2, 12, n).astype(np.int64),
        arrival_s=arrivals,
    )
    plain, ahead = _ttft(workload, False, tick), _ttft(workload, True, tick)
    assert plain.min() == pytest.approx(tick) and plain.max() <= 2 * tick + 1e-9
    assert ahead.min() == pytest.approx(tick) and ahead.max() <= 3 * tick + 1e-9
    assert (ahead > 2 * tick + 1e-9).sum() > n // 4


def _mean_ttft_ms(load: dict[str, Any], ahead: bool) -> float:
    spec = {**BASE, "engine": "vllm", "isl": 512, "osl": 64, **load, "overlap_scheduler": ahead}
    return predict(PredictSpec.model_validate(spec)).summary["mean_ttft_ms"]


@pytest.mark.parametrize(
    "load",
    [
        {"concurrency": 1, "num_requests": 8},
        {"request_rate": 1.0, "num_requests": 60, "seed": 3, "max_num_seqs": 1},
    ],
)
def test_batch_one_ttft_is_the_same_one_step_ahead(load: dict[str, Any]) -> None:
    """Llama 3.1 8B on an H100, priced by the GPU model, one request at a time: each prompt
    reaches an idle engine (a closed loop of one client; a queue behind a single slot, whose
    request finishes before the next is admitted), scheduled at once either way."""
    assert _mean_ttft_ms(load, True) == pytest.approx(_mean_ttft_ms(load, False), rel=1e-12)


def test_an_arrival_finding_a_request_running_waits_one_step_more_never_less() -> None:
    """Poisson arrivals at 1 req/s: a prompt arriving while another request decodes joins
    one step later; TTFT rises, by less than a step with a prompt (the mean TTFT itself)."""
    load = {"request_rate": 1.0, "num_requests": 60, "seed": 3}
    off, on = _mean_ttft_ms(load, False), _mean_ttft_ms(load, True)
    assert off < on < 2 * off


def running_cap(**fields: Any) -> int:
    return DeploymentSpec.model_validate({**BASE, **fields}).engine.max_num_seqs


SPEC = {"num_speculative_tokens": 2}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"engine": "sglang"}, 1024),  # left to memory: the preset's
        ({"engine": "sglang", "speculative": SPEC}, 48),  # `_handle_speculative_decoding`
        ({"engine": "sglang", "speculative": DRAFT}, 48),  # STANDALONE too
        ({"engine": "sglang", "speculative": SPEC, "dp": 4}, 12),  # 48 over the ranks
        ({"engine": "sglang", "speculative": SPEC, "max_num_seqs": 256}, 256),  # given wins
        ({"engine": {"engine": "sglang", "max_num_seqs": 96}, "speculative": SPEC}, 96),
        ({"engine": "vllm", "speculative": SPEC}, 1024),  # vLLM keeps its cap
        ({"engine": "trtllm", "speculative": SPEC}, 2048),
    ],
)
def test_speculation_caps_sglangs_running_requests_as_its_server_args_do(
    fields: dict[str, Any], expected: int
) -> None:
    """SGLang 0.5.9 resets an unset `max_running_requests` to 48 under EAGLE / EAGLE3 /
    STANDALONE (`deployment.SGLANG_SPECULATIVE_MAX_RUNNING`); nothing else changes it."""
    assert running_cap(**fields) == expected
