"""The scheduler settings each AIC row's engine was launched with: defaults per engine and GPU,
and the overrides of the InferenceX benchmark scripts.

A measurement only says what the engine did with the settings it ran with, so a prediction
must use the same ones. `launch_settings(...)` gives the `EngineConfig` keys (vLLM names) that
differ from the preset for one row; `docs/aic_measurement.md` section 2 has the sources, read
in the engines' wheels and the scripts at the commits named there:

- **vLLM** (`EngineArgs.get_batch_defaults`, 0.17 / 0.19): 8192 tokens, 1024 sequences on
  GPUs with >= 70 GiB: the preset. InferenceX: MiniMax-M2.5 `--max-num-batched-tokens
  2 x ISL` (`minimaxm2.5_fp8_b200.sh` @ 20073baf); Kimi-K2.5 `--max-num-seqs CONC`
  (`kimik2.5_{fp4,int4}_b200.sh`); Llama-3.3-70B FP8 `--max-num-seqs` 512 on B200, CONC on
  H100 (`70b_fp8_{b200,h100}_docker.sh` @ c198b20e).
- **SGLang** 0.5.9 (`server_args.py`): `chunked_prefill_size` 8192 below 160 GB of GPU
  memory, 16384 above (B200, B300). InferenceX: DeepSeek-R1/V3 FP8 at TP8 chunk 32768 and
  `--max-running-requests` 128, at TP4 8192 and 32; NVFP4 16384 and 256
  (`dsr1_fp{8,4}_b200.sh` @ 20073baf); Qwen3.5 32768 and 128 (memory 0.82, NVFP4 0.85); its
  B300 scripts (the 0.5.10.post1 rows, 2026-04-17/18): FP8 16384, CONC, receive interval 10,
  memory 0.8 (`qwen3.5_fp8_b300.sh` @ c0f62a2e), NVFP4 memory 0.8 (@ 8acbd08b), BF16 the
  B200 script's 0.82 and the rest (`qwen3.5_bf16_b300.sh` @ 32274d6c1); GLM-5 32768
  and CONC. The DeepSeek (NVFP4 since 2025-09, FP8) and Qwen3.5 scripts set
  `--scheduler-recv-interval` 30 at CONC >= 16, else 10; FP8 at TP4 always 10
  (`SCHEDULER_RECV_INTERVAL`). The caps are, in the scripts' words, "the maximum concurrency" of
  the official sweep (`nvidia-master.yaml` @ cdcf0df1 runs DeepSeek FP8 TP8 at CONC <= 64, TP4
  <= 32). Rows above a cap ran with a cap of at least CONC: DeepSeek-R1 FP8 TP8 1k/1k at CONC
  512 has a mean TTFT of 3.1 s at 69 ms TPOT, where a cap of 128 would hold 384 clients for
  about a whole request (~70 s). So the cap is `max(script cap, CONC)`; those DeepSeek rows are
  the MTP sweep's, launched by its script (`llmsizer.calibrate.aic_agg_sweeps`).
  All run `--disable-radix-cache`, the client `--ignore-eos`: SGLang admits a prompt only while
  every running request can decode to its end (`kv_reservation` `projected`, 0.5.9 / 0.5.10
  `PrefillAdder.add_one_req_ignore_eos`, `sim.batching.projected_kv`; aic_measurement §21);
  the radix cache off is `enable_prefix_caching` false (a hybrid model's states: `perf.memory`).
- **TensorRT-LLM** (`llm_args.py`): `max_num_tokens` 8192, chunked context off: the preset.
  InferenceX: Llama-70B `--max_num_tokens 16384`, `max_batch_size` 1024
  (`70b_fp8_b200_trt_slurm.sh` @ c198b20e); DeepSeek-R1/V3 `max(8192, ceil64(CONC + ISL +
  64))` tokens and `max_batch_size` CONC (`dsr1_fp{4,8}_b200_trt.sh` @ 626932a1); rows measured
  before the floor (@ 64af5a77, 2026-01-21; images "" and 1.1.x) ran `ceil64(...)` (@ 2ee1e001).
  Delay batching (`batch_wait_timeout_iters` / `batch_wait_max_tokens_ratio`): Llama-70B at
  1k/1k below TP8 20 / 0.9 (`70b_fp8_b200_trt_slurm.sh` @ c198b20e: "will improve the
  performance"); DeepSeek FP8 at 1k/1k from CONC 64, 40 / 0.8, since the move to TRT-LLM
  1.2.0rc6 (`dsr1_fp8_b200_trt.sh` @ ec7bafaa, 2026-01-29). TensorRT-LLM turns it off under
  attention data parallelism (`PyExecutor._schedule`). DeepSeek with attention DP: balancing,
  `attention_dp_config` {enable_balance, timeout_iters 60, batching_wait_iters 0} (same scripts).

Every row schedules one step ahead (`overlap_scheduler`, `docs/aic_measurement.md` section 16):
TensorRT-LLM's overlap scheduler (`llm_args.py`), vLLM's async scheduling (vllm-project/vllm#27614)
and SGLang's overlap schedule: each engine's default, turned off by no InferenceX script.
Memory fractions, each in its engine's meaning (`llmsizer.perf.memory.MemoryRule`): vLLM
Kimi-K2.5 INT4 `--gpu-memory-utilization 0.95`; SGLang DeepSeek-R1/V3 FP8
`--mem-fraction-static` 0.82 at TP8 and 0.95 at TP4, NVFP4 0.85, Qwen3.5 0.82 (above), GLM-5 0.85;
TensorRT-LLM DeepSeek-R1/V3 `free_gpu_memory_fraction: 0.8` (the same scripts). The rest
launch at 0.9, the default here (vLLM's default, TensorRT-LLM's too).

AIC's own gap-analysis rows keep the engine defaults, but TensorRT-LLM 1.0.0rc3's, which
ran AIC's template of the time (`llmsizer.calibrate.aic_gap_launch`, section 47).

Linear-attention state dtype (`sglang_state_dtype`): every InferenceX SGLang Qwen3.5 FP8 and
NVFP4 script launches `--mamba-ssm-dtype bfloat16` from its first commit (B200 FP8
`qwen3.5_fp8_b200.sh` @ efd49e50b, 2026-03-03; NVFP4 `qwen3.5_fp4_b200.sh` @ 48d35c480,
2026-04-08; B300 `qwen3.5_fp8_b300.sh` @ c0f62a2e, `qwen3.5_fp4_b300.sh` @ 8acbd08b), so the
Gated DeltaNet state is half the config's float32; the BF16 scripts (`qwen3.5_bf16_b200.sh`,
`_b300.sh`) never set it, nor does AIC's generator (`backend_templates/sglang/cli_args.*.j2`).
A row measured before its precision's script existed (by day: the rows give dates) ran no
such script and keeps the config's dtype.

MTP speculative decoding (`mtp_speculation`; `docs/aic_measurement.md` section 14): the rows
an InferenceX MTP sweep ran (`llmsizer.calibrate.aic_launches`) speculate with the model's
own MTP head, `num_speculative_tokens` k its draft tokens per step:
- TensorRT-LLM `speculative_config {decoding_type: MTP, num_nextn_predict_layers: k}`: the
  sweep's `DECODE_MTP_SIZE` / the GB200 script's `gen_mtp_size` (`launch_gb200-nv.sh` @
  450d834a), else `mtpK` in its srt-slurm recipe's name (`..._eplb0_mtp3.yaml`); a recipe
  that names no k (one, `ctx1_gen1_dep32_batch8_eplb0_mtp.yaml`) gets 3, the value of 205 of
  the table's 279 TensorRT-LLM MTP sweeps that name one.
- SGLang `--speculative-algorithm EAGLE --speculative-num-steps 2 --speculative-eagle-topk 1
  --speculative-num-draft-tokens 3`: k = 2 in every DeepSeek-R1 MTP recipe of the rows'
  sweeps (srt-slurm `recipes/b200-fp8/1k1k/mtp/*.yaml` @ 825965e1, `b200-fp4/.../mtp` @
  2c187799, `h100/.../mtp` @ 31050f9a; InferenceX `dsr1_fp8_b200_mtp.sh` @ ee032b37f).
The drafter is one decoder layer of the target, its experts kept, run k times
(`perf.speculative.mtp_head_model`); verification scores k + 1 tokens per sequence; the
head's KV (one layer's) shares the cache. Acceptance: `MTP_ACCEPTANCE`, a per-token rate
in Leviathan et al.'s geometric model (`perf.speculative`), one per model family.

Agg rows of MTP sweeps (`agg_mtp_speculation`; `docs/aic_measurement.md` section 17): the
export marks no agg row as speculative, but InferenceX ran TensorRT-LLM image 1.2.0rc6.post3
only in its MTP configs while these rows were measured: `dsr1-fp8-b200-trt-mtp` from
5d517074c (2026-02-05) and `dsr1-fp4-b200-trt-mtp` from 0aae52d4c (2026-02-06), while the plain
`dsr1-fp{4,8}-b200-trt` kept 1.2.0rc6.post2 up to 2e9cecf91 (2026-04-19), after the rows
(`.github/configs/nvidia-master.yaml`). Their scripts (`dsr1_fp{8,4}_b200_trt_mtp.sh` at those
commits) set `num_nextn_predict_layers` 3, 1 under attention data parallelism, a batch of
CONC (CONC / DP under it), `max_num_tokens` ceil64((k + 1) x batch + ISL + 64) with no 8192
floor, KV fraction 0.8 (0.7 for FP8 under attention DP), no delay batching, and the
balancing under attention DP as the plain scripts. They speculate as the disaggregated MTP
rows do (below); the recorded-schedule fit prices their verify steps
(`llmsizer.calibrate.spec_features`). Image 1.1.0rc2.post2 ran both kinds; its rows of
2026-01-14 are the MTP configs' first sweep (`docs/aic_measurement.md` section 35): PR #392
(bf3456727, merged 2026-01-14T22:26:18Z, one row stamped 22:26:21Z) added the configs and a
`perf-changelog.yaml` entry naming only them, and `run-sweep.yml` sweeps the configs a
changelog change names; its scripts (`dsr1_fp{8,4}_b200_trt_mtp_slurm.sh`) are the later
ones but with KV 0.8 under attention DP too. The job names told MTP apart only from #439
(1b4183870, 2026-01-15: "hash single-node file output on spec decoding value").

CUDA graphs (`cuda_graph_settings`; the engines' defaults in `llmsizer.perf.cuda_graphs`):
- vLLM MiniMax-M2.5 `--max-cudagraph-capture-size 2048` (`minimaxm2.5_fp8_b200.sh` @
  20073baf; vLLM drops sizes above the token budget); Llama-3.3-70B on B200
  `cudagraph_mode: FULL_DECODE_ONLY` (`70b_fp8_b200_docker.sh` @ c198b20e).
- SGLang `--cuda-graph-max-bs`: DeepSeek FP8 128 at TP8, 32 at TP4, NVFP4 256
  (`dsr1_fp{8,4}_b200.sh` @ 20073baf), Qwen3.5 and GLM-5 CONC; taken as at least CONC, as the
  running cap is (above).
- TensorRT-LLM `cuda_graph_config: {enable_padding: true, max_batch_size}`: Llama-70B 1024
  (`70b_fp8_b200_trt_slurm.sh` @ c198b20e), DeepSeek CONC, CONC / DP under attention data
  parallelism (`dsr1_fp{4,8}_b200_trt.sh` @ 626932a1). Piecewise graphs for prompt steps
  (`torch_compile_config`) where the DeepSeek scripts of the 1.2.0rc6 images set them:
  `trtllm_piecewise`.
- AIC's gap rows: its generator captures a dense list up to the batch size, padded
  (`generator/rule_plugin/*.rule`, `docs/aic_measurement.md` section 2): padding on and the
  largest size the per-rank client count.
"""

