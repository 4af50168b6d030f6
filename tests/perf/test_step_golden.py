"""Golden step costs: `StepModel` against a table computed by the implementation before the
single step formula (commit 5a18a44, three hand-kept copies of the sum), so that the one
formula changed no number.

Each row: (deployment, batch) -> (step latency, stage interval) in seconds, under factors
that make every term nonzero (eager prefill launches included). The latency is what the
simulator uses and must match to the last bit in practice; the tolerance is 1e-12.

Changed on purpose since: the all-reduce latency on a one-hop fabric (`mla-tp8` on B200 and
`int4-kv8-tp4` on A100 SXM, both NVSwitch) is 2 hops, not a ring's 2 (tp - 1): those rows are
lower by 2 L (2 (tp - 1) - 2) x 3 us (4.392 ms and 1.92 ms), every other row is unchanged.
The MoE rows' steps with prompt work (`moe-tp2`, `moe-window`) compute their experts' grouped
GEMM in whole tiles of 64 rows (`perf.step.padded_rows`, moeprompt10): 2-9 % dearer; their
decode steps, and every step of `mla-tp8` (memory-bound experts), are unchanged.
The same three rows' steps with prompt work pay their eager launches per kind of layer
(`perf.launches`, eager11): (launches / 12 - layers) x 80 us dearer, Mixtral +1.07 ms,
gpt-oss-20b +0.80 ms, DeepSeek-V3 +5.92 ms; every dense row is unchanged.
The same three rows' every step pays `layer_overhead_s` per dense layer's kernels
(`perf.launches.layer_units`, tpot12): (units - layers) x 20 us dearer, Mixtral +0.267 ms,
gpt-oss-20b +0.200 ms, DeepSeek-V3 +1.48 ms; every dense row is unchanged.
"""

import pytest

from llmsizer.perf.batch_shape import BatchShape, ChunkShape, decode_batch, prefill_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.sparsity import StructuredSparsity
from llmsizer.perf.step import StepModel

