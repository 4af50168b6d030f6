"""Rows whose prompts InferenceX's client and SGLang's server tokenized apart: predicted at
the server's length, not fitted on (`llmsizer.calibrate.aic_clients`)."""

from __future__ import annotations

import csv
import re
from collections import Counter

import pytest

from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.calibrate.aic_clients import (
    SERVER_PROMPT_RATIO,
    first_use_builds,
    prompt_count_unknown,
    prompt_length_unknown,
    prompts_per_client,
    server_prompt_ratio,
)
from tests.conftest import shared_path

B300_DEEPSEEK = {  # run 749's FP8 TP8 8k/1k row at 4 clients, as the calibration file has it
    "id": "dsr1_b300_sglang_fp8_agg_8192x1024_c4",
    "backend": "sglang",
    "backend_version": "0.5.10.post1",
    "silicon_data_source": (
        "db-dump/2026-04-27; config_id=719; silicon_concurrency=4; "
        "measured=2026-04-17T00:00:00.000Z; workflow_run_id=749; "
        "lmsysorg/sglang:v0.5.10.post1-cu130"
    ),
}


def reason(model: str = "deepseek-v3", **changes: str) -> str | None:
    return prompt_length_unknown({**B300_DEEPSEEK, **changes}, model)


def test_deepseek_under_transformers_5_before_the_client_fix_is_not_fitted_on() -> None:
    text = reason()
    assert text is not None
    assert "0.5.10.post1" in text and "deepseek-v3" in text and "#1381" in text
    assert server_prompt_ratio(B300_DEEPSEEK, "deepseek-v3") == SERVER_PROMPT_RATIO == 5.0


def test_the_ratio_is_937s_count() -> None:
    """#937: "a 7000-token prompt on the client becomes ~35000 tokens on the server"."""
    assert round(7000 * SERVER_PROMPT_RATIO) == 35000


@pytest.mark.parametrize(
    ("model", "changes"),
    [
        ("deepseek-v3", {"backend_version": "0.5.9"}),  # transformers 4.57.1
        ("deepseek-r1", {"backend_version": "0.5.8.post1"}),
        ("qwen3.5-397b-a17b", {}),  # Qwen2TokenizerFast: transformers 5 loads it as it is
        ("glm-5", {}),
        ("deepseek-v3", {"backend_version": "nightly-dev-20260216"}),  # no release: unknown
        ("deepseek-v3", {"backend": "vllm"}),  # not SGLang's client fix
        # measured after the client's fix (#1381): the client tokenized as the server
        ("deepseek-v3", {"silicon_data_source": "measured=2026-05-19T00:00:00Z"}),
        ("deepseek-v3", {"silicon_data_source": "db-dump/2026-04-27; config_id=719"}),  # no day
        ("deepseek-v3", {"silicon_data_source": "source_file=/x/aic-auto-gap-analysis/a.csv"}),
    ],
)
def test_every_other_row_is_fitted_on(model: str, changes: dict[str, str]) -> None:
    assert reason(model, **changes) is None
    assert server_prompt_ratio({**B300_DEEPSEEK, **changes}, model) == 1.0  # priced as written