from __future__ import annotations

from typing import Any

from llmsizer.calibrate.aic_gap_launch import gap_launch_settings
from llmsizer.units import GB

SGLANG_LARGE_GPU_BYTES = 160 * GB  # server_args.py: >= 160 GB gets chunked_prefill_size 16384
SGLANG_B300_BYTES = 250 * GB  # a B300 (288 GB), not a B200 (180 GB): its own Qwen3.5 scripts
# Per-token acceptance of a model's own MTP head on InferenceX's random-token prompts, in the
# geometric model (`perf.speculative`). DeepSeek: vLLM PR 41044, DeepSeek-V4 on random
# 1024/1024 at k 2, positions accepted 75.7-78.6 % and 35.5-38.1 %: 2.14 = 1 + a + a^2. Real
# text: 0.85-0.90 (DeepSeek-V3 report, section 5.4.3). Others: the default (EAGLE).
MTP_ACCEPTANCE = {"deepseek": 0.68}
MTP_TOKENS = {"trtllm": 3, "sglang": 2}  # a sweep that does not name k (module docstring)
TRT_MTP_SWEEP_IMAGE = "1.2.0rc6.post3"  # run only by InferenceX's MTP configs (docstring)
# The images of InferenceX's TensorRT-LLM DeepSeek MTP sweeps and the day each ran them ("":
# every day, the image ran nothing else; module docstring)
TRT_MTP_SWEEPS = {TRT_MTP_SWEEP_IMAGE: "", "1.1.0rc2.post2": "2026-01-14"}
# The day each InferenceX SGLang Qwen3.5 script with `--mamba-ssm-dtype bfloat16` was added
# (module docstring): FP8 efd49e50b, NVFP4 48d35c480 (SemiAnalysisAI/InferenceX)
SGLANG_QWEN_BF16_STATE_SINCE = {"fp8": "2026-03-03", "fp4": "2026-04-08"}


