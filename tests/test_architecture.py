"""The architecture as a test: imports point one way, the public API is pinned, and each
subpackage stays within a line budget (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llmsizer

SRC = Path(llmsizer.__file__).parent

# What each part imports from llmsizer (besides itself): exactly the intended arrows.
# `specs -> perf -> sim`, joined once in `instance`; `sizing` and `calibrate` side by side
# on top of it; `bench` beside `sim`; `workload`, `records` and `metrics` shared by both;
# `report` reads records only (plans reach it as plain data).
ALLOWED: dict[str, set[str]] = {
    "units": set(),
    "errors": set(),
    "output": set(),
    "records": set(),
    # where a sweep's independent jobs run: local processes or Ray (issue 13)
    "sweep": set(),
    "specs": {"units"},
    "perf": {"units", "specs"},
    "metrics": {"records"},
    "workload": {"units"},
    "sim": {"units", "records", "workload"},
    # records: speculative runs map step records back to token records (issue 11)
    "instance": {"specs", "perf", "sim", "metrics", "workload", "records", "fleet"},
    # records: a capacity run reads its `RecordTable`'s finish column (issue 13, plan speed)
    "sizing": {
        *("units", "specs", "perf", "sim", "instance", "metrics", "workload", "fleet"),
        "records",
    },
    "calibrate": {
        "units",
        "specs",
        "perf",
        "sim",
        "instance",
        "records",
        "metrics",
        "workload",
        "bench",
    },
    "bench": {"records", "metrics", "workload"},
    "report": {"records"},
    # timing kernels at a model's shapes (PyTorch) into the perf model's calibration file
    "collect": {"units", "specs", "perf"},
    # the sizing studio (issue 15): a page over the library, as the CLI is a command line
    "serve": {
        "specs",
        "instance",
        "sizing",
        "calibrate",
        "report",
        "metrics",
        "workload",
    },
    # fleets (issue 12): engines behind a router, beside sim on its clock
    "fleet": {"sim", "records", "workload"},
}
EDGES = {"config", "cli", "__init__"}  # the edges may import anything
# invalid input reported, results written, sweeps run: anyone may use
SHARED = {"errors", "output", "sweep"}

# Lines per subpackage (code, comments and docstrings): growth past these needs a reason.
BUDGET = {
    "specs": 1555  # + linear attention, sparse attention, MTP, quant modes (h-catalog);
    # + config.json validation (issue 14)
    # + 22: a collected calibration file's device as a GPU (issue 16)
    # + 15: a launch's linear-attention state dtype checked and priced (`check_state_dtype`,
    # issue 10, mamba12)
    + 15
    # + 6: query / key norms over every head read from the config (`qk_norm_across_heads`,
    # issue 10, vllmtpot14)
    + 7,
    "perf": 2600  # + 150: CUDA graphs in the step cost, per engine with sources (issue 10,
    # cuda_graphs.py), and speculating steps priced without a batch, in quiet runs, the
    # drafter's passes reused (issue 11, verify_step.py): about 225 lines each, in the slack
    + 150
    # + 75: the sparse-attention indexer's fixed time and replicated weights, the W4A16
    # experts' dequantisation: two kinds of work with their factors and priors' sources
    # (issue 10, kernels9)
    + 75
    # + 65: a model's own MTP head (one layer with its experts) without a step overhead of
    # its own, its verify steps replayed from CUDA graphs (issue 10, mtp9)
    + 65
    # + 45: a step's cost per sampled sequence and linear attention's state read and
    # written per decoding sequence, with their sources (issue 10, tpotbatch10)
    + 45
    # + 70: a prompt step's routed experts in whole grouped-GEMM tiles, the engines' tile
    # rows with their kernels' sources, MFU of the real rows (issue 10, moeprompt10)
    + 70
    # + 55: the routed experts' kernel a launch picked (`moe_kernels`: vLLM --moe-backend
    # names, each kernel's rate beside the default's with its source) (issue 10,
    # tpotver11)
    + 55
    # + 115: an eager step's kernel launches per kind of layer, each part's count with its
    # engine source, a compiled model's attention-only launches (issue 10, eager11,
    # launches.py; +1 the merge's second import)
    + 116
    # + 50: a launch's linear-attention state dtype (`mamba_ssm_cache_dtype`, SGLang
    # --mamba-ssm-dtype) priced in the state moved per decoding sequence, and in the memory
    # plan: KV over the softmax layers only, SGLang's state slots set aside, with sources
    # (issue 10, mamba12)
    + 50
    # + 25: every step's `layer_overhead_s` per dense layer's kernels, a MoE / MLA layer its
    # kernels' share, with the per-kernel cost's source (issue 10, tpot12, launches.py)
    + 25
    # + 155: attention DP's MoE token exchange, all-to-all or gather, each backend's measured
    # latency with its source, the engines' own choice (`moe_comm`, issue 10, a2a12)
    + 155
    # + 2: the merge of mamba12's and a2a12's deployment fields (session 12 lead)
    + 2
    # + 40: a speculating step's drafter pass over its prompt chunks kept by the chunks, its
    # decode steps' draft passes reused inline, a verify step of full attention priced
    # without its zero window terms (issue 11, speed12: the lever table within 2x in CPU)
    + 40
    # + 60: a DSA model's sparse prompt attention past the indexer's top-k (FlashMLA's head
    # padding tried and rejected; issue 10, longttft13)
    + 60
    # + 80: a graphed decode step's shared experts on a second stream, each engine's kernels
    # left on the first with their sources (`cuda_graphs.SharedExpertsStream`; issue 10,
    # kernels13)
    + 80
    # + 67: a speculative verify step's host cost per decoding sequence where it runs serial
    # with the GPU (`verify_step.verify_sequence_s`, `SpeculativeDecoding.serial_host`,
    # `EfficiencyFactors.verify_sequence_overhead_s`) and a hybrid model's recurrent states
    # it moves (`verify_step.verify_state_s`; issue 10, spec14)
    + 67
    # + 33: query / key norms over every head, their all-reduce a layer under tensor
    # parallelism and their kernels, with the vLLM source (issue 10, vllmtpot14)
    + 33
    # + 80: the linear layers' kernel an engine runs for block-FP8 weights on SM100,
    # `perf/linear_kernels.py` (issue 10, trtds15)
    + 80
    # + 3: a kernel runs one weight format (`check_kernel_format`; issue 10, session 15 lead)
    + 3
    # + 10: the block-FP8 kernel's rate by the rank's tensor-parallel shard, an attention-DP
    # rank's whole layers at 0.42 (`perf/linear_kernels.py`; issue 10, trtdis15)
    + 10
    # + 50: an NVFP4 dense linear layer's input quantisation kernel per GEMM input, the
    # engines that launch it and the deployment's field (issue 10, vllm15)
    + 50
    # + 2: one `moe_kernels.check_priced` for both kernel tables (issue 10, session 15 review)
    + 2
    # + 8: a cold server's one-off module build, `EfficiencyFactors.first_use_build_s`
    # (issue 10, sglwarm15)
    + 8
    # + 15: `moe_first_token_delay_s` and `first_token_hold_s` (issue 10, moehold16)
    + 15
    # + 5: an MTP head's experts on a kernel the engine picks for it (issue 10, sgl256_17)
    + 5
    # + 31: what a generation without a fit of its own gets, the general file with the AIC
    # fits' carried factors (`carried_calibration`; issue 10, trtgen17)
    + 31
    # + 60: SGLang's FP8 linears' input quantisation kernels, one per FP8 GEMM input
    # (`perf.launches.fp8_input_quant_launches`; issue 10, sglb300_17)
    + 60
    # + 42: a linear-attention verify kernel's measured state rate, and the accepted state's
    # commit through a temporary (`verify_step.STATE_KERNEL_RATE`; issue 10, sglverify18)
    + 42
    # + 43: TensorRT-LLM's pool as its profiling run sizes it, checked against AIC's measured
    # capacities (`perf.memory.trtllm_runtime_bytes`; issue 10, trtkv18)
    + 43
    # + 46: Gated DeltaNet's input projections as four GEMMs, SGLang up to 0.5.9
    # (`perf.launches.gdn_projection_launches`; issue 10, sglqproj19)
    + 46,
    "sim": 1760  # + 110: decode-only steps in a row and their compact step log (issue 13)
    # + 50: delay batching in the continuous scheduler (merged from main, unbudgeted there)
    # + 120: quiet decode runs priced at once, a refused first waiting request kept on the
    # decode-only path (issue 13, predict --cases)
    # + 160: TensorRT-LLM's attention-DP balancing, its engine fields; + 35: SGLang's
    # recv skipper as it counts (issue 10, trtdp)
    # + 110: TensorRT-LLM's overlap scheduler as admission sees it, `batching/overlap.py`,
    # its `EngineConfig` field, the engine's time given to `Scheduler.add` (issue 10, trtfirst8)
    + 120
    + 195
    + 110
    # + 45: the engine's CUDA-graph fields, vLLM's names (issue 10, cudagraph8); + 5: the
    # overlap scheduler's fetched requests found by bisection
    + 50
    # + 10: the vllm and sglang presets' one-step-ahead defaults, with the engine versions and
    # code that set them (issue 10, presets10)
    + 10
    # + 40: a run's finished first tokens read off the step end times, without building the
    # step log (`_Run.first_tokens`): the lever table's early-stop checks (issue 11, levers11)
    + 40
    # + 85: SGLang's projected KV admission of ignore-EOS requests, `batching/projected_kv.py`,
    # and its `kv_reservation` value (issue 10, sglttft11)
    + 85
    # + 25: quiet decode runs priced only as far as the next arrival can come, else left
    # to the step by step path (issue 11, speed12: speculating runs' short quiet runs)
    + 25,
    "workload": 1300,
    "bench": 2700,
    "report": 2100,
    "instance": 1000  # + speculative decoding runs (issue 11); EP, per-architecture fit (issue 10)
    # + 11: the speculative KV over-commit bound (issue 11)
    # + disaggregated pools and their KV link (issue 12)
    # + 40: attention data parallelism, the field and one engine for every rank (issue 10)
    # + 40: predict's meter prices decode steps without a Batch, and runs of them at once
    # (issue 13, predict --cases)
    + 40
    + 40
    # + 15: the step model priced as the engine's CUDA graphs run it (issue 10, cudagraph8)
    + 15
    # + 60: a speculating run set up in verify steps (`InSteps`), so that a probe can watch
    # it for an early stop, and its records mapped to tokens for a whole table at once (issue
    # 11: the lever table within 2x)
    + 60
    # + 60: a disaggregated decode pool that speculates, its records mapped back to tokens
    # (issue 10, mtp9: the AIC rows an InferenceX MTP sweep ran)
    + 60
    # + 15: a deployment's features turn its preset's one-step-ahead scheduling off where
    # they do in the engine (`deployment.one_step_ahead`, issue 10, presets10)
    + 15
    # + 15: the `moe_backend` field, the experts' kernel a launch picked (issue 10, tpotver11)
    + 15
    # + 25: the `mamba_ssm_cache_dtype` field (SGLang --mamba-ssm-dtype) checked at the
    # boundary, the SGLang state slots an instance sets aside (issue 10, mamba12)
    + 25
    # + 30: the `moe_a2a_backend` field and the engine's own exchange (issue 10, a2a12)
    + 30
    # + 70: a disaggregated decode worker prices a handed-off request's first step as a decode
    # (`instance.handoff`, issue 10, widedp12)
    + 70
    # + 5: a speculating engine's step cost told whether it schedules one step ahead
    # (`speculative_cost(..., overlap)`, issue 10, spec14)
    + 5
    # + 5: the engine's linear kernel on the deployment (issue 10, trtds15)
    + 5
    # + 10: `DeploymentSpec.linear_kernel`, the kernel a spec names (issue 10, session 15 lead)
    + 10
    # + 3: the engine's NVFP4 input quantisation set on the deployment (issue 10, vllm15)
    + 3
    # + 3: the instance's first-token hold is its model's (issue 10, moehold16)
    + 3
    # + 20: an MTP head's experts on a kernel of their own (`draft_moe_backend`) and SGLang's
    # intermediate linear-attention states under speculation (issue 10, sgl256_17)
    + 20
    # + 20: SGLang's running cap of 48 under speculation, a default its server args set
    # (`deployment.feature_defaults`; issue 10, session 17 lead)
    + 20
    # + 2: an engine that quantises FP8 linears' inputs separately (issue 10, sglb300_17)
    + 2
    # + 11: the linear-attention verify kernel a speculating launch names
    # (`SpeculativeSpec.linear_verify_kernel`; issue 10, sglverify18)
    + 11
    # + 9: a deployment's Gated DeltaNet projections as its engine version ran them
    # (`DeploymentSpec.separate_gdn_projections`; issue 10, sglqproj19)
    + 9,
    "sizing": 3650  # the plan pipeline only; + levers, arrivals, price models (issue 11), ETA
    # + the probe cache and quick plans the studio needs (issue 15); fleet check (issue 12)
    # + 120: the search's parts on a sweep (`search_parts`, issue 13)
    # + 895: plan --disaggregated (issue 12): the use-case field, pool rates and P:D layouts
    # checked on the whole P/D fleet, the comparison and crossover, as data
    # + 145: probes that stop once certain to miss (`early_stop`, issue 13) and the
    # `lossless` default precisions (issue 11)
    # + 135: the lever table within 2x of the plan (issue 11): rate searches in instance
    # counts (`rate_search.Counts`) and a step-model bound before capacity runs
    # (`capacity_bound`)
    # + 205: plan on the CPUs it may use (issue 13): probe states sent between processes
    # and absorbed, the band's variants and the curves on the sweep beside the lever table
    # + 95: speculating probes watched for early stops and bounded before their capacity
    # runs, as plain ones are, and the bound's floor of all the run's work, prompts too
    # (issue 11, the lever table within 2x in CPU)
    # + 25: the lever table's branch and bound ordered by what each next probe tests
    # (`RateSearch.next_rate`), speculating capacity runs read in verify steps (issue 11)
    # + 175: the lever table's probes put aside while they look like failing, resumed or
    # dropped (`aside`, `early_stop.WatchedRun`, `Probe.at_rate_or_pause`), groups that
    # might tie otherwise searched again without pauses (issue 11, levers11: NeMo within 2x)
    + 120
    + 895
    + 145
    + 135
    + 205
    + 95
    + 25
    + 175
    # + 10: a speculating probe's whole run summarised in verify steps as chunks of tokens,
    # as a watched one's (issue 11, speed12)
    + 10
    # - 15: ties broken by the configurations (`search.rank`), so the groups that might tie
    # are no longer searched again without pauses (issue 11, tie17)
    - 15,
    "calibrate": 3350  # + AIC launch settings, per-architecture fit, layouts read as launched
    # + disaggregated AIC rows (issue 12)
    # + 20: a sweep (local processes or Ray) records the schedules; fits name the fit extra
    # (issue 13)
    # + 30: attention-DP layouts, GB200 disaggregated twins, silicon_concurrency (issue 10)
    # + 15: delay batching and running caps as launched, fits shipped per group (issue 10)
    + 20
    + 30
    + 15
    # + 180: the disaggregated rows' expert parallelism and attention DP per pool, their
    # layouts read from the dump's twin (aic_twins), the run means of a fold's factors
    # (issue 10)
    + 180
    # + 375: GB200 rows without a layout read as the InferenceX sweep that launched them
    # (aic_launch_gb200: the sweeps transcribed as data, with their sources), the whole-file
    # refusal tally (aic_refusals), disaggregated pools checked for fit at mapping (issue 10)
    + 375
    # + 25: split factors tied to their parents in the fit, off by default (issue 10, TPOT)
    + 25
    # + 5: TensorRT-LLM DeepSeek max_num_tokens and SGLang recv intervals by date (issue 10)
    + 5
    # + 230: exported disaggregated rows without worker counts read as the InferenceX sweep
    # that launched them on every NVIDIA system (aic_sweeps: Pool, Sweep and the one lookup
    # the GB200 launch scripts share; aic_launches: the nvidia-master.yaml table, issue 10)
    + 230
    # + 70: the CUDA-graph settings each AIC row and each measurements.csv row ran with
    # (issue 10, cudagraph8)
    + 70
    # + 5: aic_launch's settings joining the overlap scheduler and the CUDA graphs (merge)
    + 5
    # + 25: each measurements.csv row's runtime (trtllm-bench's PyTorch CUDA-graph sizes, the
    # C++ runtime without the overlap scheduler), with sources (issue 10, genfit9)
    + 25
    # + 205: the AIC fit's prior as data (aic_prior: sigmas around the general fit, weights),
    # chosen per fold by a nested leave one model out, fits shared between folds; the fit's
    # per-factor sigmas, target weights and data-only robust loss (issue 10, fitprior8)
    + 205
    # + 10: the step features' columns for the sparse-attention indexer and the W4A16
    # experts' dequantisation, fitted as kinds of work (issue 10, kernels9)
    + 10
    # + 30: a thin cross-validation fold fits on the engine's rows of its other
    # architectures (aic_fit.fold_rows, issue 10, trt9)
    + 30
    # + 75: MTP speculative decoding as launched: each sweep's draft tokens, the rows an
    # MTP sweep ran speculating in their decode pool, the acceptance prior (issue 10, mtp9)
    + 75
    # + 10: the featurizer takes the engine's grouped-GEMM tile, the per-sequence prior
    # (issue 10, moeprompt10 and tpotbatch10 merged)
    + 10
    # + 20: measurements.csv's vLLM rows by version (async scheduling from 0.14), SGLang MTP
    # pools one step ahead as their recipes ran them (issue 10, presets10)
    + 20
    # + 170: the agg rows an MTP sweep ran (TensorRT-LLM image 1.2.0rc6.post3) speculating
    # as their scripts launched them, their verify steps re-priced in the recorded-schedule
    # fit (spec_features: one feature row per part of a step) (issue 10, hold10); + 5: its
    # featurizers take the engine's grouped-GEMM tile (merged with moeprompt10)
    + 175
    # + 50: each TensorRT-LLM sweep's decode max_batch_size read from its recipe's name, for
    # the rows it launched and the dump rows it ran (issue 10, disagg10); + 10: its launch
    # settings beside hold10's MTP ones (merged)
    + 60
    # + 10: a results point's records_path the OS refuses is the reader's message (fuzz)
    + 10
    # + 20: SGLang's projected KV admission and Qwen3.5's own B300 scripts in the AIC launch
    # settings (issue 10, sglttft11)
    + 20
    # + 160: the SGLang disaggregated rows' srt-slurm recipe settings per attention-DP rank
    # (aic_sglang_recipes.py, its table read by bench/srt_slurm_recipes.py) given to their
    # pools (issue 10, sgldisagg11)
    + 160
    # + 115: what an AIC row's engine version ran that a later launch did not, as a table
    # with the scripts' sources (`engine_kernels`, issue 10, tpotver11)
    + 115
    # + 45: TensorRT-LLM's piecewise CUDA graphs for prompt steps where the DeepSeek scripts
    # of the 1.2.0rc6 images turned them on, by image and script commit (issue 10, eager11)
    + 45
    # + 40: each measurements.csv row's runtime priced by its own general fit (the C++
    # runtime's shipped in calibrate/data; issue 10, trtcpp11)
    + 40
    # + 20: the SGLang Qwen3.5 scripts' `--mamba-ssm-dtype bfloat16`, by precision and the
    # day each script was added, with the InferenceX commits (issue 10, mamba12)
    + 20
    # + 45: each pool's MoE all-to-all as launched (recipes' DeepEP mode, the GB200 FP8
    # launch script's, DeepEP's ep = tp layout) (issue 10, a2a12)
    + 45
    # + 10: the merge of mamba12's and a2a12's launch fields (session 12 lead)
    + 10
    # + 226: InferenceX's single-node SGLang sweeps as data, the MTP sweeps' rows and their
    # scripts' launches; AIC's gap-analysis copies of InferenceX runs read as those runs
    # (issue 10, session 13 lead)
    + 226
    # + 5: SGLang Qwen3.5 BF16 on B300 launched by its own script, the B200 one, not the
    # FP8 / NVFP4 B300 scripts (issue 10, b300_13)
    + 5
    # + 45: TensorRT-LLM's Hopper AIC fit: a prior's fitted factors, per-group candidates,
    # the C++ runtime's rows out of the AIC fits (issue 10, trthopper13)
    + 45
    # + 13: TensorRT-LLM 1.1.0rc2.post2's MTP sweep of 2026-01-14 read as MTP (issue 10,
    # trtttft14)
    + 13
    # + 80: rows whose prompts InferenceX's client and SGLang's server tokenized apart are
    # predicted but not fitted on (aic_clients.py, AicCase.unfitted; issue 10, sglttft14)
    + 80
    # + 33: a speculative verify step's per-sequence column and its fit where rows fill it,
    # its state in the verify part (`features.VERIFY_SEQUENCES`, `aic_fit.VERIFY`; spec14)
    + 33
    # + 29: InferenceX's vLLM Kimi-K2.5 scripts launched without expert parallelism
    # (`aic.launched_expert_parallel`), vLLM's `tp: T, ep: T` rows written as products inside
    # a node read as launched (`aic._layout`) (issue 10, vllmtpot14)
    + 29
    # + 10: AIC DeepSeek fp8 GEMMs read as the checkpoints' fp8_block (issue 10, trtds15)
    + 10
    # + 19: the rows' TensorRT-LLM versions name their block-FP8 linear kernel
    # (`engine_kernels.linear_kernel`; issue 10, session 15 lead)
    + 19
    # + 150: the B200 docker runner's prompt count before the client's warm-up (a run either
    # launcher could have run not fitted on) and a cold first wave's one-off module build,
    # priced by a fitted `first_use_build_s` (`aic_clients.prompts_per_client`,
    # `prompt_count_unknown`, `first_use_builds`; issue 10, sglwarm15)
    + 150
    # + 7: the disaggregated rows' checkpoint precision and linear kernel as the agg rows'
    # (issue 10, session 15 lead)
    + 7
    # + 50: AIC's TensorRT-LLM 1.0.0rc3 gap rows launched as its template of the time
    # (aic_gap_launch, with its sources; issue 10, trtgap16)
    + 50
    # + 30: the MoE first-token hold: each trace told whether its model has routed
    # experts, the all-model hold fitted only where a dense model's TTFT is (issue 10, moehold16)
    + 30
    # + 35: runs 748 / 749 priced at the prompt the server saw, reported at the row's
    # (`aic_clients.server_prompt_ratio`, `AicCase.isl`; issue 10, tok17)
    + 35
    # + 8: the SGLang MTP sweeps' head experts on Triton, with the source (issue 10, sgl256_17)
    + 8
    # + 140: a kind of work the general fit cannot see (the MoE hold, a verify step's
    # per-sequence cost) carried from the engine's other generations' fits in the same fold,
    # and shipped for the generations without a fit (aic_carry; issue 10, trtgen17)
    + 140
    # + 3: `aic_carry.shipped_factors`, one helper where `Recorded.shipped` and the
    # disaggregated report's `Folds.shipped` each wrote it (issue 10, session 17 review)
    + 3
    # + 6: `Recorded.fold_factors`, one fold's factors with what the engine's other
    # generations carry into it (issue 10, session 18 lead)
    + 6
    # + 9: the Qwen3.5 MTP sweeps' Gated DeltaNet verify on Triton, with the source, and the
    # featuriser's kernel rate (issue 10, sglverify18)
    + 9
    # + 80: the expert parallelism and attention DP InferenceX's first TensorRT-LLM DeepSeek
    # B200 scripts chose themselves, before 17d5e204f (aic_script_layout; issue 10, trtq18)
    + 80
    # + 10: an InferenceX TP x EP product read back inside the node too, config 736's 2 GPUs
    # (aic._layout; issue 10, sgl010moe19)
    + 10
    # + 36: SGLang's Qwen3.5 Gated DeltaNet projections by image, the four GEMMs before
    # 0.5.10 (`engine_kernels.separate_gdn_projections`; issue 10, sglqproj19)
    + 36,
    "collect": 1300  # issue 16: kernel timing, roofline fit, device entry, decode check
    # + 650 (issue 16, session 2): the all-reduce over spawned processes and its fit, MoE
    # expert GEMMs and MLA attention shapes, the time budget, provenance split from run
    + 650
    # + 190: kernels timed as CUDA-graph replays on a GPU, the decode check's MoE layers,
    # MLA decode with the heads as query rows over split-KV pieces, FP8 widths padded, out
    # of memory reported, MLA decode not fitted, a prefill check, the all-reduce's rows all
    # kept (session 10, checked on an H100)
    + 190,
    "fleet": 1200,  # routers, fleet loop, disaggregated pools, autoscaler, day replay (issue 12)
    "cli": 1720  # + --overwrite on every command that writes, input checks at the edges
    # + 115: errors name flags as typed (a flag table per command), time left on progress
    # + 47: each command's module imported only when it runs (issue 13, startup)
    # + 130: `collect` (issue 16) and `gpus --factors`; + lever and EP flags (issues 10, 11);
    # + serve (issue 15); + simulate --replicas/--router, plan --router (issue 12)
    # + 70: --ray, --ray-address, plan --workers, pictures refused early without the
    # plots extra (issue 13)
    # + 342: `llmsizer day` and plan --disaggregated / --kv-link / --pd-ratio (issue 12)
    # + 10: collect --devices / --budget-s (issue 16); the sweep imported on use (issue 13)
    # + 36: `--help` listed from the commands' summaries, none imported (issue 13)
    # + 7: calibrate --overlap-scheduler (a CPU vLLM schedules each step after the last;
    # issue 10, presets10)
    + 70
    + 342
    + 10
    + 36
    + 7
    # + 2: `gpus --factors` shows the general fit as a GPU without its own fit gets it, with
    # the carried factors (issue 10, trtgen17)
    + 2,
    "serve": 1300,  # the studio: form, jobs, views, uploads, app (templates not counted)
}
MAX_MODULE_LINES = 400


def _part(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("llmsizer."):
                found.add(name.split(".")[1])
    return found


MODULES = sorted(p for p in SRC.rglob("*.py") if _part(p) not in EDGES)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_one_way(path: Path) -> None:
    part = _part(path)
    assert part in ALLOWED, f"{part} is a new part: give it its arrows in ALLOWED"
    bad = _imports(path) - ALLOWED[part] - SHARED - {part}
    assert not bad, f"{path.relative_to(SRC)} ({part}) imports {sorted(bad)}"


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_every_allowed_arrow_is_used(part: str) -> None:
    """The table is the graph, not a superset of it: an arrow nobody draws is removed."""
    used: set[str] = set()
    for path in MODULES:
        if _part(path) == part:
            used |= _imports(path)
    assert ALLOWED[part] <= used, f"{part} never imports {sorted(ALLOWED[part] - used)}"


def test_the_graph_has_no_cycle() -> None:
    done: set[str] = set()

    def visit(part: str, path: tuple[str, ...]) -> None:
        assert part not in path, f"import cycle: {' -> '.join((*path, part))}"
        if part not in done:
            for target in ALLOWED[part]:
                visit(target, (*path, part))
            done.add(part)

    for part in ALLOWED:
        visit(part, ())


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_is_over_the_line_limit(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(SRC)}: {lines} lines"


def test_public_api_is_pinned() -> None:
    assert sorted(llmsizer.__all__) == sorted(
        [
            "Batch",
            "DeploymentSpec",
            "Engine",
            "EngineConfig",
            "FixedTicks",
            "LinearStepCost",
            "PredictSpec",
            "RequestRecord",
            "Slo",
            "Workload",
            "WorkloadSpec",
            "__version__",
            "make_instance",
            "make_workload",
            "predict",
            "simulate",
            "summarize",
        ]
    )
    for name in llmsizer.__all__:
        assert hasattr(llmsizer, name)


@pytest.mark.parametrize(("part", "budget"), sorted(BUDGET.items()))
def test_line_budget(part: str, budget: int) -> None:
    lines = sum(len(p.read_text().splitlines()) for p in (SRC / part).rglob("*.py"))
    assert lines <= budget, f"{part} has {lines} lines, budget {budget}"
