"""Step features of a speculating engine (`perf.speculative.SpeculativeStepCost`), so that a
recorded schedule of verify steps re-prices under any factors as plain steps do
(`llmsizer.calibrate.features`).

A speculating step is the target's verification of k + 1 tokens per decoding sequence plus
the drafter's passes: k over the decoding sequences (pass i reading i x n more keys) and one
over the batch's new prompt tokens. Each part is a roofline of its own, so each gets its own
feature row (`PARTS` rows a step; the replay sums a segment's rows, `replay._group_rows`):
summing the parts into one row would take the maximum of their summed compute and memory
times, not the sum of their maxima. Every part is affine in the step's own aggregates (the
verify step's by `verify_aggregates`, the drafter's decode and prompt batches read off them),
so a group of steps of one shape is still its count times the features of its mean.

The drafter's passes run inside the target's step (`mtp_head_model`: its `step_overhead_s`
is 0), so their step-count column is zeroed; a verify step without prompt work replays a
CUDA graph (`graphed_verify`: its eager-launch column is zeroed unless a decode step of its
sequences would launch eagerly), as `SpeculativeStepCost` prices them; its sequences'
linear-attention state (`perf.verify_step.verify_state_s`) is its decode attention's
memory. The verify part counts its decoding sequences in the column only verify steps have
where the engine's host work runs serial with the GPU (`VERIFY_SEQUENCES`,
`SpeculativeDecoding.serial_host`, priced by `EfficiencyFactors.verify_sequence_overhead_s`,
`perf.verify_step.verify_sequence_s`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmsizer.calibrate.features import NUM_FEATURES, STEPS, VERIFY_SEQUENCES, StepFeaturizer
from llmsizer.perf.batch_shape import BatchAggregates, BatchLike
from llmsizer.perf.speculative import SpeculativeStepCost, verify_aggregates
from llmsizer.perf.terms import DECODE_MEMORY, PREFILL_LAYERS
from llmsizer.perf.verify_step import verify_state_s


@dataclass(frozen=True, slots=True)
class SpeculativeFeaturizer:
    """`StepFeaturizer`'s interface for the steps of `SpeculativeStepCost` (module
    docstring): `aggregates(batch)` the target's, `features(rows)` `parts` rows for each."""

    plain: StepFeaturizer  # the target as it runs a plain step (its CUDA graphs)
    verify: StepFeaturizer  # the target's verify pass, priced without graphs
    draft: StepFeaturizer  # the drafter
    num_speculative_tokens: int
    num_draft_passes: int
    graphed_verify: bool
    serial_host: bool  # the verify step's per-request host work serial with the GPU
    state_kernel_rate: float  # the verify kernel's state traffic over attention bandwidth
    window: int  # the target's sliding window (0: none), as its aggregates count it

    @classmethod
    def of(cls, cost: SpeculativeStepCost) -> SpeculativeFeaturizer:
        target, draft = cost.target, cost.draft
        tile, draft_tile = target.efficiency.experts_tile_rows, draft.efficiency.experts_tile_rows
        return cls(
            StepFeaturizer(target.deployment, target.cuda_graphs, experts_tile_rows=tile),
            StepFeaturizer(target.deployment, experts_tile_rows=tile),
            StepFeaturizer(draft.deployment, draft.cuda_graphs, experts_tile_rows=draft_tile),
            cost.spec.num_speculative_tokens,
            cost.num_draft_passes,
            cost.spec.graphed_verify,
            cost.spec.serial_host,
            cost.spec.state_kernel_rate,
            target.constants.window,
        )

    @property
    def parts(self) -> int:
        """Feature rows per step: the verify pass, each draft pass, the prompt pass."""
        return 2 + self.num_draft_passes

    def aggregates(self, batch: BatchLike) -> tuple[float, ...]:
        return self.plain.aggregates(batch)

    def features(self, aggregates: np.ndarray) -> np.ndarray:
        """`parts` feature rows for each aggregate row (steps x NUM_AGGREGATES, means
        allowed), part by part, step after step."""
        rows = np.atleast_2d(aggregates)
        return np.concatenate([self._parts(a) for a in rows]).reshape(-1, NUM_FEATURES)

    def __call__(self, batch: BatchLike) -> np.ndarray:
        """The parts' rows of one step."""
        return self.features(np.array(self.aggregates(batch)))

    def _parts(self, row: np.ndarray) -> np.ndarray:
        k, a = self.num_speculative_tokens, BatchAggregates._make(row.tolist())
        verify = self.verify.features(np.array(verify_aggregates(a, k, self.window)))[0]
        if self.graphed_verify and not a.num_prefill_tokens:
            graphs = self.plain.cuda_graphs
            if graphs is None or not self.plain.features(row)[0][PREFILL_LAYERS]:
                verify[PREFILL_LAYERS] = 0.0
        n, chunks = a.num_decode_seqs, a.num_sampled - a.num_decode_seqs
        rate = self.state_kernel_rate
        verify[DECODE_MEMORY] += verify_state_s(self.verify.constants, n, k, rate)  # 0 without
        verify[VERIFY_SEQUENCES] = n if self.serial_host else 0  # each one's host work
        drafts = [_NONE] * (self.num_draft_passes + 1)
        for i in range(self.num_draft_passes if n else 0):  # pass i reads i x n more keys
            keys = a.decode_keys_full + i * n
            drafts[i] = _NONE._replace(
                num_tokens=n, num_sampled=n, num_decode_seqs=n, decode_keys_full=keys
            )
        if chunks:  # the pass over new prompt tokens: the batch without its decodes
            drafts[-1] = _NONE._replace(
                num_tokens=a.num_prefill_tokens,
                num_sampled=chunks,
                num_prefill_tokens=a.num_prefill_tokens,
                prefill_pairs_full=a.prefill_pairs_full,
                prefill_kv_full=a.prefill_kv_full,
            )
        drafting = self.draft.features(np.array(drafts, dtype=np.float64))
        drafting[[d == _NONE for d in drafts]] = 0.0  # no pass, no step
        drafting[:, STEPS] = 0.0  # inside the target's step (module docstring)
        return np.vstack([verify, drafting])


# an empty batch's aggregates; the drafter (one layer, no sliding window) counts no window
_NONE = BatchAggregates(0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, 0.0)