def launch_settings(
    *,
    engine: str,
    model: str,
    precision: str,
    tp: int,
    gpu_memory_bytes: float,
    concurrency: int,
    isl: int,
    inferencex: bool,
    osl: int = 0,
    version: str = "",
    attention_dp: int = 1,
    ep: int = 1,
    measured: str = "",
) -> dict[str, Any]:
    """`EngineConfig` overrides for one row (module docstring); empty when the preset holds.
    `measured`: the row's `measured=` time (ISO, '' when it gives none)."""
    settings: dict[str, Any] = {}
    if engine == "sglang" and gpu_memory_bytes >= SGLANG_LARGE_GPU_BYTES:
        settings["max_num_batched_tokens"] = 16384
    settings["overlap_scheduler"] = True  # every engine, as it ran (module docstring)
    settings |= cuda_graph_settings(
        engine, model, precision, tp, concurrency, inferencex, gpu_memory_bytes, attention_dp
    )
    if not inferencex:
        return settings | gap_launch_settings(engine, version, concurrency, isl)
    family = family_of(model)
    if engine == "vllm":
        if family == "minimax":
            settings["max_num_batched_tokens"] = 2 * isl
        elif family == "kimi":
            settings["max_num_seqs"] = concurrency
            if precision == "int4":
                settings["gpu_memory_utilization"] = 0.95
        elif family == "llama-70b":
            settings["max_num_seqs"] = concurrency if gpu_memory_bytes < 100 * GB else 512
    elif engine == "sglang":
        settings["kv_reservation"] = "projected"  # ignore_eos, radix cache off (docstring)
        settings["enable_prefix_caching"] = False  # --disable-radix-cache
        fp8 = precision.startswith("fp8")
        if family in ("qwen3.5", "deepseek"):
            tp4_fp8 = family == "deepseek" and fp8 and tp < 8
            settings["scheduler_recv_interval"] = 30 if concurrency >= 16 and not tp4_fp8 else 10
        if family == "deepseek":
            tokens, running, fraction = (32768, 128, 0.82) if tp >= 8 else (8192, 32, 0.95)
            settings.update(
                max_num_batched_tokens=tokens if fp8 else 16384,
                max_num_seqs=max(running if fp8 else 256, concurrency),
                gpu_memory_utilization=fraction if fp8 else 0.85,
            )
        elif family == "qwen3.5":
            settings.update(
                max_num_batched_tokens=32768,
                max_num_seqs=max(128, concurrency),
                gpu_memory_utilization=0.85 if precision == "fp4" else 0.82,
            )
            b300 = gpu_memory_bytes >= SGLANG_B300_BYTES and version.startswith("0.5.10")
            if b300 and precision != "bf16":  # the BF16 script is the B200 one (docstring)
                settings |= _sglang_qwen_b300(fp8, concurrency)
            settings |= sglang_state_dtype(precision, measured)
        elif family == "glm":
            settings.update(
                max_num_batched_tokens=32768, max_num_seqs=concurrency, gpu_memory_utilization=0.85
            )
    elif engine == "trtllm":
        chat = (isl, osl) == (1024, 1024) and attention_dp == 1
        if family == "llama-70b":
            settings.update(max_num_batched_tokens=16384, max_num_seqs=1024)
            if chat and tp < 8:
                settings.update(batch_wait_timeout_iters=20, batch_wait_max_tokens_ratio=0.9)
        elif family == "deepseek":
            mtp = agg_mtp_speculation(engine, model, version, attention_dp, measured)
            settings |= _trtllm_deepseek(precision, concurrency, isl, version, attention_dp, mtp)
            settings |= trtllm_piecewise(
                precision, isl, osl, concurrency, ep, attention_dp, version
            )
            if mtp is None and chat and concurrency >= 64 and _trtllm_delayed(precision, version):
                settings.update(batch_wait_timeout_iters=40, batch_wait_max_tokens_ratio=0.8)
            if attention_dp > 1:
                balance = {"enable_balance": True, "timeout_iters": 60, "batching_wait_iters": 0}
                settings.update({f"attention_dp_{k}": v for k, v in balance.items()})
    return settings


