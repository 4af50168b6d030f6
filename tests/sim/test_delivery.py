"""A held first chunk: TTFT grows by the delay, held tokens arrive together, E2E stays."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.records import RequestRecord
from llmsizer.sim import Engine, EngineConfig, FixedTicks
from llmsizer.sim.delivery import hold_first_token

from .conftest import make_workload


def test_tokens_made_during_the_hold_arrive_with_the_first() -> None:
    r = RequestRecord(0, 0.0, 8, 4, token_times_s=np.array([1.0, 1.1, 1.2, 1.5]), finish_s=1.5)
    held = hold_first_token(r, 0.25)
    assert held.token_times_s.tolist() == [1.25, 1.25, 1.25, 1.5]
    assert held.ttft_s == pytest.approx(r.ttft_s + 0.25)
    assert held.e2el_s == r.e2el_s


def test_a_hold_longer_than_the_decode_moves_the_finish() -> None:
    r = RequestRecord(0, 0.0, 8, 2, token_times_s=np.array([1.0, 1.1]), finish_s=1.1)
    assert hold_first_token(r, 0.5).finish_s == 1.5


def test_no_delay_and_no_tokens_change_nothing() -> None:
    r = RequestRecord(0, 0.0, 8, 2, token_times_s=np.array([1.0, 1.1]), finish_s=1.1)
    failed = RequestRecord(1, 0.0, 8, 2, error="http 500")
    assert hold_first_token(r, 0.0) is r
    assert hold_first_token(failed, 0.3) is failed
    with pytest.raises(ValueError, match="first_token_delay_s"):
        hold_first_token(r, -0.1)


def test_engine_applies_the_delay_to_every_record() -> None:
    cfg = EngineConfig(max_num_seqs=1)
    workload = make_workload(64, 40, n=3, concurrency=1)
    plain = Engine(cfg, FixedTicks(0.01)).run(workload).records
    held = Engine(cfg, FixedTicks(0.01), 0.1).run(workload).records
    for p, h in zip(plain, held, strict=True):
        assert h.ttft_s == pytest.approx(p.ttft_s + 0.1)
        assert h.finish_s == p.finish_s
        assert h.arrival_s == p.arrival_s  # the engine itself runs the same schedule
    with pytest.raises(ValueError, match="first_token_delay_s"):
        Engine(cfg, FixedTicks(0.01), -1.0)
