"""An MTP head's routed experts on a kernel of their own: SGLang 0.5.9 runs the head's experts
on its `auto` backend (Triton for block-FP8 experts without DeepEP) when the target runs
FlashInfer's TRT-LLM MoE (`ServerArgs._handle_speculative_decoding`), so the head's expert
time is the default kernel's over `moe_kernels.RELATIVE_RATE` and the target's is unchanged."""

from __future__ import annotations

import pydantic
import pytest

from llmsizer.instance.speculation import SpeculativeSpec, speculative_cost
from llmsizer.perf import Deployment, StepModel
from llmsizer.perf.batch_shape import decode_batch
from llmsizer.perf.moe_kernels import RELATIVE_RATE
from llmsizer.perf.speculative import mtp_head_model


def target(model: str = "qwen3.5-397b-a17b", tp: int = 4) -> StepModel:
    return StepModel(Deployment.from_names(model, "b200", "fp8", tensor_parallel_size=tp))


@pytest.mark.parametrize(("model", "tp"), [("qwen3.5-397b-a17b", 4), ("deepseek-r1", 8)])
def test_the_heads_experts_run_at_the_kernels_rate(model: str, tp: int) -> None:
    """Only the experts slow down: the head's step grows by at most its expert time over the
    rate (1 / 0.86 - 1 of it), and by something (the experts are read at every batch)."""
    t = target(model, tp)
    same, triton = mtp_head_model(t), mtp_head_model(t, "triton")
    assert triton.deployment.moe_backend == "triton"
    assert same.deployment.moe_backend is None
    for n in (1, 64, 256):
        batch = decode_batch(n, 2048)
        base, slow = same(batch), triton(batch)
        assert base < slow <= base / RELATIVE_RATE["triton"]


def test_the_spec_field_prices_the_draft_and_leaves_the_verify() -> None:
    t = target()
    plain = speculative_cost(SpeculativeSpec(num_speculative_tokens=3, method="mtp"), t, False)
    spec = SpeculativeSpec(num_speculative_tokens=3, method="mtp", draft_moe_backend="triton")
    slow = speculative_cost(spec, t, False)
    batch = decode_batch(256, 2048)
    assert slow.draft(batch) > plain.draft(batch)
    assert slow.target(batch) == plain.target(batch)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"method": "head", "draft_moe_backend": "triton"}, "draft_moe_backend is an MTP head's"),
        ({"method": "mtp", "draft_moe_backend": "cutlass"}, "no price; allowed: triton"),
    ],
)
def test_a_bad_draft_kernel_names_the_field(bad: dict[str, str], match: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=match):
        SpeculativeSpec(num_speculative_tokens=3, **bad)  # type: ignore[arg-type]
