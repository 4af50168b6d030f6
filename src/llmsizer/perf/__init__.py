"""What one engine step costs: roofline per part, parallelism, memory, optimisations.

Build a `Deployment` (model, GPU, precisions, parallelism), wrap it in a `StepModel` (a
`StepCost`: batch in, seconds out; `.breakdown(batch)` for parts, FLOPs, bytes, bounds and
`mbu`/`mfu`), and ask `plan_memory` how many KV blocks fit. `EfficiencyFactors` holds every
gap between datasheet peak and achieved speed, per engine: the priors via
`default_efficiency`, the fit on the calibration set via `calibrated_efficiency`.
"""

from llmsizer.perf.batch_shape import (
    BatchLike,
    BatchShape,
    ChunkShape,
    PrefillChunkLike,
    decode_batch,
    prefill_batch,
)
from llmsizer.perf.calibrated import calibrated_efficiency, load_calibration
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors, EnginePreset, default_efficiency
from llmsizer.perf.memory import (
    DoesNotFitError,
    MemoryPlan,
    activation_bytes_per_gpu,
    plan_memory,
    weight_bytes_per_gpu,
)
from llmsizer.perf.roofline import (
    Bound,
    PartCost,
    StepBreakdown,
    allreduce_hops,
    expected_experts_touched,
    mbu,
    mfu,
    ring_allreduce_time_s,
    roofline_time,
)
from llmsizer.perf.sparsity import StructuredSparsity
from llmsizer.perf.speculative import (
    SpeculativeDecoding,
    SpeculativeStep,
    draft_head_model,
    speculative_step,
)
from llmsizer.perf.step import StepModel

__all__ = [
    "BatchLike",
    "BatchShape",
    "Bound",
    "ChunkShape",
    "Deployment",
    "DoesNotFitError",
    "EfficiencyFactors",
    "EnginePreset",
    "MemoryPlan",
    "PartCost",
    "PrefillChunkLike",
    "SpeculativeDecoding",
    "SpeculativeStep",
    "StepBreakdown",
    "StepModel",
    "StructuredSparsity",
    "activation_bytes_per_gpu",
    "allreduce_hops",
    "calibrated_efficiency",
    "decode_batch",
    "default_efficiency",
    "draft_head_model",
    "expected_experts_touched",
    "load_calibration",
    "mbu",
    "mfu",
    "plan_memory",
    "prefill_batch",
    "ring_allreduce_time_s",
    "roofline_time",
    "speculative_step",
    "weight_bytes_per_gpu",
]
