"""`CandidatesSpec`: the search space of a use case, every lever the course names.

A configuration is GPU x weight precision x 2:4 sparsity x speculative draft tokens x
tensor and pipeline parallel sizes x engine preset x batch knobs. `precisions` is also the
list of precisions the use case accepts: `auto` stands for what each GPU runs well
(`perf.levers.search_precisions`: bf16, its native fp8 / fp4, and int4 weight-only), so
the accepted set can be wide or restricted to lossless formats. `lossless`, the default, is
each GPU's formats with native math that need no accuracy check (`perf.levers.QUALITY`):
bf16, and fp8 on Hopper, Ada and later; fp4 and int4 stay opt-in (issue 11: `plan` used
to try bf16 alone unless told). A precision the GPU has no math for is kept (it loads as
weight-only) and `fallback_notes` names the fallback.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from llmsizer.instance import DeploymentSpec
from llmsizer.instance.speculation import DEFAULT_ACCEPTANCE, SpeculativeSpec
from llmsizer.perf import Deployment
from llmsizer.perf.levers import (
    CHECK,
    fallback_note,
    quality_note,
    search_precisions,
    sparsity_note,
)
from llmsizer.specs import Precision, get_gpu, get_model

AUTO = "auto"
LOSSLESS = "lossless"  # native and no accuracy check needed: bf16, fp8 where native


class CandidatesSpec(BaseModel):
    """The search space: every combination is a configuration to consider."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    gpus: list[str] = Field(["h100-sxm"], min_length=1, description="GPU names to compare.")
    precisions: list[str] = Field(
        [LOSSLESS],
        min_length=1,
        description="Weight precisions accepted and searched; `lossless` (default): each "
        "GPU's bf16 and native fp8; `auto`: also native fp4 and int4 weight-only, which "
        "need an accuracy check.",
    )
    sparsity: list[bool] = Field(
        [False], min_length=1, description="2:4 structured sparsity off/on to try."
    )
    speculative_tokens: list[int] = Field(
        [0], min_length=1, description="Speculative decoding: draft tokens k to try (0: off)."
    )
    speculative_method: Literal["head", "draft_model"] = Field(
        "head", description="Drafter when speculating: an EAGLE/MTP-style head, or a model."
    )
    draft_model: str | None = Field(
        None, description="Draft model (speculative_method draft_model)."
    )
    acceptance_rate: float = Field(
        DEFAULT_ACCEPTANCE, gt=0, lt=1, description="Mean per-token acceptance of drafts."
    )
    tensor_parallel_sizes: list[int] = Field(
        [1, 2, 4, 8], min_length=1, description="TP sizes to try (each >= 1)."
    )
    pipeline_parallel_sizes: list[int] = Field(
        [1], min_length=1, description="PP sizes to try (each >= 1)."
    )
    engines: list[Literal["vllm", "trtllm", "sglang"]] = Field(
        ["vllm"], min_length=1, description="Engine presets to try."
    )
    max_num_seqs: list[int | None] = Field(
        [None], min_length=1, description="Batch caps to try (null: the preset's)."
    )
    max_num_batched_tokens: list[int | None] = Field(
        [None], min_length=1, description="Step token budgets (prefill chunk) to try."
    )
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1, description="Fraction of GPU memory the engine may use."
    )

    @field_validator("gpus")
    @classmethod
    def _known_gpus(cls, names: list[str]) -> list[str]:
        keys = [get_gpu(n).key for n in names]  # UnknownNameError names close matches
        return list(dict.fromkeys(keys))

    @field_validator("precisions")
    @classmethod
    def _known_precisions(cls, names: list[str]) -> list[str]:
        return list(dict.fromkeys(_precision_name(n) for n in names))

    @field_validator("sparsity")
    @classmethod
    def _unique(cls, values: list[bool]) -> list[bool]:
        return list(dict.fromkeys(values))

    @field_validator("speculative_tokens")
    @classmethod
    def _draft_tokens(cls, values: list[int]) -> list[int]:
        bad = [v for v in values if not 0 <= v <= 16]
        if bad:
            raise ValueError(f"draft tokens must be 0 (off) to 16, got {bad}")
        return list(dict.fromkeys(values))

    def speculative(self, k: int) -> SpeculativeSpec | None:
        """The speculation settings of `k` draft tokens (`None` for 0)."""
        if k == 0:
            return None
        return SpeculativeSpec(
            num_speculative_tokens=k,
            method=self.speculative_method,
            draft_model=self.draft_model,
            acceptance_rate=self.acceptance_rate,
        )

    @field_validator("tensor_parallel_sizes", "pipeline_parallel_sizes")
    @classmethod
    def _positive(cls, sizes: list[int]) -> list[int]:
        bad = [s for s in sizes if s < 1]
        if bad:
            raise ValueError(f"sizes must be >= 1, got {bad}")
        return sorted(set(sizes))

    @field_validator("max_num_seqs", "max_num_batched_tokens")
    @classmethod
    def _positive_or_preset(cls, values: list[int | None]) -> list[int | None]:
        bad = [v for v in values if v is not None and v < 1]
        if bad:
            raise ValueError(f"values must be >= 1 (or null for the preset's), got {bad}")
        return list(dict.fromkeys(values))

    def precisions_for(self, gpu: str) -> list[str]:
        """The accepted precisions on `gpu`, `auto` expanded (module docstring)."""
        found: list[str] = []
        for name in self.precisions:
            found += [p.value for p in _expand(name, gpu)]
        return list(dict.fromkeys(found))

    def configs(self, model: str, **levers: object) -> tuple[DeploymentSpec, ...]:
        """Every combination for `model`, GPU by GPU; `levers` (`precision`, `sparsity`,
        `speculative_tokens`) replace an axis by one value, as the lever table does."""
        return tuple(
            DeploymentSpec.model_validate(
                {
                    "model": model,
                    "gpu": g,
                    "precision": p,
                    "sparsity": sparse,
                    "speculative": self.speculative(k),
                    "tensor_parallel_size": tp,
                    "pipeline_parallel_size": pp,
                    "gpu_memory_utilization": self.gpu_memory_utilization,
                    "engine": e,
                    "max_num_seqs": seqs,
                    "max_num_batched_tokens": tokens,
                }
            )
            for g in self.gpus
            for p in _axis(levers, "precision", self.precisions_for(g))
            for sparse in _axis(levers, "sparsity", self.sparsity)
            for k in _axis(levers, "speculative_tokens", self.speculative_tokens)
            for tp in self.tensor_parallel_sizes
            for pp in self.pipeline_parallel_sizes
            for e in self.engines
            for seqs in self.max_num_seqs
            for tokens in self.max_num_batched_tokens
        )

    def fallback_notes(self, model: str) -> list[str]:
        """One sentence per accepted (GPU, precision) pair that runs on a fallback, and per
        GPU without sparse tensor cores when sparsity is tried."""
        notes = []
        for g in self.gpus:
            for p in self.precisions_for(g):
                note = fallback_note(Deployment(get_model(model), get_gpu(g), Precision(p)))
                if note is not None:
                    notes.append(note)
            sparse = sparsity_note(get_gpu(g)) if True in self.sparsity else None
            notes += [sparse] if sparse is not None else []
        return notes


def _axis(
    levers: dict[str, object], name: str, values: list[str] | list[bool] | list[int]
) -> list[Any]:
    return [levers[name]] if name in levers else list(values)


def _expand(name: str, gpu: str) -> tuple[Precision, ...]:
    """The precisions a name stands for on `gpu` (`auto`, `lossless`, or one format)."""
    if name == AUTO:
        return search_precisions(get_gpu(gpu))
    if name == LOSSLESS:
        own = search_precisions(get_gpu(gpu))
        return tuple(p for p in own if not p.is_weight_only and CHECK not in quality_note(p))
    return (Precision(name),)


def _precision_name(name: str) -> str:
    if name.strip().lower() in (AUTO, LOSSLESS):
        return name.strip().lower()
    return Precision.parse(name).value
