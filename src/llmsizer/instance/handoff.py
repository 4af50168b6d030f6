"""A disaggregated decode worker's step cost: a handed-off request's first step is a decode.

The decode pool admits a request with its prompt's KV in place and the prefill worker's
token still to run (`llmsizer.fleet.disagg`); the simulated engine schedules that token as
a one-token prompt chunk. The engines run it as a decoding sequence, beside the others:

- TensorRT-LLM's PyTorch backend keeps it among the generation requests:
  `PyExecutor._prepare_disagg_gen_transmission_complete` sets it `GENERATION_IN_PROGRESS`
  at `prompt_len` with the context worker's token and MTP draft tokens
  (`context_phase_params.first_gen_tokens`, `.draft_tokens`; NVIDIA/TensorRT-LLM
  `tensorrt_llm/_torch/pyexecutor/py_executor.py`, 1.x versions stored as find_string ids
  1891464528, 736889464), and a step without context requests replays its batch's CUDA
  graph (`CUDAGraphRunner._get_padded_batch`, `batch.can_run_cuda_graph`;
  `tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py` @ 7b437aaa7).
- SGLang runs no forward pass for it: `ScheduleBatch.process_prebuilt` takes the prefill's
  token as the output and the request joins the running decode batch (sgl-project/sglang
  `python/sglang/srt/disaggregation/decode_schedule_batch_mixin.py` @ 55db869ae).
- vLLM V1 dispatches a step whose every request runs one token to its full decode graphs
  (`GPUModelRunner`: `uniform_decode`, `vllm/v1/worker/gpu_model_runner.py`).

Priced as prompt work, every step that admitted a request (most steps of a pool with more
clients than slots) paid a prompt step's eager launches of every layer (`perf.launches`:
35 ms for DeepSeek-R1 on a GB300 DEP16 worker, beside a 29 ms graphed verify step) and,
speculating, a verify step with prompt work. `HandoffAdmission` prices each one-token chunk
as one more decoding sequence reading its context and passes other chunks (a preempted
request's recompute) on as prompt work; a recompute chunk of one token is not told apart.
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
