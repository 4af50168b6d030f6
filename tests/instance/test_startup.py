"""A new instance's start-up: its weights over the stated storage bandwidth."""

from __future__ import annotations

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.instance.instance import make_instance
from llmsizer.instance.startup import load_time_s


def test_load_time_is_every_gpus_weights_over_the_storage_bandwidth() -> None:
    spec = DeploymentSpec.model_validate(
        {"model": "llama-3.1-70b", "gpu": "h100-sxm", "precision": "fp8", "tp": 2}
    )
    inst = make_instance(spec)
    seconds = load_time_s(inst, 2e9)
    # ~70.6 B parameters at one byte each (FP8), plus 16-bit embeddings and norms
    assert 70e9 / 2e9 < seconds < 75e9 / 2e9
    assert load_time_s(inst, 4e9) == pytest.approx(seconds / 2)
    with pytest.raises(ValueError, match="storage bandwidth must be > 0"):
        load_time_s(inst, 0.0)
