"""One model instance (a tensor x pipeline parallel group of GPUs) ready to simulate.

Joins the three things a priced simulation needs: the step cost (the GPU performance model),
the KV blocks left after weights and activations (the memory plan), and the engine's
batching knobs with those blocks filled in.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.perf import Deployment, EfficiencyFactors, MemoryPlan, StepModel, plan_memory
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.perf.sparsity import StructuredSparsity
from llmsizer.sim import EngineConfig


@dataclass(frozen=True, slots=True)
class Instance:
    """A deployable replica: its step model, its memory plan, its engine configuration."""

    step: StepModel
    memory: MemoryPlan
    engine: EngineConfig

    @property
    def deployment(self) -> Deployment:
        return self.step.deployment

    @property
    def num_gpus(self) -> int:
        return self.deployment.num_gpus


def make_instance(
    model: str,
    gpu: str,
    *,
    precision: str = "bf16",
    kv_cache_dtype: str | None = None,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    engine: EngineConfig | None = None,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
    efficiency: EfficiencyFactors | None = None,
    sparsity: bool = False,
) -> Instance:
    """Look up names, size the KV cache and return the instance.

    The engine config's `num_gpu_blocks`, when unset, becomes the blocks that fit. With
    pipeline parallelism each stage holds its share of layers, so the blocks counted are
    per stage: every stage holds the KV of every running sequence for its layers.
    `efficiency` defaults to the factors fitted on the published measurements
    (`calibrated_efficiency`, see examples/validation/perf_validation.md).
    Raises `UnknownNameError` or `DoesNotFitError` with a message for the user.
    """
    engine = engine or EngineConfig(engine="vllm")
    deployment = Deployment.from_names(
        model,
        gpu,
        precision=precision,
        kv_cache_dtype=kv_cache_dtype,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        sparsity=StructuredSparsity() if sparsity else None,
    )
    memory = plan_memory(
        deployment,
        gpu_memory_utilization=gpu_memory_utilization,
        block_size=engine.block_size,
        max_num_batched_tokens=engine.max_num_batched_tokens,
        max_num_seqs=engine.max_num_seqs,
        max_model_len=max_model_len,
    )
    if engine.num_gpu_blocks is None:
        engine = engine.model_copy(update={"num_gpu_blocks": memory.num_kv_blocks})
    step = StepModel(deployment, efficiency or calibrated_efficiency(engine.engine or "vllm"))
    return Instance(step=step, memory=memory, engine=engine)
