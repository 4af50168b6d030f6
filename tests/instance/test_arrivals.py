"""Arrivals come only from `llmsizer.workload`: one seed, one set of arrival times, on every
path that predicts a load (the GPU model, the fitted step cost, the plan's probes) and in
the benchmark client that measures it."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.bench import BenchSpec
from llmsizer.bench.spec import LoadPoint
from llmsizer.instance import DeploymentSpec, PredictSpec, make_instance, simulation_setup
from llmsizer.sizing.limits import Limits
from llmsizer.sizing.probe import Lengths, Probe
from llmsizer.workload import fixed_length_load, make_workload


def test_predict_and_the_fitted_path_and_bench_send_the_same_poisson_arrivals() -> None:
    spec = PredictSpec(
        model="llama-3.1-8b", gpu="h100-sxm", isl=128, osl=16, request_rate=3.0, seed=7,
        num_requests=200,
    )  # fmt: skip
    gpu_model = simulation_setup(spec).workload.arrival_s
    fitted = make_workload(
        fixed_length_load(128, 16, num_requests=200, request_rate=3.0, seed=7)
    ).arrival_s
    bench = BenchSpec(isl=128, osl=16, num_prompts=200, seed=7)
    sent = make_workload(bench.workload_spec(LoadPoint("request_rate", 3.0))).arrival_s
    assert gpu_model is not None and fitted is not None and sent is not None
    np.testing.assert_array_equal(gpu_model, fitted)
    np.testing.assert_array_equal(gpu_model, sent)
    assert gpu_model[0] == 0.0 and np.mean(np.diff(gpu_model)) == pytest.approx(1 / 3, rel=0.15)


def test_data_parallel_instances_each_see_a_share_of_the_rate_from_the_same_seed() -> None:
    spec = PredictSpec(
        model="llama-3.1-8b", gpu="h100-sxm", num_gpus=4, isl=128, osl=16, request_rate=8.0,
        seed=3, num_requests=400,
    )  # fmt: skip
    share = simulation_setup(spec).workload.arrival_s
    alone = make_workload(fixed_length_load(128, 16, num_requests=100, request_rate=2.0, seed=3))
    assert share is not None and alone.arrival_s is not None
    np.testing.assert_array_equal(share, alone.arrival_s)


def test_a_plan_probe_offers_the_workload_poisson_process_at_every_rate() -> None:
    deployment = DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm")
    instance = make_instance(deployment, max_model_len=144)
    lengths = Lengths(np.full(4, 128), np.full(4, 16), "fixed")
    probe = Probe(instance, lengths, Limits(ttft_s=1.0), seed=11, num_requests=50)
    for rate in (0.5, 4.0):
        run = probe.run(rate)
        arrivals = np.array(sorted(r.arrival_s for r in run.records))
        expected = make_workload(
            fixed_length_load(128, 16, num_requests=len(arrivals), request_rate=rate, seed=11)
        ).arrival_s
        np.testing.assert_allclose(arrivals, expected, rtol=1e-12)
