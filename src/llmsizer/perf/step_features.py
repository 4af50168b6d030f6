"""What a step does, apart from how fast the GPU does it: re-pricing steps for any factors.

`StepModel` prices a batch at rates that are datasheet peaks times `EfficiencyFactors`.
Every part of that price is a roofline over quantities that do not depend on the factors,
so a step reduces to a short row of numbers, its *features*, and its time under any factors
is a few multiplications (`price`):

    t(e) =  sum over roofline parts p of max(C_p / e_compute(p), M_p / e_memory(p))
          + M_elementwise / gemm_bandwidth_efficiency
          + L_link / interconnect_efficiency
          + n_hops * collective_hop_latency_s
          + n_layers * layer_overhead_s
          + n_prefill_layers * prefill_layer_overhead_s      (steps with prompt work)
          + n_steps * step_overhead_s

C_p and M_p are part p's compute and memory times at 100 % of peak, L_link the collectives'
bandwidth time at full link speed, n_hops their latency-bound hops. Which factor scales which
part is `_PARTS`, mirroring `build_constants`; a test holds `price(featurize(batch), e)`
equal to `StepModel(d, e)(batch)` for random batches and factors, so the two cannot drift.

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

from llmsizer.perf.batch_shape import BatchLike
from llmsizer.perf.constants import StepConstants, build_constants
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.step import StepModel
from llmsizer.perf.step_parts import BatchAggregates, aggregate, step_parts

# part -> (its compute rate and memory rate in StepConstants, the factors that scale them)
_PARTS: dict[str, tuple[str, str, str, str]] = {
    "linear": (
        "linear_flops_per_s",
        "gemm_bytes_per_s",
        "gemm_compute_efficiency",
        "gemm_bandwidth_efficiency",
    ),
    "experts": (
        "linear_flops_per_s",
        "gemm_bytes_per_s",
        "gemm_compute_efficiency",
        "gemm_bandwidth_efficiency",
    ),
    "lm_head": (
        "lm_head_flops_per_s",
        "gemm_bytes_per_s",
        "gemm_compute_efficiency",
        "gemm_bandwidth_efficiency",
    ),
    "prefill_attention": (
        "attention_flops_per_s",
        "attention_bytes_per_s",
        "attention_compute_efficiency",
        "attention_bandwidth_efficiency",
    ),
    "decode_attention": (
        "attention_flops_per_s",
        "attention_bytes_per_s",
        "attention_compute_efficiency",
        "attention_bandwidth_efficiency",
    ),
}
ROOFLINE_PARTS = tuple(_PARTS)
_N = len(ROOFLINE_PARTS)
# Column layout of a feature row.
COMPUTE = slice(0, _N)
MEMORY = slice(_N, 2 * _N)
ELEMENTWISE, LINK, HOPS, LAYERS, PREFILL_LAYERS, STEPS = range(2 * _N, 2 * _N + 6)
NUM_FEATURES = 2 * _N + 6
# A step's aggregates as a row: the BatchAggregates fields in order; SHAPE_COLUMNS are the
# integer fields that fix its shape.
AGGREGATE_FIELDS = tuple(BatchAggregates.__dataclass_fields__)
NUM_AGGREGATES = len(AGGREGATE_FIELDS)
SHAPE_COLUMNS = tuple(
    AGGREGATE_FIELDS.index(f)
    for f in ("num_tokens", "num_sampled", "num_prefill_tokens", "num_decode_seqs")
)

UNIT_EFFICIENCY = EfficiencyFactors(
    gemm_compute_efficiency=1.0,
    gemm_bandwidth_efficiency=1.0,
    attention_compute_efficiency=1.0,
    attention_bandwidth_efficiency=1.0,
    interconnect_efficiency=1.0,
    collective_hop_latency_s=0.0,
    layer_overhead_s=0.0,
    prefill_layer_overhead_s=0.0,
    step_overhead_s=0.0,
)
_PROBE_HOP_S = 1e-6


def _num_hops(d: Deployment) -> float:
    """Latency-bound collective hops per step: 2 (tp - 1) per all-reduce, one per send."""
    c = build_constants(d, UNIT_EFFICIENCY.replace(collective_hop_latency_s=_PROBE_HOP_S))
    hop_s = c.num_allreduces * c.allreduce_latency_s + c.num_pipeline_sends * c.send_latency_s
    return hop_s / _PROBE_HOP_S


@dataclass(frozen=True, slots=True)
class StepFeaturizer:
    """`StepFeaturizer(d)(batch)`: the batch's feature row (module docstring), in seconds
    at 100 % of peak and counts."""

    deployment: Deployment
    _unit: StepModel = field(init=False, repr=False, compare=False)
    _rates: dict[str, tuple[float, float]] = field(init=False, repr=False, compare=False)
    _constant: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unit = StepModel(self.deployment, UNIT_EFFICIENCY)
        c: StepConstants = unit.constants
        rates = {p: (getattr(c, f), getattr(c, m)) for p, (f, m, _, _) in _PARTS.items()}
        constant = np.zeros(NUM_FEATURES)
        constant[HOPS] = _num_hops(self.deployment)
        constant[LAYERS] = self.deployment.model.num_layers
        constant[STEPS] = 1.0
        object.__setattr__(self, "_unit", unit)
        object.__setattr__(self, "_rates", rates)
        object.__setattr__(self, "_constant", constant)

    def aggregates(self, batch: BatchLike) -> tuple[float, ...]:
        """The batch's aggregates as a row (`AGGREGATE_FIELDS`): cheap, for recording."""
        a = aggregate(batch, self._unit.constants.window)
        return tuple(getattr(a, f) for f in AGGREGATE_FIELDS)

    def features(self, aggregates: np.ndarray) -> np.ndarray:
        """Feature rows of aggregate rows (steps x NUM_AGGREGATES, means allowed)."""
        rows = np.atleast_2d(aggregates)
        out = np.zeros((rows.shape[0], NUM_FEATURES))
        for r, values in enumerate(rows.tolist()):
            kwargs = dict(zip(AGGREGATE_FIELDS, values, strict=True))
            for i in SHAPE_COLUMNS:
                kwargs[AGGREGATE_FIELDS[i]] = round(values[i])
            out[r] = self._row(BatchAggregates(**kwargs))
        return out

    def __call__(self, batch: BatchLike) -> np.ndarray:
        """Feature row of one step; all zeros for an empty batch (no step runs)."""
        return self.features(np.array(self.aggregates(batch)))[0]

    def _row(self, agg: BatchAggregates) -> np.ndarray:
        row = np.zeros(NUM_FEATURES)
        parts, _ = step_parts(self._unit.constants, agg)
        if not parts:
            return row
        row += self._constant
        if agg.num_prefill_tokens:
            row[PREFILL_LAYERS] = row[LAYERS]
        for part in parts:
            if part.name in self._rates:
                flops_per_s, bytes_per_s = self._rates[part.name]
                i = ROOFLINE_PARTS.index(part.name)
                row[i] = part.flops / flops_per_s
                row[_N + i] = part.hbm_bytes / bytes_per_s
            elif part.name == "elementwise":
                row[ELEMENTWISE] = part.time_s
            elif part.name in ("allreduce", "pipeline_send"):
                row[LINK] += part.time_s  # bandwidth time only: the hop latency is zero here
        return row


