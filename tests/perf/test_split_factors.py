"""Split factors: the MoE grouped GEMM and decode attention at fractions of peak of their own,
each taking its parent's value until set (`EfficiencyFactors`, `SPLIT_FROM`)."""

import pytest

from llmsizer.perf.batch_shape import aggregate, decode_batch, prefill_batch
from llmsizer.perf.calibrated import parse_calibration
from llmsizer.perf.efficiency import SPLIT_FROM, EfficiencyFactors
from llmsizer.perf.step import StepTerms, step_terms
from tests.perf.conftest import make_step_model

BASE = EfficiencyFactors()


def terms(model: str, eff: EfficiencyFactors, batch, **kwargs) -> StepTerms:
    c = make_step_model(model, "h100-sxm", "fp8", eff, **kwargs).constants
    return StepTerms._make(step_terms(c, aggregate(batch, c.window)))


def test_an_unset_split_factor_is_its_parents_value():
    eff = EfficiencyFactors(gemm_bandwidth_efficiency=0.4, attention_compute_efficiency=0.3)
    for child, parent in SPLIT_FROM.items():
        assert getattr(eff, child) is None
        assert eff.value(child) == getattr(eff, parent)
    resolved = eff.resolved()
    assert resolved.experts_bandwidth_efficiency == 0.4
    assert resolved.decode_attention_compute_efficiency == 0.3
    # unset children are left out of the dict and come back unset
    assert "experts_bandwidth_efficiency" not in eff.as_dict()
    assert EfficiencyFactors.from_dict(eff.as_dict()) == eff
    assert EfficiencyFactors.from_dict(resolved.as_dict()) == resolved


def test_a_split_factor_is_validated_like_any_other():
    with pytest.raises(ValueError, match="experts_bandwidth_efficiency"):
        BASE.replace(experts_bandwidth_efficiency=1.5)
    with pytest.raises(ValueError, match="decode_attention_compute_efficiency"):
        BASE.replace(decode_attention_compute_efficiency=0.0)


def test_unset_split_factors_price_every_step_as_their_parents_do():
    """A file fitted before the split prices as it did: children unset == set to parents."""
    eff = EfficiencyFactors(gemm_compute_efficiency=0.45, gemm_bandwidth_efficiency=0.65)
    for batch in (decode_batch(32, 32 * 2000), prefill_batch(1, 3000)):
        unset = make_step_model("mixtral-8x7b", "h100-sxm", "fp8", eff, tensor_parallel_size=2)
        set_ = make_step_model(
            "mixtral-8x7b", "h100-sxm", "fp8", eff.resolved(), tensor_parallel_size=2
        )
        assert unset(batch) == set_(batch)


def test_the_experts_factors_price_the_experts_only():
    batch = decode_batch(64, 64 * 1000)
    slow = BASE.replace(experts_bandwidth_efficiency=BASE.gemm_bandwidth_efficiency / 2)
    base_t, slow_t = (terms("mixtral-8x7b", e, batch) for e in (BASE, slow))
    assert slow_t.experts_memory_s == pytest.approx(2 * base_t.experts_memory_s)
    assert slow_t.linear_memory_s == base_t.linear_memory_s
    assert slow_t.lm_head_memory_s == base_t.lm_head_memory_s
    # a dense model has no experts: the factor changes nothing
    dense = make_step_model("llama-3.1-8b", "h100-sxm", "fp8", slow)(batch)
    assert dense == make_step_model("llama-3.1-8b", "h100-sxm", "fp8", BASE)(batch)


def test_the_decode_attention_factor_prices_decode_attention_only():
    fast = BASE.replace(decode_attention_compute_efficiency=2 * BASE.attention_compute_efficiency)
    decode = decode_batch(16, 16 * 4000)
    prefill = prefill_batch(1, 4000)
    base_d, fast_d = (terms("deepseek-v3", e, decode, tensor_parallel_size=8) for e in (BASE, fast))
    assert fast_d.decode_attention_compute_s == pytest.approx(base_d.decode_attention_compute_s / 2)
    base_p, fast_p = (
        terms("deepseek-v3", e, prefill, tensor_parallel_size=8) for e in (BASE, fast)
    )
    assert fast_p.prefill_attention_compute_s == base_p.prefill_attention_compute_s


def test_a_calibration_file_without_split_factors_keeps_them_on_their_parents():
    data = {
        "kind": "efficiency_factors",
        "engine": "vllm",
        "factors": {"gemm_bandwidth_efficiency": 0.55, "attention_compute_efficiency": 0.2},
    }
    eff = parse_calibration(data).efficiency()
    assert eff.value("experts_bandwidth_efficiency") == 0.55
    assert eff.value("decode_attention_compute_efficiency") == 0.2
    data["factors"] |= {"experts_bandwidth_efficiency": 0.35}
    assert parse_calibration(data).efficiency().value("experts_bandwidth_efficiency") == 0.35


def test_the_factor_table_shows_an_unset_split_factor_as_its_parent():
    from llmsizer.cli.catalog import factor_source

    data = {"kind": "efficiency_factors", "factors": {"gemm_bandwidth_efficiency": 0.55}}
    cal = parse_calibration(data)
    assert factor_source(cal, "experts_bandwidth_efficiency") == "as gemm_bandwidth_efficiency"
    data["factors"] |= {"experts_bandwidth_efficiency": 0.35}
    assert factor_source(parse_calibration(data), "experts_bandwidth_efficiency") != (
        "as gemm_bandwidth_efficiency"
    )