@pytest.mark.shared
def test_the_calibration_rows_not_fitted_on_are_runs_748_and_749() -> None:
    """All 31 rows of SGLang workflow runs 748 / 749 (DeepSeek-V3 on B300, whose 8k TTFT is
    4-6x the B200's at 1-32 clients) and no other row: every other DeepSeek SGLang row ran
    0.5.9 or older."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    cases = [c for c in load_aic(path) if isinstance(c, AicCase)]
    unfitted = [c for c in cases if c.unfitted is not None and "prompt length" in c.unfitted]
    assert Counter((c.backend, c.system, c.model) for c in unfitted) == {
        ("sglang", "b300_sxm", "deepseek-v3"): 31
    }
    with path.open(newline="") as f:
        runs = {r["id"] for r in csv.DictReader(f)
                if re.search(r"workflow_run_id=74[89];", r["silicon_data_source"])}  # fmt: skip
    assert {c.row_id for c in unfitted} == runs
    deepseek_sglang = [c for c in cases if c.backend == "sglang" and "deepseek" in c.model]
    assert len(deepseek_sglang) > 31  # the B200 rows are fitted on


@pytest.mark.shared
def test_runs_748_and_749_are_priced_at_the_servers_prompt_and_reported_at_the_rows() -> None:
    """Those 31 rows' specs price SERVER_PROMPT_RATIO times the row's ISL (the simulator's
    lengths, uniform in [int(0.8 L), L], scale with it) and report the row's; every other
    row's spec prices the row's ISL."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    with path.open(newline="") as f:
        isl = {r["id"]: int(r["isl"]) for r in csv.DictReader(f)}
    cases = [c for c in load_aic(path) if isinstance(c, AicCase)]
    scaled = [c for c in cases if c.spec.isl != isl[c.row_id]]
    assert len(scaled) == 31
    for c in scaled:
        assert c.unfitted is not None and "prompt length" in c.unfitted
        assert c.isl == c.nominal_isl == isl[c.row_id] in (1024, 8192)
        assert c.spec.isl == SERVER_PROMPT_RATIO * isl[c.row_id]
        assert c.spec.length_ratio == 0.8
    assert all(c.isl == c.spec.isl and c.nominal_isl is None for c in cases if c not in scaled)


B200_FP8 = {  # run 146-148's FP8 TP8 1k/1k row at 64 clients, before the client's warm-up
    "id": "2026_04_06_deepseek_r1_b200_sxm_sglang_fp8_agg_1024x1024_c64_tp8_ep8_1",
    "backend": "sglang",
    "backend_version": "",
    "system": "b200_sxm",
    "isl": "1024",
    "osl": "1024",
    "silicon_data_source": (
        "source_file=2026-04-06.csv; model=DeepSeek-R1; silicon_concurrency=64; "
        "measured=2025-11-18T00:00:00.000Z; wip=False"
    ),
}


def per_client(model: str = "deepseek-r1", precision: str = "fp8", **changes: str) -> int | None:
    return prompts_per_client({**B200_FP8, **changes}, model, precision)


def test_the_b200_docker_runner_sent_deepseek_fp8_50c_prompts_20c_at_osl_8192() -> None:
    assert per_client() == 50
    assert per_client("deepseek-v3") == 50  # the db-dump copy of the same run
    assert per_client(osl="8192") == 20


@pytest.mark.parametrize(
    ("model", "precision", "changes"),
    [
        ("deepseek-r1", "fp4", {}),  # nvidia/DeepSeek-R1-0528-FP4-V2: not the launcher's names
        ("qwen3.5-397b-a17b", "fp8", {}),
        ("deepseek-r1", "fp8", {"backend": "trtllm"}),  # runner b200-trt: slurm nodes, 10c
        ("deepseek-r1", "fp8", {"system": "b300_sxm"}),
        # slurm nodes in the b200 label from ea181ae6d: the launcher not known
        ("deepseek-r1", "fp8", {"silicon_data_source": "measured=2025-12-31T15:18:00Z"}),
        ("deepseek-r1", "fp8", {"silicon_data_source": "measured=2026-01-22T00:00:00Z"}),
        ("deepseek-r1", "fp8", {"silicon_data_source": "source_file=/x/aic-auto-gap-analysis/a"}),
    ],
)
def test_every_other_row_keeps_its_scripts_prompt_count(
    model: str, precision: str, changes: dict[str, str]
) -> None:
    assert per_client(model, precision, **changes) is None


@pytest.mark.parametrize(
    ("concurrency", "isl", "chunk", "builds"),
    [(64, "1024", 32768, 1), (32, "1024", 32768, 0), (4, "8192", 32768, 0), (8, "8192", 32768, 1),
     (32, "1024", 16384, 1), (16, "1024", 16384, 0), (4, "8192", 16384, 1)],
)  # fmt: skip
def test_a_cold_first_wave_over_one_prompt_step_builds_once(
    concurrency: int, isl: str, chunk: int, builds: int
) -> None:
    assert first_use_builds({**B200_FP8, "isl": isl}, "deepseek-r1", concurrency, chunk) == builds


