"""The request lengths a plan simulates: fixed, spread around the means, or from a trace.

- fixed (`length_cv` 0): every request has the use case's input and output tokens;
- spread (`length_cv` > 0): log-normal input and output lengths with those means and a
  coefficient of variation `length_cv`, capped so that no request exceeds the model's window;
- trace (`lengths_trace`): (input, output) pairs drawn with replacement from the trace's rows,
  so each prompt keeps its own output length; rows over the model's window are left out.

`length_variants` gives the other distributions the uncertainty band tries: the same means
with a different spread, because the tail of the lengths, not only their means, sets p95s.
A spread that the context window would cut (NeMo 43B's 3500 + 500 tokens in a 4096 window)
changes the means, so it is not tried.
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
MEAN_TOLERANCE = 0.05  # a spread whose window-cut means move more than this is not tried


def build_lengths(usecase: UseCase, num_requests: int = POOL) -> Lengths:
    """The lengths `usecase` describes (module docstring), drawn with its search seed.

    Raises `ValueError` naming `lengths_trace` when no trace request fits the model's window.
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
    moved = max(abs(spread.mean_prompt / isl - 1), abs(spread.mean_output / osl - 1))
    if moved > MEAN_TOLERANCE:  # the window cut the tails: not the same means any more
        return []
    return [(f"lengths spread (lognormal, CV {VARIANT_CV:g})", spread)]


def cut_prompts(lengths: Lengths, max_prompt_tokens: int) -> Lengths | None:
    """`lengths` with every prompt cut to `max_prompt_tokens` (the most an engine without
    chunked prefill takes in one step), or None when the cut moves the mean prompt by more
    than `MEAN_TOLERANCE` (not the same distribution any more)."""
    prompt = np.minimum(lengths.prompt, max_prompt_tokens)
    if abs(prompt.mean() / lengths.mean_prompt - 1) > MEAN_TOLERANCE:
        return None
    source = f"{lengths.source}, prompts cut to {max_prompt_tokens}"
    return Lengths(_read_only(prompt), lengths.output, source)


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
    """Rows drawn with replacement; rows over the model's window are left out, as a server
    would refuse them (the source says how many)."""
    path = usecase.lengths_trace
    assert path is not None
    trace = read_trace(path)
    prompt, output = trace.num_prompt_tokens, trace.num_output_tokens
    window = get_model(usecase.model).max_position_embeddings
    note = ""
    if window is not None:
        fits = prompt + output <= window
        if not fits.any():
            raise ValueError(
                f"lengths_trace: every request in '{path}' exceeds {usecase.model}'s context "
                f"window of {window} tokens"
            )
        over = int((~fits).sum())
        if over:
            plural = "request" if over == 1 else "requests"
            note = f", {over} {plural} over the {window}-token window left out"
        prompt, output = prompt[fits], output[fits]
    rows = rng.integers(0, prompt.shape[0], size=num)
    source = f"{num} draws from {path.name} ({trace.num_requests} requests{note})"
    return Lengths(_read_only(prompt[rows]), _read_only(output[rows]), source)


def _read_only(values: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(values, dtype=np.int64)
    out.setflags(write=False)
    return out
