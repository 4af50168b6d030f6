"""Rows whose prompts InferenceX's client and SGLang's server tokenized apart: predicted,
not fitted on (`llmsizer.calibrate.aic_clients`)."""

from __future__ import annotations

import csv
import re
from collections import Counter

import pytest

from llmsizer.calibrate.aic import AicCase, load_aic
from llmsizer.calibrate.aic_clients import prompt_length_unknown
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


@pytest.mark.shared
def test_the_calibration_rows_not_fitted_on_are_runs_748_and_749() -> None:
    """All 31 rows of SGLang workflow runs 748 / 749 (DeepSeek-V3 on B300, whose 8k TTFT is
    4-6x the B200's at 1-32 clients) and no other row: every other DeepSeek SGLang row ran
    0.5.9 or older."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    cases = [c for c in load_aic(path) if isinstance(c, AicCase)]
    unfitted = [c for c in cases if c.unfitted is not None]
    assert Counter((c.backend, c.system, c.model) for c in unfitted) == {
        ("sglang", "b300_sxm", "deepseek-v3"): 31
    }
    with path.open(newline="") as f:
        runs = {r["id"] for r in csv.DictReader(f)
                if re.search(r"workflow_run_id=74[89];", r["silicon_data_source"])}  # fmt: skip
    assert {c.row_id for c in unfitted} == runs
    deepseek_sglang = [c for c in cases if c.backend == "sglang" and "deepseek" in c.model]
    assert len(deepseek_sglang) > 31  # the B200 rows are fitted on
