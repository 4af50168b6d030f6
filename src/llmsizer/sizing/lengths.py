"""The request lengths a plan simulates: fixed, spread around the means, or from a trace.

- fixed (`length_cv` 0): every request has the use case's input and output tokens;
- spread (`length_cv` > 0): log-normal input and output lengths with those means and a
  coefficient of variation `length_cv`, capped so that no request exceeds the model's window;
- trace (`lengths_trace`): (input, output) pairs drawn with replacement from the trace's rows,
  so each prompt keeps its own output length.

`length_variants` gives the other distributions the uncertainty band tries: the same means
with a different spread, because the tail of the lengths, not only their means, sets p95s.
"""

from __future__ import annotations

import numpy as np

from llmsizer.sizing.probe import Lengths
from llmsizer.sizing.usecase import UseCase
from llmsizer.specs import get_model
from llmsizer.workload import read_trace
from llmsizer.workload.lengths import fixed_lengths, lognormal_lengths

POOL = 3000  # distinct draws; probes cycle through them
VARIANT_CV = 0.5  # spread tried for fixed lengths in the uncertainty band


def build_lengths(usecase: UseCase, num_requests: int = POOL) -> Lengths:
    """The lengths `usecase` describes (module docstring), drawn with its search seed.

    Raises `ValueError` naming `lengths_trace` when trace requests exceed the model's window.
    """
    rng = np.random.default_rng(usecase.search.seed)
    if usecase.lengths_trace is not None:
        return _from_trace(usecase, num_requests, rng)
    isl, osl = usecase.input_tokens, usecase.output_tokens
    if usecase.length_cv == 0:
        return Lengths(fixed_lengths(1, isl), fixed_lengths(1, osl), f"fixed {isl} / {osl} tokens")
    return _spread(usecase, isl, osl, usecase.length_cv, num_requests, rng)


def length_variants(usecase: UseCase, base: Lengths) -> list[tuple[str, Lengths]]:
    """Other length distributions with the same means, for the uncertainty band."""
    isl = max(1, round(base.mean_prompt))
    osl = max(1, round(base.mean_output))
    fixed = Lengths(
        fixed_lengths(1, isl), fixed_lengths(1, osl), f"fixed at the means {isl} / {osl}"
    )
    if usecase.lengths_trace is not None or usecase.length_cv > 0:
        return [("lengths fixed at their means", fixed)]
    rng = np.random.default_rng(usecase.search.seed)
    spread = _spread(usecase, isl, osl, VARIANT_CV, POOL, rng)
    return [(f"lengths spread (lognormal, CV {VARIANT_CV:g})", spread)]


def _spread(
    usecase: UseCase, isl: int, osl: int, cv: float, num: int, rng: np.random.Generator
) -> Lengths:
    window = get_model(usecase.model).max_position_embeddings
    prompt = lognormal_lengths(num, isl, cv * isl, rng)
    output = lognormal_lengths(num, osl, cv * osl, rng)
    if window is not None:  # as a client would: cut the prompt, then the output, to fit
        prompt = np.minimum(prompt, window - 1)
        output = np.minimum(output, window - prompt)
    source = f"lognormal around {isl} / {osl} tokens, CV {cv:g}"
    return Lengths(_read_only(prompt), _read_only(output), source)


def _from_trace(usecase: UseCase, num: int, rng: np.random.Generator) -> Lengths:
    path = usecase.lengths_trace
    assert path is not None
    trace = read_trace(path)
    rows = rng.integers(0, trace.num_requests, size=num)
    prompt = trace.num_prompt_tokens[rows]
    output = trace.num_output_tokens[rows]
    window = get_model(usecase.model).max_position_embeddings
    if window is not None:
        over = int(((trace.num_prompt_tokens + trace.num_output_tokens) > window).sum())
        if over:
            raise ValueError(
                f"lengths_trace: {over} of {trace.num_requests} requests in '{path}' exceed "
                f"{usecase.model}'s context window of {window} tokens"
            )
    source = f"{num} draws from {path.name} ({trace.num_requests} requests)"
    return Lengths(_read_only(prompt.astype(np.int64)), _read_only(output.astype(np.int64)), source)


def _read_only(values: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(values, dtype=np.int64)
    out.setflags(write=False)
    return out
