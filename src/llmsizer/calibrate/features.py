"""Step features: the step formula at 100 % of peak, re-priced for any efficiency factors.

`StepModel` prices a batch with `step_terms` (`llmsizer.perf.step`) at rates that are
datasheet peaks times `EfficiencyFactors`, and each factor enters exactly one kind of term:
an efficiency divides the times at the rates it sets, a fixed cost multiplies a count. So
the terms computed once with every efficiency at 1 are a row of numbers, the step's
*features*, and its time under any factors is the same sum over that row scaled column by
column (`column_scale`, `price`):

    t(e) =  sum over roofline parts p of max(C_p / e_compute(p), M_p / e_memory(p))
          + M_elementwise / gemm_bandwidth_efficiency
          + (L_allreduce + L_send) / interconnect_efficiency
          + (n_allreduce_hops + n_send_hops) * collective_hop_latency_s
          + n_steps * step_overhead_s
          + n_layers * layer_overhead_s
          + n_prefill_layers * prefill_layer_overhead_s      (steps with prompt work)
          + n_indexer_layers * indexer_overhead_s + D_w4a16 / experts_dequant_efficiency
          + n_sampled * sequence_overhead_s                  (rows that sample a token)
          + n_verifying * verify_sequence_overhead_s         (speculative verify steps)

The columns are the `StepTerms` in order: C_p and M_p are part p's compute and memory times
at 100 % of peak, L the bandwidth time of all the step's all-reduces or sends at full link
speed (the terms price one of each, the row counts them all); the collectives' latency
columns and the three overheads are counts (hops, steps, layers, prefill layers), which the
terms give when every fixed cost is one unit (`_UNIT_S`). After the `StepTerms`, one column
no plain step has: the decoding sequences of a speculative verify step (zero here, set by
`spec_features`). Which factor scales which column
is `_FACTOR_OF`, mirroring `build_constants`; tests hold `price(featurize(batch), e)` equal
to `StepModel(d, e)(batch)`.

A step's features are affine in its `BatchAggregates` once its shape (tokens, sampled
rows, prompt tokens, decoding sequences) is fixed, so the features of several steps of one
shape are their count times the features of their mean aggregates: calibration records each
step's aggregates (cheap), groups steps by shape, and featurises one mean row per group.
Summing features is exact for every term but the maxima, which stay exact while the steps
summed sit on the same side of each part's ridge, as steps of one shape do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from llmsizer.perf.batch_shape import BatchAggregates, BatchLike, aggregate
from llmsizer.perf.constants import StepConstants, build_constants
from llmsizer.perf.cuda_graphs import CudaGraphs
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.step import NUM_ROOFLINE_TERMS, StepTerms, step_terms
from llmsizer.perf.step import ROOFLINE_PARTS as ROOFLINE_PARTS  # the COMPUTE/MEMORY columns

# feature column -> the factor that scales it: an efficiency divides a time at 100 % of
# peak, a time (name ending in _s) multiplies a count
_FACTOR_OF: dict[str, str] = {
    "linear_compute_s": "gemm_compute_efficiency",
    "linear_memory_s": "gemm_bandwidth_efficiency",
    "experts_compute_s": "experts_compute_efficiency",
    "experts_memory_s": "experts_bandwidth_efficiency",
    "lm_head_compute_s": "gemm_compute_efficiency",
    "lm_head_memory_s": "gemm_bandwidth_efficiency",
    "prefill_attention_compute_s": "attention_compute_efficiency",
    "prefill_attention_memory_s": "attention_bandwidth_efficiency",
    "decode_attention_compute_s": "decode_attention_compute_efficiency",
    "decode_attention_memory_s": "attention_bandwidth_efficiency",
    "elementwise_s": "gemm_bandwidth_efficiency",
    "allreduce_link_s": "interconnect_efficiency",
    "allreduce_latency_s": "collective_hop_latency_s",
    "send_link_s": "interconnect_efficiency",
    "send_latency_s": "collective_hop_latency_s",
    "step_overhead_s": "step_overhead_s",
    "layers_overhead_s": "layer_overhead_s",
    "prefill_layers_overhead_s": "prefill_layer_overhead_s",
    "indexer_overhead_s": "indexer_overhead_s",
    "experts_dequant_s": "experts_dequant_efficiency",
    "sequences_overhead_s": "sequence_overhead_s",
    "verify_sequences_overhead_s": "verify_sequence_overhead_s",  # after the StepTerms
}
FEATURES = (*StepTerms._fields, "verify_sequences_overhead_s")
NUM_FEATURES = len(FEATURES)
_IS_COUNT = tuple(_FACTOR_OF[f].endswith("_s") for f in FEATURES)
# Column layout of a feature row: roofline parts as (compute, memory) pairs, then the rest.
COMPUTE = slice(0, NUM_ROOFLINE_TERMS, 2)
MEMORY = slice(1, NUM_ROOFLINE_TERMS, 2)
STEPS = FEATURES.index("step_overhead_s")
VERIFY_SEQUENCES = FEATURES.index("verify_sequences_overhead_s")
# A step's aggregates as a row: the BatchAggregates fields in order; SHAPE_COLUMNS are the
# integer fields that fix its shape.
AGGREGATE_FIELDS = BatchAggregates._fields
NUM_AGGREGATES = len(AGGREGATE_FIELDS)
SHAPE_COLUMNS = tuple(
    AGGREGATE_FIELDS.index(f)
    for f in ("num_tokens", "num_sampled", "num_prefill_tokens", "num_decode_seqs")
)

# The unit of the count columns: every fixed cost set to it makes its terms count it. A
# power of two, so that dividing by it is exact, and inside every factor's bounds.
_UNIT_S = 2.0**-14
_UNIT = EfficiencyFactors(
    gemm_compute_efficiency=1.0,
    gemm_bandwidth_efficiency=1.0,
    attention_compute_efficiency=1.0,
    attention_bandwidth_efficiency=1.0,
    interconnect_efficiency=1.0,
    collective_hop_latency_s=_UNIT_S,
    layer_overhead_s=_UNIT_S,
    prefill_layer_overhead_s=_UNIT_S,
    step_overhead_s=_UNIT_S,
    indexer_overhead_s=_UNIT_S,
    experts_dequant_efficiency=1.0,
    sequence_overhead_s=_UNIT_S,
    verify_sequence_overhead_s=_UNIT_S,
)


@dataclass(frozen=True, slots=True)
class StepFeaturizer:
    """`StepFeaturizer(d)(batch)`: the batch's feature row (module docstring): seconds at
    100 % of peak and counts, the steps run as `cuda_graphs` says (`StepModel`'s; how a step
    runs depends on its shape only, so a group of one shape shares it)."""

    deployment: Deployment
    cuda_graphs: CudaGraphs | None = None
    # not a factor but the engine's kernel (`EfficiencyFactors.experts_tile_rows`): the rows
    # a prompt step's grouped expert GEMM computes, fixed when the features are
    experts_tile_rows: float = _UNIT.experts_tile_rows
    _unit: StepConstants = field(init=False, repr=False, compare=False)
    _to_features: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unit = _UNIT.replace(experts_tile_rows=self.experts_tile_rows)
        c = build_constants(self.deployment, unit, self.cuda_graphs)  # as `StepModel` does
        # The terms price one all-reduce and one send: the row counts all of the step's.
        per_step = {
            "allreduce_link_s": c.num_allreduces,
            "allreduce_latency_s": c.num_allreduces,
            "send_link_s": c.num_pipeline_sends,
            "send_latency_s": c.num_pipeline_sends,
        }
        scale = [
            per_step.get(f, 1) / (_UNIT_S if count else 1.0)
            for f, count in zip(FEATURES, _IS_COUNT, strict=True)
        ]
        object.__setattr__(self, "_unit", c)
        object.__setattr__(self, "_to_features", np.array(scale))

    @property
    def constants(self) -> StepConstants:
        """The step constants at 100 % of peak and unit fixed costs the rows are priced at."""
        return self._unit

    def aggregates(self, batch: BatchLike) -> tuple[float, ...]:
        """The batch's aggregates as a row (`AGGREGATE_FIELDS`): cheap, for recording."""
        return aggregate(batch, self._unit.window)

    def features(self, aggregates: np.ndarray) -> np.ndarray:
        """Feature rows of aggregate rows (steps x NUM_AGGREGATES, means allowed)."""
        c, graphs = self._unit, self.cuda_graphs
        rows = [
            (*step_terms(c, _shaped(values), graphs), 0.0)  # a plain step verifies nothing
            for values in np.atleast_2d(aggregates)
        ]
        return np.array(rows, dtype=np.float64).reshape(-1, NUM_FEATURES) * self._to_features

    def __call__(self, batch: BatchLike) -> np.ndarray:
        """Feature row of one step; all zeros for an empty batch (no step runs)."""
        return self.features(np.array(self.aggregates(batch)))[0]


def _shaped(values: np.ndarray) -> BatchAggregates:
    """Aggregates from a row, the shape columns (means of equal integers) back to integers."""
    row: list[float] = values.tolist()
    for i in SHAPE_COLUMNS:
        row[i] = round(row[i])
    return BatchAggregates._make(row)


def column_scale(eff: EfficiencyFactors) -> np.ndarray:
    """What multiplies each feature column to give its term in seconds under `eff`."""
    factors = (eff.value(_FACTOR_OF[f]) for f in FEATURES)
    return np.array([f if count else 1.0 / f for f, count in zip(factors, _IS_COUNT, strict=True)])


def price(features: np.ndarray, eff: EfficiencyFactors) -> np.ndarray:
    """Seconds for each feature row (or the one row) under `eff`: `step_time_s` of the
    scaled row, vectorised over rows (module docstring)."""
    terms = np.atleast_2d(features) * column_scale(eff)
    roofline = np.maximum(terms[:, COMPUTE], terms[:, MEMORY]).sum(axis=1)
    time_s = roofline + terms[:, NUM_ROOFLINE_TERMS:].sum(axis=1)
    return time_s if features.ndim == 2 else time_s.reshape(features.shape[:-1])