@pytest.mark.parametrize(
    ("model", "changes"),
    [
        ("deepseek-r1", {"silicon_data_source": "measured=2026-01-21T18:00:00Z"}),  # warm-up
        ("deepseek-r1", {"backend": "vllm"}),
        ("deepseek-r1", {"system": "b300_sxm"}),
        # the v0.5.3rc1-cu129-b200 image, before d8fe8f73e: another FlashInfer, no stall
        ("deepseek-r1", {"silicon_data_source": "measured=2025-11-02T00:00:00.000Z"}),
        ("glm-5", {}),  # not the trtllm_mla backend's MLA prefix path
    ],
)
def test_a_warmed_up_or_other_launch_builds_nothing(model: str, changes: dict[str, str]) -> None:
    assert first_use_builds({**B200_FP8, **changes}, model, 64, 32768) == 0


@pytest.mark.shared
def test_the_calibration_rows_without_a_warm_up() -> None:
    """The 103 SGLang B200 DeepSeek rows before the warm-up: the 30 FP8 rows of 2025-11-18
    (runs 146-148 and their db-dump copies) ran 50c or 20c prompts; 61 rows' first waves
    split a prompt from the 0.5.5 image on (42 NVFP4, 13 FP8, the 0.5.6 row of 2025-12-31
    among them; not the 0.5.3rc1 run's 6: section 41)."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    cases = [c for c in load_aic(path) if isinstance(c, AicCase)]
    by_count = Counter(
        (c.spec.precision, c.spec.num_requests // (c.spec.concurrency or 1))
        for c in cases
        if c.backend == "sglang" and c.system == "b200_sxm" and "deepseek" in c.model
    )
    assert by_count[("fp8_block", 50)] == 20 and by_count[("fp8_block", 20)] == 10  # DeepSeek
    cold = [c for c in cases if c.first_use_builds]
    assert {(c.backend, c.system) for c in cold} == {("sglang", "b200_sxm")}
    assert Counter(c.spec.precision for c in cold) == {"fp4": 42, "fp8_block": 13}
    assert all(c.spec.concurrency * c.spec.isl > c.spec.engine.max_num_batched_tokens
               for c in cold)  # fmt: skip


def test_a_run_either_launcher_could_have_run_is_not_fitted_on() -> None:
    """From ea181ae6d to the warm-up the `b200` label held docker (50c) and slurm (10c)
    nodes: a DeepSeek FP8 run's prompt count, and so its mean TTFT, is not known."""
    row = {**B200_FP8, "silicon_data_source": "measured=2025-12-31T15:18:00Z"}
    text = prompt_count_unknown(row, "deepseek-r1", "fp8")
    assert text is not None and "2025-12-31" in text and "50c" in text
    assert prompt_count_unknown(B200_FP8, "deepseek-r1", "fp8") is None  # docker: 50c
    assert prompt_count_unknown(row, "deepseek-r1", "fp4") is None  # 10c either way
    late = {**row, "silicon_data_source": "measured=2026-01-22T00:00:00Z"}
    assert prompt_count_unknown(late, "deepseek-r1", "fp8") is None  # after the warm-up: 10c


@pytest.mark.shared
def test_the_one_calibration_row_of_unknown_prompt_count() -> None:
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    cases = [c for c in load_aic(path) if isinstance(c, AicCase)]
    unknown = [c.row_id for c in cases if c.unfitted and "prompt count" in c.unfitted]
    run = "2026_03_25_deepseek_r1_b200_sxm_sglang_fp8_agg_8192x1024_c64_tp8_0_ep1_0_1288"
    assert unknown == [run]  # the 0.5.6 run of 2025-12-31 15:18 UTC
