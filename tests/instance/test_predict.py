"""`predict` against the step model it simulates, and against queueing common sense."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from llmsizer.instance import PredictSpec, make_instance, predict
from llmsizer.instance.predict import _Metered
from llmsizer.instance.setup import simulation_setup
from llmsizer.perf import StepModel
from llmsizer.sim import Batch, PrefillChunk

BASE = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "precision": "fp8", "isl": 512, "osl": 128}


def spec(**kw: object) -> PredictSpec:
    return PredictSpec.model_validate({**BASE, **kw})


def test_batch_one_tpot_and_ttft_are_the_step_model_at_batch_one() -> None:
    s = spec(concurrency=1, num_requests=4)
    p = predict(s)
    step = make_instance(s, max_model_len=s.isl + s.osl).step
    prefill = step(Batch(prefill_chunks=(PrefillChunk(512, 0),)))
    decode_first = step(Batch(num_decode_seqs=1, num_decode_context_tokens=512))
    decode_last = step(Batch(num_decode_seqs=1, num_decode_context_tokens=512 + 126))
    hold = step.efficiency.first_token_delay_s  # the front end's first-chunk hold
    assert p.summary["mean_ttft_ms"] == pytest.approx((prefill + hold) * 1e3, rel=1e-9)
    # tokens made during the hold arrive with the first (`sim.delivery`): TPOT is the decode
    # steps less the hold spread over the output
    low = decode_first - hold / (s.osl - 1)
    assert low * 1e3 <= p.summary["mean_tpot_ms"] <= decode_last * 1e3


def test_throughput_rises_with_concurrency_and_saturates() -> None:
    tput = [predict(spec(concurrency=c)).summary["output_throughput"] for c in (1, 4, 16, 64, 256)]
    assert all(b > a for a, b in itertools.pairwise(tput))
    gains = [b / a for a, b in itertools.pairwise(tput)]
    assert gains[-1] < gains[0]  # diminishing returns
    offline = predict(spec(offline=True)).summary["output_throughput"]
    assert offline >= 0.9 * tput[-1]


def test_latency_grows_with_load() -> None:
    low = predict(spec(request_rate=1.0)).summary
    high = predict(spec(request_rate=40.0)).summary
    assert high["mean_tpot_ms"] > low["mean_tpot_ms"]
    assert low["request_throughput"] == pytest.approx(1.0, rel=0.1)


def test_data_parallel_instances_scale_throughput_not_per_gpu() -> None:
    one = predict(spec(concurrency=8))
    two = predict(spec(concurrency=16, num_gpus=2))
    assert two.summary["output_throughput"] == pytest.approx(
        2 * one.summary["output_throughput"], rel=1e-6
    )
    assert two.summary["output_throughput_per_gpu"] == pytest.approx(
        one.summary["output_throughput_per_gpu"], rel=1e-6
    )


def test_decode_at_small_batch_is_bandwidth_bound() -> None:
    p = predict(spec(concurrency=1, num_requests=4, isl=16, osl=256))
    assert p.mbu > 0.4 and p.mfu < 0.05
    big = predict(spec(offline=True, isl=4096, osl=1))
    assert big.mfu > 0.3


def test_bad_cases_get_clear_errors() -> None:
    with pytest.raises(ValueError, match="exactly one load"):
        spec(concurrency=1, offline=True)
    with pytest.raises(ValueError, match="num_gpus=3 is not a multiple of tp x pp x dp = 2"):
        spec(concurrency=1, tp=2, num_gpus=3)
    with pytest.raises(ValueError, match="does not fit"):
        predict(spec(model="llama-3.1-405b", gpu="l4", concurrency=1))


class _MeasuredOneByOne:
    """The GPU model's measures without `measure_decode_run`: `_Metered` then has the
    engine price every decode step alone."""

    def __init__(self, step: StepModel) -> None:
        self.measure = step.measure
        self.measure_decode = step.measure_decode


@pytest.mark.parametrize(
    ("engine", "load"),
    [
        ("vllm", {"concurrency": 16}),
        ("trtllm", {"concurrency": 16}),
        ("sglang", {"concurrency": 16}),
        ("vllm", {"request_rate": 1.5}),  # quiet runs cut by arrivals (issue 11, speed12)
        ("trtllm", {"request_rate": 6.0}),
    ],
)
def test_mbu_and_mfu_sum_the_same_steps_with_decode_runs_priced_at_once(
    engine: str, load: dict[str, float]
) -> None:
    """`predict` meters every step (`_Metered`); decode steps priced at once by the engine
    (`sim.engine._Run._quiet_run`) add up to the same FLOPs, bytes and seconds, to the bit:
    the engine prices no step it does not run."""
    spec = PredictSpec(
        model="llama-3.1-8b", gpu="h100-sxm", precision="fp8", engine=engine,
        isl=1500, osl=700, num_requests=64, **load,
    )  # fmt: skip
    setup = simulation_setup(spec)
    step = setup.instance.step
    assert isinstance(step, StepModel)
    meters = [_Metered(step), _Metered(_MeasuredOneByOne(step))]  # type: ignore[arg-type]
    results = [setup.instance.simulator(setup.engine, m).run(setup.workload) for m in meters]
    assert meters[0].decode_run_s is not None and meters[1].decode_run_s is None
    sums = [(m.flops, m.bytes, m.time_s) for m in meters]
    assert sums[0] == sums[1]
    assert np.array_equal(results[0].records.token_buffer, results[1].records.token_buffer)
