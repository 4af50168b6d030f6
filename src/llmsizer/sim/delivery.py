"""From engine token times to client token times: an API server that delivers the first chunk late.

The engine makes output token i at `t_i`. A real server's API layer can hold the stream's
first chunk for a while (the reference vLLM on a busy CPU sends it about 250 ms after the
engine made it, then the held tokens all at once: `examples/reference-server/README.md`).
With a first-token delay `D`, the client receives token i at

    max(t_i, t_0 + D)

so TTFT grows by `D`, tokens made during the hold arrive together at `t_0 + D`, and later
tokens arrive when made. E2E latency grows only when `D` outlasts the whole decode. The
engine itself is unaffected: a closed loop refills at the engine's finish, so the model
assumes `D` is shorter than a request's decode time (true for the measured server: ~250 ms
against ~1 s for 128 tokens).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from llmsizer.records import RequestRecord


def hold_first_token(record: RequestRecord, first_token_delay_s: float) -> RequestRecord:
    """`record` as the client sees it when the first chunk is held `first_token_delay_s` seconds.

    Tokens made before `first token + delay` arrive at that moment; `finish_s` follows the
    last token. A record without tokens, or a delay of 0, is returned unchanged.
    """
    if first_token_delay_s < 0:
        raise ValueError(f"first_token_delay_s must be >= 0, got {first_token_delay_s}")
    times = record.token_times_s
    if first_token_delay_s == 0 or times.shape[0] == 0:
        return record
    held = np.maximum(times, times[0] + first_token_delay_s)
    return dataclasses.replace(record, token_times_s=held, finish_s=float(held[-1]))