FACTORS = EfficiencyFactors(
    gemm_compute_efficiency=0.55,
    gemm_bandwidth_efficiency=0.8,
    attention_compute_efficiency=0.45,
    attention_bandwidth_efficiency=0.65,
    interconnect_efficiency=0.7,
    collective_hop_latency_s=3e-6,
    layer_overhead_s=20e-6,
    prefill_layer_overhead_s=80e-6,
    step_overhead_s=4e-4,
)
# name -> (model, GPU, precision, kv_cache_dtype, tensor_parallel_size, pipeline_parallel_size,
# sparsity)
DEPLOYMENTS = {
    "dense": ("llama-3.1-8b", "h100-sxm", "bf16", None, 1, 1, None),
    "fp8": ("llama-3.1-8b", "h100-sxm", "fp8", None, 1, 1, None),
    "moe-tp2": ("mixtral-8x7b", "h100-sxm", "bf16", None, 2, 1, None),
    "window": ("mistral-7b", "l40s", "fp8", None, 1, 1, None),
    "moe-window": ("gpt-oss-20b", "h100-sxm", "mxfp4", None, 1, 1, None),
    "mla-tp8": ("deepseek-v3", "b200", "fp8", None, 8, 1, None),
    "tp2-pp4": ("llama-3.1-70b", "h100-sxm", "bf16", None, 2, 4, None),
    "sparse": ("llama-2-70b", "h100-sxm", "fp8", None, 1, 1, StructuredSparsity()),
    "int4-kv8-tp4": ("llama-3.1-70b", "a100-sxm-80gb", "int4", "fp8", 4, 1, None),
}
BATCHES = {
    "empty": BatchShape(),
    "decode-1": decode_batch(1, 1000),
    "decode-64": decode_batch(64, 4096),
    "decode-256-long": decode_batch(256, 30_000),
    "prefill-4096": prefill_batch(1, 4096),
    "prefill-1-token": prefill_batch(1, 1),
    "prefill-4x512-cached": prefill_batch(4, 512, 1024),
    "chunk+decode": BatchShape((ChunkShape(2048, 6144),), 31, 31 * 1500),
    "chunks+decode": BatchShape((ChunkShape(512, 0), ChunkShape(256, 8192)), 200, 200 * 3000),
}
GOLDEN = {
    ("dense", "empty"): (0.0, 0.0),
    ("dense", "decode-1"): (0.006705227506773824, 0.006705227506773824),
    ("dense", "decode-64"): (0.022710644654879448, 0.022710644654879448),
    ("dense", "decode-256-long"): (0.4710270287951339, 0.4710270287951339),
    ("dense", "prefill-4096"): (0.12815637940772426, 0.12815637940772426),
    ("dense", "prefill-1-token"): (0.009205093900344432, 0.009205093900344432),
    ("dense", "prefill-4x512-cached"): (0.0642235964886217, 0.0642235964886217),
    ("dense", "chunk+decode"): (0.08210422150852943, 0.08210422150852943),
    ("dense", "chunks+decode"): (0.06990569949986054, 0.06990569949986054),
    ("fp8", "empty"): (0.0, 0.0),
    ("fp8", "decode-1"): (0.004101002933639495, 0.004101002933639495),
    ("fp8", "decode-64"): (0.02010642008174512, 0.02010642008174512),
    ("fp8", "decode-256-long"): (0.46774399990977217, 0.46774399990977217),
    ("fp8", "prefill-4096"): (0.07562791724193622, 0.07562791724193622),
    ("fp8", "prefill-1-token"): (0.006600869327210104, 0.006600869327210103),
    ("fp8", "prefill-4x512-cached"): (0.03795936540572769, 0.03795936540572769),
    ("fp8", "chunk+decode"): (0.05544243614654863, 0.05544243614654864),
    ("fp8", "chunks+decode"): (0.05749174652708642, 0.05749174652708642),
    ("moe-tp2", "empty"): (0.0, 0.0),
    ("moe-tp2", "decode-1"): (0.006484183895059501, 0.006484183895059501),
    ("moe-tp2", "decode-64"): (0.027348179463492387, 0.027348179463492384),
    ("moe-tp2", "decode-256-long"): (0.2518219865952945, 0.2518219865952945),
    ("moe-tp2", "prefill-4096"): (0.1250340607175579, 0.1250340607175579),
    ("moe-tp2", "prefill-1-token"): (0.010080783758511472, 0.01008078375851147),
    ("moe-tp2", "prefill-4x512-cached"): (0.06557946847372448, 0.06557946847372448),
    ("moe-tp2", "chunk+decode"): (0.0749318758486398, 0.07493187584863982),
    ("moe-tp2", "chunks+decode"): (0.05389687077461954, 0.05389687077461954),
    ("window", "empty"): (0.0, 0.0),
    ("window", "decode-1"): (0.011766546096866098, 0.011766546096866096),
    ("window", "decode-64"): (0.07375440045584045, 0.07375440045584045),
    ("window", "decode-256-long"): (0.2604676284900285, 0.2604676284900285),
    ("window", "prefill-4096"): (0.20857843043466856, 0.20857843043466853),
    ("window", "prefill-1-token"): (0.014093389173789175, 0.014093389173789175),
    ("window", "prefill-4x512-cached"): (0.10121867349719946, 0.10121867349719946),
    ("window", "chunk+decode"): (0.132010658814775, 0.13201065881477497),
    ("window", "chunks+decode"): (0.19004560427769174, 0.19004560427769174),
    ("moe-window", "empty"): (0.0, 0.0),
    ("moe-window", "decode-1"): (0.002130164823880597, 0.0021301648238805974),
    ("moe-window", "decode-64"): (0.00872696378212591, 0.00872696378212591),
    ("moe-window", "decode-256-long"): (0.09385415587946291, 0.09385415587946293),
    ("moe-window", "prefill-4096"): (0.06298046678734465, 0.06298046678734466),
    ("moe-window", "prefill-1-token"): (0.004924736383706024, 0.004924736383706024),
    ("moe-window", "prefill-4x512-cached"): (0.034021857002808235, 0.034021857002808235),
    ("moe-window", "chunk+decode"): (0.04033643705269848, 0.04033643705269848),
    ("moe-window", "chunks+decode"): (0.02713276187237358, 0.027132761872373578),
    ("mla-tp8", "empty"): (0.0, 0.0),
    ("mla-tp8", "decode-1"): (0.004652252533688534, 0.004652252533688534),
    ("mla-tp8", "decode-64"): (0.020178558794348413, 0.020178558794348413),
    ("mla-tp8", "decode-256-long"): (0.12833684452835778, 0.12833684452835778),
    ("mla-tp8", "prefill-4096"): (0.08469959878223957, 0.08469959878223957),
    ("mla-tp8", "prefill-1-token"): (0.015438226214407815, 0.015438226214407815),
    ("mla-tp8", "prefill-4x512-cached"): (0.05534896721885851, 0.0553489672188585),
    ("mla-tp8", "chunk+decode"): (0.06383608156245867, 0.06383608156245867),
    ("mla-tp8", "chunks+decode"): (0.049978670563926075, 0.04997867056392607),
    ("tp2-pp4", "empty"): (0.0, 0.0),
    ("tp2-pp4", "decode-1"): (0.029000084192458947, 0.007844963872184862),
    ("tp2-pp4", "decode-64"): (0.050058230095558834, 0.013119653327064312),
    ("tp2-pp4", "decode-256-long"): (0.6178988972413217, 0.15514947563014264),
    ("tp2-pp4", "prefill-4096"): (0.6171975575053832, 0.15494758020041596),
    ("tp2-pp4", "prefill-1-token"): (0.03532491718442221, 0.009426172120175678),
    ("tp2-pp4", "prefill-4x512-cached"): (0.3088500787235458, 0.0778345244690409),
    ("tp2-pp4", "chunk+decode"): (0.35227939687039883, 0.08869640545043553),
    ("tp2-pp4", "chunks+decode"): (0.1994405551453136, 0.05049743488023979),
    ("sparse", "empty"): (0.0, 0.0),
    ("sparse", "decode-1"): (0.01833014024523536, 0.018330140245235358),
    ("sparse", "decode-64"): (0.058927959263375435, 0.058927959263375435),
    ("sparse", "decode-256-long"): (1.1825916721893892, 1.1825916721893892),
    ("sparse", "prefill-4096"): (0.44704782240687513, 0.4470478224068751),
    ("sparse", "prefill-1-token"): (0.02457980622916188, 0.024579806229161883),
    ("sparse", "prefill-4x512-cached"): (0.21856225679290706, 0.21856225679290706),
    ("sparse", "chunk+decode"): (0.29953644692545756, 0.2995364469254576),
    ("sparse", "chunks+decode"): (0.2044053683455553, 0.20440536834555528),
    ("int4-kv8-tp4", "empty"): (0.0, 0.0),
    ("int4-kv8-tp4", "decode-1"): (0.008799080408000043, 0.00879908040800004),
    ("int4-kv8-tp4", "decode-64"): (0.02606793956433679, 0.026067939564336794),
    ("int4-kv8-tp4", "decode-256-long"): (0.29978887799612053, 0.29978887799612053),
    ("int4-kv8-tp4", "prefill-4096"): (0.9859335311485103, 0.9859335311485103),
    ("int4-kv8-tp4", "prefill-1-token"): (0.015168206269093338, 0.015168206269093338),
    ("int4-kv8-tp4", "prefill-4x512-cached"): (0.49046655431958114, 0.49046655431958114),
    ("int4-kv8-tp4", "chunk+decode"): (0.5553031714970988, 0.5553031714970987),
    ("int4-kv8-tp4", "chunks+decode"): (0.26063561495295634, 0.2606356149529564),
}


def step_model(name: str) -> StepModel:
    model, gpu, precision, kv, tp, pp, sparsity = DEPLOYMENTS[name]
    deployment = Deployment.from_names(
        model,
        gpu,
        precision,
        kv,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        sparsity=sparsity,
    )
    return StepModel(deployment, FACTORS)


def test_the_table_covers_every_deployment_and_batch():
    assert set(GOLDEN) == {(d, b) for d in DEPLOYMENTS for b in BATCHES}


@pytest.mark.parametrize("name", DEPLOYMENTS)
def test_step_costs_match_the_golden_table(name):
    step = step_model(name)
    for batch_name, batch in BATCHES.items():
        latency_s, interval_s = GOLDEN[name, batch_name]
        breakdown = step.breakdown(batch)
        assert step(batch) == pytest.approx(latency_s, rel=1e-12, abs=0.0), batch_name
        assert breakdown.time_s == step(batch)
        assert breakdown.stage_interval_s == pytest.approx(interval_s, rel=1e-12, abs=0.0)
        parts_s = sum(p.time_s for p in breakdown.parts)
        assert parts_s == pytest.approx(latency_s, rel=1e-12, abs=0.0), batch_name
