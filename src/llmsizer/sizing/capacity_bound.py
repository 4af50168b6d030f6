"""`capacity_bound`: an upper bound on a probe's capacity from its step model alone, before
its capacity run (no simulation), for a branch and bound to drop a configuration that cannot
beat the best found even at that bound.

The capacity run (`Probe.capacity`) serves its n requests (`Probe.capacity_workload`), all
arriving at once, and divides n by the time the last one finishes. Every request i of
`osl_i` output tokens is a decoding sequence in `osl_i - 1` steps (its first token comes
from its prefill), and a decoding sequence holds the KV of at least its prompt and one
token, so no step decodes more than

    D = min(max_num_seqs, num_gpu_blocks // ceil((shortest prompt + 1) / block_size))

sequences. A step costs at least its decode part alone at the shortest context (a step
model's cost never falls as work is added: more tokens, more context, a prefill chunk), and
a step of d sequences delivers d decode tokens, so every decode token costs at least

    m = min over 1 <= d <= D of cost(d sequences, d x (shortest prompt + 1) context) / d

and the run lasts at least m x sum_i (osl_i - 1). Preemption and prefill only add time.

That counts decode tokens only: where prompts dominate it is 3-9x the run's time. A second
floor counts all the work (`_work_floor_s`): each step's time is a sum of parts, each part
at least its compute time, and the compute times, the elementwise traffic and the
collectives' link times are linear in the step's tokens, causal pairs and keys, so over the
run they add up to those of the run's totals: sum_i p_i prompt tokens, sum_i p_i (p_i + 1)
/ 2 pairs (however the prompt is chunked), the decode tokens and at least p_i keys for each.
The per-step costs (host overhead, layer launches, collective latencies) come once a step,
and the run takes at least max(longest osl, decode tokens / D, prompt tokens /
max_num_batched_tokens) steps (continuous batching fills a step's prompt work within the
token budget). The run lasts at least the larger floor: capacity <= n / that (times the
pipeline's depth, as `Probe.capacity`). No work floor with attention data parallelism (the
busiest rank's share does not add up).

A speculating probe simulates verify steps, not tokens (`instance.speculation`): the same
argument holds over its capacity run's requests in steps (`Probe.in_steps`: the acceptance
draws it simulates, a request of `osl` tokens decoding in
ceil((osl - 1) / E(a)) steps, E(a) <= k + 1), with its KV blocks (scaled for the drafter)
and its step cost (the drafter's passes and the verification of k + 1 tokens a sequence).
"""

from __future__ import annotations

import math

import numpy as np

from llmsizer.perf import StepModel
from llmsizer.perf.batch_shape import Aggregates
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.perf.step import StepTerms, step_terms
from llmsizer.perf.verify_step import verify_aggregates
from llmsizer.sim import EngineConfig, StepCost
from llmsizer.sim.batch import decode_step_cost
from llmsizer.sizing.probe import Probe
from llmsizer.sizing.rate_search import GRID


def highest_rate(probe: Probe) -> float:
    """No rate search of `probe` can return a rate above this (the grid's top of the bound;
    infinite without one), known before its capacity run."""
    bound = capacity_bound(probe)
    return math.inf if bound is None else GRID[0] * bound


def capacity_bound(probe: Probe) -> float | None:
    """Req/s per instance that `probe.capacity()` cannot exceed (module docstring), or
    `None` when there is no bound (outputs of one token)."""
    workload, cfg = probe.capacity_workload(), probe.engine.config
    if probe.speculative is not None:  # the capacity run's requests in verify steps
        run = probe.in_steps(workload)
        workload, cfg = run.workload, run.engine.config
    prompt, output = workload.num_prompt_tokens, workload.num_output_tokens
    decode_tokens = float((output - 1).sum())
    if decode_tokens <= 0:
        return None
    shortest = int(prompt.min()) + 1
    most = cfg.max_num_seqs
    if cfg.num_gpu_blocks is not None:
        most = min(most, cfg.num_gpu_blocks // math.ceil(shortest / cfg.block_size))
    if most < 1:
        return None
    cost = probe.step_cost
    decode_s = decode_step_cost(cost)  # the cost of such a `Batch`, without building it
    per_token = min(decode_s(d, d * shortest) / d for d in range(1, most + 1))
    floor_s = _work_floor_s(cost, prompt, output, cfg, most)
    return len(prompt) / max(per_token * decode_tokens, floor_s) * probe.pp


def _work_floor_s(
    cost: StepCost, prompt: np.ndarray, output: np.ndarray, cfg: EngineConfig, most: int
) -> float:
    """Seconds the run's work takes at least (module docstring): the compute, traffic and
    link times of its totals, plus the per-step costs over the fewest steps it can take."""
    model, k = (
        (cost.target, cost.spec.num_speculative_tokens)
        if isinstance(cost, SpeculativeStepCost)
        else (cost, 0)
    )
    if not isinstance(model, StepModel) or model.constants.attention_dp_size > 1:
        return 0.0
    c = model.constants
    p, dec = prompt.astype(np.float64), (output - 1).astype(np.float64)
    num_prompt, num_decode = int(prompt.sum()), int(dec.sum())
    totals: Aggregates = (
        *(num_prompt + num_decode, len(p) + num_decode, num_prompt),
        *(float((p * (p + 1) / 2).sum()), 0.0, float(num_prompt), 0.0),
        *(num_decode, float((dec * p).sum()), 0.0),
    )
    if k:  # each decoding sequence verifies k + 1 positions, a prompt chunk
        totals = verify_aggregates(totals, k, c.window)
    t = StepTerms._make(step_terms(c, totals))
    work_s = (
        t.linear_compute_s
        + t.experts_compute_s
        + t.lm_head_compute_s
        + t.prefill_attention_compute_s
        + t.decode_attention_compute_s
        + t.elementwise_s
        + c.num_allreduces * t.allreduce_link_s
        + c.num_pipeline_sends * t.send_link_s
    )
    per_step_s = (
        c.num_allreduces * t.allreduce_latency_s
        + c.num_pipeline_sends * t.send_latency_s
        + t.step_overhead_s
        + t.layers_overhead_s
    )
    steps = max(float(output.max()), num_decode / most)
    if cfg.batching == "continuous":
        steps = max(steps, num_prompt / cfg.max_num_batched_tokens)
    return work_s + steps * per_step_s
