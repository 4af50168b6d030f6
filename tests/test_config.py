"""Scenario files: strict validation with errors that name the key, the value, the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmsizer.config import ConfigError, Scenario, load_scenario


def test_defaults_are_valid_and_documented() -> None:
    s = load_scenario(None)
    assert s.engine.batching == "continuous"
    for model in (Scenario, type(s.engine), type(s.workload), type(s.step_cost)):
        for name, field in model.model_fields.items():
            assert field.description or name in {"kind"}, f"{model.__name__}.{name} undocumented"


def test_flags_override_the_file(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("engine: {max_num_seqs: 8, batching: static}\nworkload: {arrival: burst}\n")
    s = load_scenario(f, {"engine": {"max_num_seqs": 4}})
    assert s.engine.max_num_seqs == 4 and s.engine.batching == "static"


def test_engine_preset_fills_only_unset_fields() -> None:
    s = load_scenario(None, {"engine": {"engine": "trtllm", "max_num_seqs": 64}})
    assert s.engine.max_num_seqs == 64
    assert s.engine.kv_reservation == "full" and not s.engine.enable_chunked_prefill


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"engine": {"max_num_seqs": -4}}, "engine.max_num_seqs = -4: Input should be greater"),
        ({"engine": {"bogus": 1}}, "engine.bogus: unknown key"),
        ({"engine": {"batching": "magic"}}, "engine.batching = 'magic': Input should be 'static'"),
        ({"workload": {"request_rate": 0}}, "workload.request_rate = 0"),
        ({"step_cost": {"kind": "fixed", "step_time_ms": -1}}, "step_cost.fixed.step_time_ms"),
        ({"slo": {"ttft_ms": -5}}, "slo.ttft_ms = -5"),
        (
            {"engine": {"max_num_seqs": 512, "max_num_batched_tokens": 256}},
            "max_num_batched_tokens (256) must be >= max_num_seqs (512)",
        ),
    ],
)
def test_bad_values_are_named(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_scenario(None, overrides)  # type: ignore[arg-type]
    assert message in str(e.value)


def test_bad_files_get_one_clear_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read scenario file"):
        load_scenario(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("engine: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_scenario(bad)
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_scenario(bad)
