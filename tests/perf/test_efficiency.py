import pytest

from llmsizer.perf.efficiency import EfficiencyFactors, EnginePreset, default_efficiency


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        ("vLLM", EnginePreset.VLLM),
        ("TensorRT-LLM", EnginePreset.TRTLLM),
        ("trt-llm", EnginePreset.TRTLLM),
        ("trtllm", EnginePreset.TRTLLM),
        ("SGLang", EnginePreset.SGLANG),
    ],
)
def test_engine_names_are_lenient(text, engine):
    assert EnginePreset.parse(text) is engine


def test_unknown_engine_lists_allowed():
    with pytest.raises(ValueError, match="allowed: vllm, trtllm, sglang"):
        EnginePreset.parse("tgi")


def test_defaults_are_valid_and_per_engine():
    for engine in EnginePreset:
        factors = default_efficiency(engine)
        assert 0 < factors.gemm_compute_efficiency <= 1
    assert default_efficiency("trtllm").step_overhead_s < default_efficiency("vllm").step_overhead_s


def test_factors_are_validated_and_round_trip():
    factors = EfficiencyFactors()
    assert EfficiencyFactors.from_dict(factors.as_dict()) == factors
    assert factors.replace(gemm_compute_efficiency=0.5).gemm_compute_efficiency == 0.5
    with pytest.raises(ValueError, match="gemm_compute_efficiency"):
        factors.replace(gemm_compute_efficiency=1.5)
    with pytest.raises(ValueError, match="outside its range"):
        factors.replace(gemm_bandwidth_efficiency=0.0)
    with pytest.raises(ValueError, match="unknown efficiency factors"):
        EfficiencyFactors.from_dict({"magic": 1.0})


def test_bounds_cover_every_factor():
    assert set(EfficiencyFactors.bounds()) == set(EfficiencyFactors().resolved().as_dict())


def test_the_moe_hold_adds_to_the_first_token_hold_of_a_moe_model_only():
    """`first_token_hold_s`: D for a dense model, D + M for one with routed experts; M is 0
    by default (the general fits), so nothing changes until a fit sets it."""
    eff = EfficiencyFactors(first_token_delay_s=0.02, moe_first_token_delay_s=0.07)
    assert eff.first_token_hold_s(moe=False) == 0.02
    assert eff.first_token_hold_s(moe=True) == pytest.approx(0.09)
    plain = EfficiencyFactors(first_token_delay_s=0.02)
    assert plain.first_token_hold_s(moe=True) == plain.first_token_hold_s(moe=False) == 0.02
    with pytest.raises(ValueError, match="moe_first_token_delay_s"):
        EfficiencyFactors(moe_first_token_delay_s=-0.01)
