"""A disaggregated decode worker's step cost: a handed-off request's first step is a decode.

The decode pool admits a request with its prompt's KV in place and the prefill worker's
token still to run (`llmsizer.fleet.disagg`): the simulated engine schedules that token as
a prompt chunk of one token after the prompt. The engines run it as a decoding sequence,
in the same step as the requests already decoding:

- TensorRT-LLM's PyTorch backend keeps the request among the generation requests; when its
  KV has arrived, `PyExecutor._prepare_disagg_gen_transmission_complete` sets it to
  `GENERATION_IN_PROGRESS` at `prompt_len` with the context worker's first token and MTP
  draft tokens (`context_phase_params.first_gen_tokens`, `.draft_tokens`), so its first step
  is a generation step with draft tokens (`tensorrt_llm/_torch/pyexecutor/py_executor.py`,
  NVIDIA/TensorRT-LLM; the 1.x versions stored as find_string ids 1891464528 and 736889464),
  and a step of generation requests only replays the CUDA graph of its batch size
  (`CUDAGraphRunner._get_padded_batch`: `batch.can_run_cuda_graph`, no context requests;
  `tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py` @ 7b437aaa7).
- SGLang's decode worker runs no forward pass for it: `ScheduleBatch.process_prebuilt`
  takes the prefill's token as the batch's output and the request joins the running
  decode batch (`python/sglang/srt/disaggregation/decode_schedule_batch_mixin.py`,
  sgl-project/sglang @ 55db869ae).
- vLLM V1 schedules one token for it, and a step whose every request runs one token is a
  uniform decode batch, dispatched to the full decode graphs (`GPUModelRunner`,
  `uniform_decode`: `max_num_scheduled_tokens == uniform_decode_query_len` and
  `num_tokens == max_num_scheduled_tokens * num_reqs`, `vllm/v1/worker/gpu_model_runner.py`).

Priced as a prompt chunk, the step paid a prompt step's eager kernel launches (every layer's,
`perf.launches`: 35 ms a step for DeepSeek-R1 on a GB300 DEP16 decode worker, beside a
graphed verify step of 29 ms) and, speculating, a verify step with prompt work, in every step
that admitted a request: in a decode pool whose clients outnumber its slots, most steps.
`HandoffAdmission` prices each one-token chunk as one more decoding sequence reading its
context, and passes the rest (a preempted request's recompute, in chunks) on as it is; a
recompute chunk of exactly one token is priced as a decode too (rare: not told apart).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmsizer.perf import StepModel
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.sim.batch import Batch, make_batch

DecodeCost = StepModel | SpeculativeStepCost


@dataclass(frozen=True, slots=True)
class HandoffAdmission:
    """A decode worker's step cost (module docstring): `cost`'s price of the batch whose
    one-token prompt chunks are decoding sequences; decode-only steps and runs of them as
    `cost` prices them (the engine's fast paths, to the bit)."""

    cost: DecodeCost

    def __call__(self, batch: Batch) -> float:
        chunks = batch.prefill_chunks
        handed = [c for c in chunks if c.num_new_tokens == 1]
        if not handed:
            return self.cost(batch)
        n = batch.num_decode_seqs + len(handed)
        context = batch.num_decode_context_tokens + sum(c.num_context_tokens for c in handed)
        rest = tuple(c for c in chunks if c.num_new_tokens != 1)
        if not rest:
            return self.cost.decode_step_s(n, context)
        return self.cost(make_batch(rest, n, context))

    def decode_step_s(self, num_decode_seqs: int, num_decode_context_tokens: int) -> float:
        return self.cost.decode_step_s(num_decode_seqs, num_decode_context_tokens)

    def decode_run_s(
        self, num_decode_seqs: int, num_decode_context_tokens: int, num_steps: int
    ) -> np.ndarray:
        return self.cost.decode_run_s(num_decode_seqs, num_decode_context_tokens, num_steps)
