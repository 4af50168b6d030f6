"""SGLang's admission of requests that ignore EOS: the KV they will hold, projected.

SGLang 0.5.9 and 0.5.10 (`PrefillAdder.add_one_req_ignore_eos`, `srt/managers/
schedule_policy.py`, read in the PyPI wheels) take this path for every request with
`ignore_eos` while the radix cache is off (`--disable-radix-cache`: a `ChunkCache`, whose
`disable` is True). A request's output is then known to be its `max_new_tokens`, so before
admitting one the scheduler checks that the requests running, those already added to this
prefill batch and the new one can all decode to their end without running out of KV:

    sort the requests by tokens left to generate, t_1 <= t_2 <= ... <= t_n
    (t = max_new_tokens - generated; a request with none left is skipped)
    just before the i-th one finishes, t_i steps from now, the n - i + 1 requests still
    running have each grown by t_i tokens and the i - 1 that finished have given back
    the tokens they held now (prompt + generated, `tokens_occupied`):

        free_i = free - new_prompt + sum_{j < i} occupied_j - t_i x (n - i + 1)

    admit only if free_i > (n - i + 1) for every i (`IGNORE_EOS_RESERVE_TOKENS` 1 a request)

`free` is the pool's free tokens after this batch's prompts so far (`cur_rem_tokens`). A
refused request sets the running batch full (`batch_is_full`), and no prefill batch is
built until a request finishes; the check is invariant under decode steps meanwhile (each
step takes n tokens from `free`, adds one to each of the i - 1 earlier occupied counts and
takes one from t_i, which frees n - i + 1), so the refusal holds exactly that long.

Not modelled: the same path first refuses a prompt larger than `rem_total_tokens`, the pool
less `new_token_ratio` x the running requests' remaining outputs (at most 4096 each); the
projected check binds first whenever the outputs are long enough to matter.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from llmsizer.sim.request import SimRequest, Status

RESERVE_TOKENS = 1  # IGNORE_EOS_RESERVE_TOKENS, schedule_policy.py (0.5.9, 0.5.10)


def fits_projected(
    free_tokens: float, new: SimRequest, running: Iterable[SimRequest], clock: int
) -> bool:
    """Whether `new` may join with `free_tokens` free (module docstring); `clock` is the
    decode set's, from which a decoding request's counters follow (`sim.decode_set`)."""
    left = [new.num_output_tokens - new.num_generated]
    held = [new.num_tokens]
    for r in running:
        if r.status is Status.DECODING:
            left.append(r.finish_clock - clock)
            held.append(r.num_tokens + clock - r.decode_entry_clock)
        else:
            left.append(r.num_output_tokens - r.num_generated)
            held.append(r.num_tokens)
    return projected_ok(free_tokens - (new.num_tokens - new.num_computed_tokens), left, held)


def projected_ok(free_tokens: float, tokens_left: list[int], tokens_held: list[int]) -> bool:
    """The check of the module docstring on plain counts: `tokens_left[j]` tokens still to
    generate and `tokens_held[j]` held now, per request; `free_tokens` after the prompt."""
    left = np.asarray(tokens_left, dtype=np.float64)
    held = np.asarray(tokens_held, dtype=np.float64)
    keep = left > 0
    left, held = left[keep], held[keep]
    order = np.argsort(left, kind="stable")
    left, held = left[order], held[order]
    num_alive = np.arange(len(left), 0, -1, dtype=np.float64)
    freed = np.concatenate(([0.0], np.cumsum(held)[:-1]))
    return bool(np.all(free_tokens + freed - left * num_alive > RESERVE_TOKENS * num_alive))
