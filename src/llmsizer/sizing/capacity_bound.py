"""`capacity_bound`: an upper bound on a probe's capacity from its step model alone, before
its capacity run (no simulation), for a branch and bound to drop a configuration that cannot
beat the best found even at that bound.

The capacity run (`Probe.capacity`) serves n requests that all arrive at once and divides n
by the time the last one finishes. Every request i of `osl_i` output tokens is a decoding
sequence in `osl_i - 1` steps (its first token comes from its prefill), and a decoding
sequence holds the KV of at least its prompt and one token, so no step decodes more than

    D = min(max_num_seqs, num_gpu_blocks // ceil((shortest prompt + 1) / block_size))

sequences. A step costs at least its decode part alone at the shortest context (a step
model's cost never falls as work is added: more tokens, more context, a prefill chunk), and
a step of d sequences delivers d decode tokens, so every decode token costs at least

    m = min over 1 <= d <= D of cost(d sequences, d x (shortest prompt + 1) context) / d

and the run lasts at least m x sum_i (osl_i - 1): capacity <= n / (m x sum_i (osl_i - 1)),
the same for any n, the run's included (times the pipeline's depth, as `Probe.capacity`).
Preemption and prefill only add time.

A speculating probe simulates verify steps, not tokens (`instance.speculation`): its
capacity run is the same argument over that run's own requests in steps (`Probe.in_steps`:
the acceptance draws it simulates, a request of `osl` tokens decoding in
ceil((osl - 1) / E(a)) steps, E(a) <= k + 1), with its KV blocks (scaled for the drafter)
and its step cost (the drafter's passes and the verification of k + 1 tokens a sequence).
"""

from __future__ import annotations

import math

from llmsizer.sim import Batch
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
    prompt, output, cfg = probe.lengths.prompt, probe.lengths.output, probe.engine.config
    if probe.speculative is not None:  # the capacity run's own requests, in verify steps
        run = probe.in_steps(probe.capacity_workload())
        prompt, output = run.workload.num_prompt_tokens, run.workload.num_output_tokens
        cfg = run.engine.config
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
    per_token = min(
        cost(Batch(num_decode_seqs=d, num_decode_context_tokens=d * shortest)) / d
        for d in range(1, most + 1)
    )
    return len(prompt) / (per_token * decode_tokens) * probe.pp