def cuda_graph_settings(
    engine: str,
    model: str,
    precision: str,
    tp: int,
    concurrency: int,
    inferencex: bool,
    gpu_memory_bytes: float,
    attention_dp: int = 1,
) -> dict[str, Any]:
    """The `cudagraph_*` overrides for one row (module docstring); empty for the defaults."""
    per_rank = max(1, concurrency // attention_dp)
    if not inferencex:
        padding = {} if engine == "vllm" else {"cudagraph_padding": True}
        return {"max_cudagraph_capture_size": per_rank, **padding}
    family, fp8 = family_of(model), precision.startswith("fp8")
    if engine == "vllm" and family == "minimax":
        return {"max_cudagraph_capture_size": 2048}
    if engine == "vllm" and family == "llama-70b" and gpu_memory_bytes >= 100 * GB:  # B200
        return {"cudagraph_mode": "FULL_DECODE_ONLY"}
    if engine == "sglang" and family == "deepseek":
        script = (128 if tp >= 8 else 32) if fp8 else 256
        return {"max_cudagraph_capture_size": max(script, concurrency)}
    if engine == "sglang" and family in ("qwen3.5", "glm"):
        return {"max_cudagraph_capture_size": concurrency}
    if engine == "trtllm" and family in ("llama-70b", "deepseek"):
        top = 1024 if family == "llama-70b" else per_rank
        return {"cudagraph_padding": True, "max_cudagraph_capture_size": top}
    return {}


def mtp_speculation(engine: str, model: str, tokens: str) -> dict[str, Any]:
    """The `speculative` setting (`instance.SpeculativeSpec` fields) of a row an MTP sweep
    ran (module docstring): `tokens` the sweep's draft tokens per step ('' when it does not
    name them)."""
    k = int(tokens) if tokens else MTP_TOKENS[engine]
    settings: dict[str, Any] = {"num_speculative_tokens": k, "method": "mtp"}
    acceptance = MTP_ACCEPTANCE.get(family_of(model))
    return settings if acceptance is None else settings | {"acceptance_rate": acceptance}


def agg_mtp_speculation(
    engine: str, model: str, version: str, attention_dp: int = 1, measured: str = ""
) -> dict[str, Any] | None:
    """The `speculative` setting of an agg row an InferenceX MTP sweep ran (module
    docstring: a TensorRT-LLM image of `TRT_MTP_SWEEPS` on its day, `measured` the row's
    `measured=` time), else None."""
    day = TRT_MTP_SWEEPS.get(version)
    if engine != "trtllm" or day is None:
        return None
    if day and measured[:10] != day:  # the image ran the plain configs on other days
        return None
    return mtp_speculation(engine, model, "1" if attention_dp > 1 else "3")


def sglang_state_dtype(precision: str, measured: str) -> dict[str, Any]:
    """`mamba_ssm_cache_dtype` bfloat16 for an InferenceX SGLang Qwen3.5 row its FP8 or
    NVFP4 script launched (module docstring: measured on or after the script's first day,
    or undated), else {}: the config's float32."""
    since = SGLANG_QWEN_BF16_STATE_SINCE.get("fp8" if precision.startswith("fp8") else precision)
    if since is None or (measured and measured[:10] < since):
        return {}
    return {"mamba_ssm_cache_dtype": "bfloat16"}


def _sglang_qwen_b300(fp8: bool, concurrency: int) -> dict[str, Any]:
    """Qwen3.5 FP8 or NVFP4 on B300 as its own scripts launched it (module docstring)."""
    if not fp8:  # NVFP4
        return {"gpu_memory_utilization": 0.8}
    return {
        "max_num_batched_tokens": 16384,
        "scheduler_recv_interval": 10,
        "max_num_seqs": concurrency,
        "gpu_memory_utilization": 0.8,
    }


def _trtllm_deepseek(
    precision: str,
    concurrency: int,
    isl: int,
    version: str,
    attention_dp: int,
    mtp: dict[str, Any] | None,
) -> dict[str, Any]:
    """The DeepSeek scripts' token budget, batch and KV fraction (module docstring); an MTP
    sweep's scripts: ceil64((k + 1) x batch + ISL + 64) tokens with no floor, KV 0.7 for FP8
    under attention DP (1.2.0rc6.post3; 1.1.0rc2.post2's 0.8), else 0.8, and its speculation."""
    if mtp is not None:
        k, rank = mtp["num_speculative_tokens"], max(1, concurrency // attention_dp)
        fp8_dp = attention_dp > 1 and precision.startswith("fp8") and version == TRT_MTP_SWEEP_IMAGE
        return {
            "speculative": mtp,
            "max_num_batched_tokens": -(-((k + 1) * rank + isl + 64) // 64) * 64,
            "max_num_seqs": concurrency,
            "gpu_memory_utilization": 0.7 if fp8_dp else 0.8,
        }
    early = _trtllm_early(version)
    tokens = max(0 if early else 8192, -(-(concurrency + isl + 64) // 64) * 64)
    return {
        "max_num_batched_tokens": tokens,
        "max_num_seqs": concurrency,
        "gpu_memory_utilization": 0.8,
    }


def trtllm_piecewise(
    precision: str, isl: int, osl: int, concurrency: int, ep: int, attention_dp: int, version: str
) -> dict[str, Any]:
    """`cudagraph_mode` `FULL_AND_PIECEWISE` for a DeepSeek row whose script turned on
    TensorRT-LLM's piecewise CUDA graphs for steps with prompt work (`torch_compile_config
    {enable_piecewise_cuda_graph: true, capture_num_tokens}`; TensorRT-LLM docs, *Torch
    Compile & Piecewise CUDA Graph*: "to reduce context-phase launch overhead"), else {}.
    The model is then compiled and a step with prompt work launches only its attention from
    Python (`perf.launches`, `CudaGraphs.compiled`); its padding to `capture_num_tokens`
    (multiples of 256) is not priced. The scripts at the images' commits (InferenceX):
    - 1.2.0rc6.post2 FP8, `dsr1_fp8_b200_trt.sh` @ ec7bafaae (2026-01-29): 1k/1k from CONC
      64, 1k/8k at CONC 128 (not 256, which runs attention DP), 8k/1k from CONC 64;
    - 1.2.0rc6.post2 NVFP4, `dsr1_fp4_b200_trt.sh` @ 6eecc0e66 (2026-02-03, with the image):
      1k/1k at TP8 EP8;
    - 1.2.0rc6.post3 (the MTP sweeps, `agg_mtp_speculation`) FP8, `dsr1_fp8_b200_trt_mtp.sh`
      @ 5d517074c: on but under attention DP and at 1k/1k CONC <= 4, 1k/8k <= 8, 8k/1k <= 16
      ("narrow CONC cases don't benefit from PW CUDA"); NVFP4, `dsr1_fp4_b200_trt_mtp.sh` @
      0aae52d4c: 1k/1k at CONC 32 and 64, and 128 without attention DP; 1k/8k at CONC 64.
    Other images' scripts set none."""
    fp8, lengths = precision.startswith("fp8"), (isl, osl)
    on = False
    if version == "1.2.0rc6.post2" and fp8:
        on = (lengths in ((1024, 1024), (8192, 1024)) and concurrency >= 64) or (
            lengths == (1024, 8192) and 128 <= concurrency < 256
        )
    elif version == "1.2.0rc6.post2":
        on = lengths == (1024, 1024) and ep == 8  # TP8 EP8: eight GPUs
    elif version == TRT_MTP_SWEEP_IMAGE and fp8:
        narrow = {(1024, 1024): 4, (1024, 8192): 8, (8192, 1024): 16}.get(lengths, 0)
        on = attention_dp == 1 and concurrency > narrow
    elif version == TRT_MTP_SWEEP_IMAGE:
        on = (lengths == (1024, 1024) and concurrency in (32, 64)) or (
            (lengths == (1024, 1024) and concurrency == 128 and attention_dp == 1)
            or (lengths == (1024, 8192) and concurrency == 64)
        )
    return {"cudagraph_mode": "FULL_AND_PIECEWISE"} if on else {}


def _trtllm_early(version: str) -> bool:
    """A DeepSeek row measured before the 8192-token floor (module docstring)."""
    return not version or version.startswith(("1.0", "1.1"))


def _trtllm_delayed(precision: str, version: str) -> bool:
    """Delay batching in the FP8 script since the move to 1.2.0rc6 (module docstring)."""
    return precision.startswith("fp8") and not _trtllm_early(version)


def family_of(model: str) -> str:
    """The script family of a catalog model name (`deepseek-r1` -> `deepseek`)."""
    for prefix, family in (
        ("deepseek", "deepseek"),
        ("kimi", "kimi"),
        ("minimax", "minimax"),
        ("qwen3.5", "qwen3.5"),
        ("glm", "glm"),
        ("llama-3.1-70b", "llama-70b"),
        ("llama-3.3-70b", "llama-70b"),
    ):
        if model.startswith(prefix):
            return family
    return model
