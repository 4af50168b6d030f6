"""Disaggregated deployments joined with the catalog: engines per pool, the KV link."""

from __future__ import annotations

import math

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.instance.disagg import kv_transfer, make_disaggregated
from llmsizer.instance.instance import make_instance
from llmsizer.instance.speculation import SpeculativeSpec
from llmsizer.specs import get_gpu, get_system
from llmsizer.workload import fixed_length_load, make_workload

LLAMA_8B = DeploymentSpec.model_validate(
    {"model": "llama-3.1-8b", "gpu": "h100-sxm", "precision": "bf16"}
)
# Llama 3.1 8B: 32 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes (BF16 KV cache)
LLAMA_8B_KV_BYTES_PER_TOKEN = 32 * 8 * 128 * 2 * 2


def test_the_link_moves_each_gpus_kv_share_at_the_catalog_bandwidth() -> None:
    inst = make_instance(LLAMA_8B)
    assert inst.memory.kv_bytes_per_token == LLAMA_8B_KV_BYTES_PER_TOKEN
    nvlink = kv_transfer(inst, inst, "nvlink")
    assert nvlink.bytes_per_token == LLAMA_8B_KV_BYTES_PER_TOKEN
    assert nvlink.bytes_per_s == get_gpu("h100-sxm").scale_up_bytes_per_s
    network = kv_transfer(inst, inst, "network", get_system("dgx-h100"))
    assert network.bytes_per_s == 50e9  # 400 Gb/s ConnectX-7 per GPU (DGX H100 datasheet)
    # 8k tokens of Llama 3.1 8B KV (1 GiB) across one NIC: 21.5 ms
    assert network.seconds(8192) == pytest.approx(8192 * 131072 / 50e9)


def test_tensor_parallel_pools_send_their_shards_in_parallel() -> None:
    tp2 = make_instance(LLAMA_8B.model_copy(update={"tensor_parallel_size": 2}))
    one = make_instance(LLAMA_8B)
    link = kv_transfer(tp2, tp2, "nvlink")
    assert link.bytes_per_token == LLAMA_8B_KV_BYTES_PER_TOKEN / 2
    # a TP 1 side receives (or sends) the whole token over its one link
    assert kv_transfer(tp2, one, "nvlink").bytes_per_token == LLAMA_8B_KV_BYTES_PER_TOKEN


def test_make_disaggregated_builds_both_pools() -> None:
    d = make_disaggregated(LLAMA_8B, LLAMA_8B, num_prefill=2, num_decode=3, link="nvlink")
    assert len(d.prefill) == 2 and len(d.decode) == 3 and d.num_gpus == 5
    assert d.transfer.bytes_per_s == get_gpu("h100-sxm").scale_up_bytes_per_s


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_prefill": 0, "num_decode": 1, "link": "nvlink"}, "P:D = 0:1"),
        ({"num_prefill": 1, "num_decode": 0, "link": "nvlink"}, "P:D = 1:0"),
        ({"num_prefill": 1, "num_decode": 1, "link": 1e9}, "slower than every link"),
        ({"num_prefill": 1, "num_decode": 1, "link": math.nan}, "slower than every link"),
        ({"num_prefill": 1, "num_decode": 1, "link": "network"}, "needs a system"),
        ({"num_prefill": 1, "num_decode": 1, "link": "carrier pigeon"}, "unknown KV link"),
    ],
)
def test_bad_disaggregated_deployments_are_refused(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=message):
        make_disaggregated(LLAMA_8B, LLAMA_8B, **kwargs)


def test_a_speculating_decode_pool_runs_verify_steps_and_keeps_every_token() -> None:
    # one client, 66-token answers: the prefill yields token 1, the decode pool the other 65
    # in ceil(65 / E) verify steps, E = (1 - a^(k+1)) / (1 - a) (Leviathan et al. eq. 1)
    k, a, osl, n = 3, 0.7, 66, 4
    spec = SpeculativeSpec(
        num_speculative_tokens=k, method="mtp", acceptance_rate=a, acceptance_std=0.0
    )
    decode = LLAMA_8B.model_copy(update={"speculative": spec})
    load = make_workload(fixed_length_load(512, osl, num_requests=n, concurrency=1))
    plain = make_disaggregated(LLAMA_8B, LLAMA_8B, num_prefill=1, num_decode=1, link="nvlink")
    drafting = make_disaggregated(LLAMA_8B, decode, num_prefill=1, num_decode=1, link="nvlink")
    assert drafting.speculative is not None and 0 < drafting.decode_kv_fraction < 1
    before, after = plain.run(load), drafting.run(load)
    assert [r.num_output_tokens for r in after.records] == [osl] * n
    per_step = (1 - a ** (k + 1)) / (1 - a)
    assert len(after.decode[0].steps.end_s) == n * math.ceil((osl - 1) / per_step)
    assert len(before.decode[0].steps.end_s) == n * (osl - 1)
    # one sequence at a time: a weight-bound step verifies 4 tokens for about the price of 1
    tpot = [sum(r.tpot_s or 0 for r in run.records) for run in (before, after)]
    assert tpot[1] < tpot[0] / 1.5
