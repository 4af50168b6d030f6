"""The course's rule-of-thumb figures, predicted from first principles.

Course (introduction slides, "Rules of Thumb for Sizing"): H100 SXM, Llama 70B, batch size 8,
TP 4, FP16: an input of 3500 tokens takes about 2.6 s, and each generated token 26.8 ms, so
the prompt costs as much as ~99 generated tokens.

Assumptions, since the slide states no more:
- "Llama 70B" is Llama 2 70B (the course's 4K-context era; 3500 in + 500 out fits); Llama 3
  70B is checked too (same layers, larger vocabulary);
- FP16 weights, activations and KV cache; 4 H100 SXM on NVLink (one DGX H100 half);
- TensorRT-LLM, with this project's priors (`default_efficiency`) and with the factors
  fitted on the calibration set (`calibrated_efficiency`): both must hold;
- the 8 prompts are prefilled together in one step (static batching, as in the course's
  notebook), so 2.6 s is one step over 8 x 3500 tokens;
- a generated token is one decode step of 8 sequences mid-answer: 3500 + 250 tokens of
  context each.
Tolerance: 25 % (the project's bar for course figures).
"""

import pytest

from llmsizer.perf.batch_shape import decode_batch, prefill_batch
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import default_efficiency
from llmsizer.perf.step import StepModel

COURSE_PREFILL_S = 2.6
COURSE_TPOT_S = 26.8e-3


@pytest.mark.parametrize("factors", [default_efficiency, calibrated_efficiency])
@pytest.mark.parametrize("model", ["llama-2-70b", "llama-3-70b"])
def test_course_prefill_and_tpot_within_25_percent(model, factors):
    deployment = Deployment.from_names(model, "h100-sxm", "fp16", tensor_parallel_size=4)
    step = StepModel(deployment, factors("trtllm"))
    prefill_s = step(prefill_batch(8, 3500))
    tpot_s = step(decode_batch(8, 3500 + 250))
    assert prefill_s == pytest.approx(COURSE_PREFILL_S, rel=0.25)
    assert tpot_s == pytest.approx(COURSE_TPOT_S, rel=0.25)
    # "input of 3500 tokens takes the same time as generating 99 tokens"
    assert prefill_s / tpot_s == pytest.approx(COURSE_PREFILL_S / COURSE_TPOT_S, rel=0.25)
