"""Qwen3.5's linear-attention state dtype as the SGLang rows' launches set it
(`llmsizer.calibrate.aic_launch.sglang_state_dtype`): `--mamba-ssm-dtype bfloat16` in every
InferenceX FP8 / NVFP4 script from its first commit, never in the BF16 scripts nor in AIC's
own launches; and what the flag does to the priced state."""

from __future__ import annotations

import csv
from typing import Any

import pytest

from llmsizer.calibrate.aic import AicCase, map_aic_row
from llmsizer.instance import DeploymentSpec
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.step import StepModel
from llmsizer.units import GB
from tests.calibrate.test_aic_launch_sglang import sglang as sglang_launch
from tests.conftest import shared_path

QWEN = "qwen3.5-397b-a17b"


def sglang(**row: Any) -> dict[str, Any]:
    """`test_aic_launch_sglang.sglang`'s Qwen3.5 FP8 B200 launch, measured after the FP8
    script's first day."""
    return sglang_launch(**({"measured": "2026-03-20T23:59:59Z"} | row))


@pytest.mark.parametrize(
    ("precision", "measured", "dtype"),
    [
        ("fp8", "2026-03-02T23:59:59Z", None),  # the day before efd49e50b: no FP8 script yet
        ("fp8", "2026-03-03T00:00:00Z", "bfloat16"),  # the rows' first day (efd49e50b)
        ("fp8", "", "bfloat16"),  # undated: the only scripts there are set the flag
        ("fp4", "2026-04-07T23:59:59Z", None),  # before 48d35c480
        ("fp4", "2026-04-08T00:00:00Z", "bfloat16"),
        ("bf16", "2026-04-18T00:00:00Z", None),  # qwen3.5_bf16_b{2,3}00.sh never set it
    ],
)
def test_the_inferencex_scripts_ran_a_bfloat16_state_from_their_first_day(
    precision: str, measured: str, dtype: str | None
) -> None:
    got = sglang(precision=precision, measured=measured)
    assert got.get("mamba_ssm_cache_dtype") == dtype


@pytest.mark.parametrize("gpu_bytes", [180 * GB, 288 * GB])
def test_b300_scripts_and_older_b300_rows_set_it_too(gpu_bytes: float) -> None:
    for version in ("0.5.9", "0.5.10.post1"):
        got = sglang(gpu_memory_bytes=gpu_bytes, version=version, measured="2026-04-18")
        assert got["mamba_ssm_cache_dtype"] == "bfloat16"


@pytest.mark.parametrize("model", [QWEN, "deepseek-r1", "glm-5"])
def test_the_sglang_scripts_turn_the_radix_cache_off(model: str) -> None:
    """`--disable-radix-cache` in every InferenceX SGLang script; AIC's launches keep it."""
    assert sglang(model=model)["enable_prefix_caching"] is False
    assert "enable_prefix_caching" not in sglang(model=model, inferencex=False)


def test_aic_launches_and_other_engines_and_models_keep_the_config() -> None:
    assert "mamba_ssm_cache_dtype" not in sglang(inferencex=False)
    assert "mamba_ssm_cache_dtype" not in sglang(model="deepseek-r1")
    assert "mamba_ssm_cache_dtype" not in sglang(engine="vllm")


@pytest.mark.shared
def test_the_calibration_rows_map_as_their_scripts_ran() -> None:
    """Every SGLang Qwen3.5 row: InferenceX FP8 / NVFP4 bfloat16 (all measured from
    2026-03-03 on), InferenceX BF16 and AIC's gap rows the config's float32."""
    seen: dict[tuple[str, bool], set[str | None]] = {}
    with shared_path("calibration", "aic_silicon_calibration.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            if row["backend"] != "sglang" or "Qwen3.5" not in row["model_path"]:
                continue
            case = map_aic_row(row, check_fit=False)
            assert isinstance(case, AicCase)
            gap = case.spec.length_ratio is None
            key = (case.spec.precision, gap)
            seen.setdefault(key, set()).add(case.spec.mamba_ssm_cache_dtype)
    assert seen == {
        ("fp8", False): {"bfloat16"},
        ("fp4", False): {"bfloat16"},
        ("bf16", False): {None},
        ("fp8", True): {None},
        ("bf16", True): {None},
    }


def test_the_spec_takes_the_engine_flags_names_and_checks_the_value() -> None:
    base = {"model": QWEN, "gpu": "b200", "precision": "fp8", "tp": 4, "engine": "sglang"}
    sglang_flag = DeploymentSpec.model_validate(base | {"mamba_ssm_dtype": "bfloat16"})
    assert sglang_flag.mamba_ssm_cache_dtype == "bfloat16"
    auto = DeploymentSpec.model_validate(base | {"mamba_ssm_cache_dtype": "auto"})
    assert auto.mamba_ssm_cache_dtype is None
    with pytest.raises(ValueError, match=r"mamba_ssm_dtype 'fp8'; known: .*bfloat16"):
        DeploymentSpec.model_validate(base | {"mamba_ssm_cache_dtype": "fp8"})
    with pytest.raises(ValueError, match="known"):
        Deployment.from_names(QWEN, "b200", "fp8", mamba_ssm_cache_dtype="int8")


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_a_bfloat16_state_halves_the_recurrent_bytes_moved(tp: int) -> None:
    """Theory: per sequence and layer the state is 64 x 128 x 128 recurrent values (float32
    4 B, bfloat16 2 B) plus the conv taps (bf16, unchanged); read and written once a step."""
    default = Deployment.from_names(QWEN, "b200", "fp8", tensor_parallel_size=tp)
    half = Deployment.from_names(
        QWEN, "b200", "fp8", tensor_parallel_size=tp, mamba_ssm_cache_dtype="bfloat16"
    )
    fp32 = Deployment.from_names(
        QWEN, "b200", "fp8", tensor_parallel_size=tp, mamba_ssm_cache_dtype="float32"
    )
    moved = [StepModel(d).constants.linear_state_bytes_per_seq for d in (default, half, fp32)]
    recurrent = 45 * 64 * 128 * 128  # values over the 45 Gated DeltaNet layers
    assert moved[0] == moved[2]  # the config says float32
    assert moved[0] - moved[1] == pytest.approx(2 * recurrent * 2 / tp)  # 2 B saved, r + w
    conv = 45 * (2 * 16 * 128 + 64 * 128) * 3 * 2  # bf16 conv taps, kernel 4
    assert moved[1] == pytest.approx(2 * (recurrent * 2 + conv) / tp)
