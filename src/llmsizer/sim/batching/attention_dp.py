"""TensorRT-LLM's attention data-parallel balancing, for one engine that stands for D ranks.

With `enable_attention_dp`, each of the D ranks schedules its own requests, but every rank
runs every step together (the MoE layers' collectives are in lockstep), so one rank's prompt
stalls every rank's decodes. `attention_dp_config: {enable_balance: true, timeout_iters: T,
batching_wait_iters: W}` therefore holds new prompts until every rank has one, so they share
one step (TensorRT-LLM `PyExecutor._balance_adp_requests`, read at commit
`0004396720054fd8e205cbf616f21f0b57c6b412`; `AttentionDpConfig` in `llmapi/llm_args.py`,
defaults T 50, W 10). Each step, from every rank's scheduled prompts and decodes:

- every rank has a free slot and a prompt: the waiting count is reset; if every rank also
  decodes, the prompts wait W steps more (batching wait), then run;
- otherwise the waiting count goes up by one and the prompts wait, unless the count
  reaches T (it is reset and the prompts run) or some rank has nothing to decode (they run).

The count also runs on steps with no prompt anywhere, so it is a free-running counter that
releases every T-th step since its last reset: a prompt on one rank waits for the next
multiple, between 0 and T - 1 steps, unless D prompts come first.

New requests go to the rank with the fewest active (waiting or running) requests, lowest
rank first (TensorRT-LLM's attention-DP request router balances by active requests).
"""

from __future__ import annotations

from llmsizer.sim.request import SimRequest


class AttentionDpBalance:
    """The ranks' request counts and the hold rule (module docstring)."""

    def __init__(
        self, num_ranks: int, max_seqs_per_rank: int, timeout_iters: int, batching_wait_iters: int
    ) -> None:
        self.num_ranks = num_ranks
        self.max_seqs_per_rank = max_seqs_per_rank
        self.timeout_iters = timeout_iters
        self.batching_wait_iters = batching_wait_iters
        self.rank_of: dict[SimRequest, int] = {}
        self.num_waiting = [0] * num_ranks
        self.num_running = [0] * num_ranks
        self.reset_step = 0  # the step at which the waiting count was last 0
        self.num_batching_waits = 0

    def arrived(self, r: SimRequest) -> None:
        """Route a new request to the rank with the fewest active requests."""
        load = [w + n for w, n in zip(self.num_waiting, self.num_running, strict=True)]
        rank = load.index(min(load))
        self.rank_of[r] = rank
        self.num_waiting[rank] += 1

    def admitted(self, r: SimRequest) -> None:
        rank = self.rank_of[r]
        self.num_waiting[rank] -= 1
        self.num_running[rank] += 1

    def requeued(self, r: SimRequest) -> None:
        """A preempted request waits again on its rank."""
        rank = self.rank_of[r]
        self.num_running[rank] -= 1
        self.num_waiting[rank] += 1

    def left(self, r: SimRequest) -> None:
        self.num_running[self.rank_of.pop(r)] -= 1

    def holds(self, step: int) -> bool:
        """Whether the waiting prompts wait at step `step` (module docstring). Steps are
        counted by the caller, every step once, held or not."""
        all_free = all([n < self.max_seqs_per_rank for n in self.num_running])
        all_decode = all([n > 0 for n in self.num_running])
        if all_free and all([w > 0 for w in self.num_waiting]):
            self.reset_step = step
            if all_decode and self.num_batching_waits < self.batching_wait_iters:
                self.num_batching_waits += 1
                return True
            self.num_batching_waits = 0
            return False
        count = step - self.reset_step
        if not all_decode or self.timeout_iters <= 1 or count % self.timeout_iters == 0:
            self.reset_step = step
            return False
        return True
