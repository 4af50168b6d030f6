"""`capacity_bound`: the step model's bound on a configuration's capacity is never below
what the capacity run simulates (on 16-bit, FP8, INT4 and sparse weights, TP 1 to 8,
pipeline parallelism, speculative decoding with a head or a draft model, a sliding window,
experts, SGLang's prefill-first steps, KV-bound and sequence-bound batches, and lengths
that vary), counts prompt work, and the
lever table it prunes finds what searching every configuration of each group finds."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from llmsizer.instance import DeploymentSpec, calibrated_for
from llmsizer.sizing import levers
from llmsizer.sizing.capacity_bound import capacity_bound, highest_rate
from llmsizer.sizing.levers import COMBINED
from llmsizer.sizing.plan import plan, search_space
from llmsizer.sizing.probe import Lengths, Probe
from llmsizer.sizing.rate_search import GRID, Counts, RateSearch
from llmsizer.sizing.search import group, make_probe, objective
from llmsizer.sizing.usecase import UseCase
from tests.sizing.cases import SMALL_LLAMA_8B

CASE = SMALL_LLAMA_8B


def probe_of(spec: DeploymentSpec, prompt: list[int], output: list[int]) -> Probe:
    lengths = Lengths(np.asarray(prompt), np.asarray(output), "test")
    space = search_space(UseCase.model_validate(CASE))
    return make_probe(dataclasses.replace(space, lengths=lengths), spec, calibrated_for)


@pytest.mark.parametrize(
    ("model", "gpu", "changes"),
    [
        ("llama-3-8b", "h100-sxm", {}),
        ("llama-3-8b", "h100-sxm", {"precision": "fp8", "tensor_parallel_size": 2}),
        ("llama-3-8b", "a100-sxm-80gb", {"precision": "int4"}),
        ("llama-3-8b", "l40s", {"sparsity": True}),
        ("llama-3-8b", "h100-sxm", {"pipeline_parallel_size": 2}),
        ("llama-3.1-70b", "h100-sxm", {"tensor_parallel_size": 2, "precision": "fp8"}),
        ("llama-3.1-70b", "h100-sxm", {"tensor_parallel_size": 8}),
        ("llama-3-8b", "h100-sxm", {"speculative": {"num_speculative_tokens": 3}}),
        ("llama-3-8b", "h100-sxm", {"engine": "sglang"}),
        ("mistral-7b", "l40s", {}),
        ("mixtral-8x7b", "h100-sxm", {"tensor_parallel_size": 2}),
        (
            "llama-3.1-70b",
            "h100-sxm",
            {
                "tensor_parallel_size": 4,
                "speculative": {
                    "num_speculative_tokens": 5,
                    "method": "draft_model",
                    "draft_model": "llama-3.1-8b",
                    "acceptance_rate": 0.9,
                },
            },
        ),
    ],
)
@pytest.mark.parametrize(
    ("prompt", "output"), [([2000], [200]), ([3500], [500]), ([100, 3000, 800], [20, 900, 300])]
)
def test_the_bound_is_never_below_the_capacity_run(
    model: str, gpu: str, changes: dict[str, Any], prompt: list[int], output: list[int]
) -> None:
    spec = DeploymentSpec.model_validate({"model": model, "gpu": gpu, **changes})
    probe = probe_of(spec, prompt, output)
    bound = capacity_bound(probe)
    assert bound is not None
    capacity = probe.capacity()
    # a bound, 1.2-3.9x here (it counts each part's compute only, as little as it can)
    assert capacity <= bound, (spec.label(), capacity, bound)
    assert highest_rate(probe) == pytest.approx(GRID[0] * bound)


@pytest.mark.parametrize(("changes", "within"), [({}, 1.5), ({"tensor_parallel_size": 4}, 1.35)])
def test_the_bound_counts_prompt_work(changes: dict[str, Any], within: float) -> None:
    """The course's Llama 3 8B shape (2000 + 200 tokens), where prompts are most of the
    work: counting decode tokens alone, the bound was 3.0x (TP1) and 3.9x (TP4) the
    capacity; with the work floor it is within `within`."""
    spec = DeploymentSpec.model_validate({"model": "llama-3-8b", "gpu": "h100-sxm", **changes})
    probe = probe_of(spec, [2000], [200])
    bound = capacity_bound(probe)
    assert bound is not None
    assert probe.capacity() <= bound <= within * probe.capacity()


def test_no_bound_for_one_token_outputs() -> None:
    plain = DeploymentSpec(model="llama-3-8b", gpu="h100-sxm")
    assert capacity_bound(probe_of(plain, [2000], [1])) is None
    assert highest_rate(probe_of(plain, [2000], [1])) == float("inf")


def test_the_pruned_lever_table_finds_each_groups_fewest_gpus() -> None:
    """Every row's count equals the best of a search of every configuration of its group,
    without a bound, an incumbent or a warm start (each run in instance counts to the end),
    and on a tie the row shows the configuration with more GPUs per instance (`rank`)."""
    u = UseCase.model_validate(CASE)
    space = search_space(u)
    rows = {r.lever: r for r in plan(u).levers}
    for row in rows.values():
        if row.lever == COMBINED or row.best is None:
            continue
        g = group(row.best.config)
        found = []
        for config in levers_configs(u, g):
            try:
                probe = make_probe(space, config, calibrated_for)
            except ValueError:
                continue
            rs = RateSearch(probe, space.limits, counts=Counts(space.load_rps)).run()
            if rs.rate is not None:
                found.append((*objective(space, config, rs.rate), -config.gpus_per_instance))
        assert row.sizing is not None
        assert levers._rank(space, row.best) == min(found), row.lever


def levers_configs(u: UseCase, g: Any) -> tuple[DeploymentSpec, ...]:
    gpu, precision, sparse, k = g
    one = u.candidates.model_copy(update={"gpus": [gpu]})
    return one.configs(u.model, precision=precision, sparsity=sparse, speculative_tokens=k)