def factor_vectors(eff: EfficiencyFactors) -> tuple[np.ndarray, np.ndarray]:
    """Per roofline part, the compute and the memory efficiency that divide its times."""
    compute = np.array([getattr(eff, _PARTS[p][2]) for p in ROOFLINE_PARTS])
    memory = np.array([getattr(eff, _PARTS[p][3]) for p in ROOFLINE_PARTS])
    return compute, memory


def price(features: np.ndarray, eff: EfficiencyFactors) -> np.ndarray:
    """Seconds for each feature row (or the one row) under `eff` (module docstring)."""
    f = np.atleast_2d(features)
    compute, memory = factor_vectors(eff)
    roofline = np.maximum(f[:, COMPUTE] / compute, f[:, MEMORY] / memory).sum(axis=1)
    time_s = (
        roofline
        + f[:, ELEMENTWISE] / eff.gemm_bandwidth_efficiency
        + f[:, LINK] / eff.interconnect_efficiency
        + f[:, HOPS] * eff.collective_hop_latency_s
        + f[:, LAYERS] * eff.layer_overhead_s
        + f[:, PREFILL_LAYERS] * eff.prefill_layer_overhead_s
        + f[:, STEPS] * eff.step_overhead_s
    )
    return time_s if features.ndim == 2 else time_s.reshape(features.shape[:-1])
