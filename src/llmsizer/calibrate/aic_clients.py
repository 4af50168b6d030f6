"""What InferenceX's benchmark client sent, where it is not what an AIC row says: the rows
whose prompts the server tokenized to another length, kept out of the fits.

The client (`utils/bench_serving/benchmark_serving.py`, `sample_random_requests`) builds
each random prompt from token ids, decodes it to text with its own tokenizer, checks the
length with the same tokenizer and sends the text; the server tokenizes it again. The two
agree when they load the tokenizer alike. Transformers 5 loads a tokenizer that declares
`LlamaTokenizerFast` over a ByteLevel BPE (DeepSeek-V3 / R1) with Metaspace components in
place of its own; SGLang's server repairs that at start-up, the client did not: "a
7000-token prompt on the client becomes ~35000 tokens on the server, leading to ~5x TTFT
inflation" (SemiAnalysisAI/InferenceX ef01c2205, #937, 2026-03-27). #937's repair in the
client read `tokenizer.json` from `Path(model)`, a no-op when `--model` is a Hugging Face
repo id, until 5fe6d56ee (#1381, 2026-05-15: "a ~5x client/server tokenizer mismatch and a
false throughput regression"), after which InferenceX re-ran every DeepSeek SGLang agg
config (afb49f5a3, #1502).

A row's prompt length is known only about (`server_prompt_ratio`), and the fits train
without it, where all of these hold:
- **SGLang at a version whose image pins transformers 5**: the wheels' METADATA, 0.5.9
  `transformers==4.57.1`, 0.5.10.post1 `transformers==5.3.0` (`TRANSFORMERS_5_FROM`); the
  client runs in the server's container (`runners/launch_b300-nv.sh` @ dd9c285b3: `srun
  --container-image` runs the benchmark script, which starts the client). A version with
  no release number (a nightly) is not known to, and keeps its rows;
- **a model whose tokenizer declares `LlamaTokenizerFast` over ByteLevel BPE**
  (`LLAMA_CLASS_BYTE_LEVEL`: DeepSeek-V3 / R1, #937);
- **an InferenceX run measured before #1381** (`CLIENT_FIXED`; the single-node launchers
  passed DeepSeek as a repo id: `launch_b300-nv.sh` @ dd9c285b3 maps only Qwen3.5 FP8 to a
  local path, and the scripts `hf download "$MODEL"`). AIC's own runs (aiperf) are not.

On the calibration rows this is SGLang workflow runs 748 / 749 (DeepSeek-V3 on B300,
0.5.10.post1, 2026-04-17; docs/aic_measurement.md section 37): every other DeepSeek SGLang
row ran 0.5.9 or older. They stay in the accuracy report, priced at the prompt the server
saw (`server_prompt_ratio`): `SERVER_PROMPT_RATIO` times the row's, #937's count, which a
pass of the client's prompts (consecutive token ids from a random offset) through both
tokenizers over DeepSeek-V3's vocabulary repeats to 2 % (docs section 52). The server
counts the output (`usage`), so TPOT's denominator is right. The fits train without them.

Before the client's warm-up (d053ae24e, 2026-01-21 17:53 UTC) two more facts of a run are
the client's (docs/aic_measurement.md sections 38, 41):
- **Its prompt count** (`prompts_per_client`): the B200 docker runner's launcher
  (`runners/launch_b200-nvd.sh` l.51-58 @ 7daaa8bb3, the same @ 9765f603d, 189ae51cc; and
  `launch_b200-dgxc.sh`, the runner's other nodes from 3c3d1999b) sent 50c prompts, 20c at
  OSL 8192, for `deepseek-ai/DeepSeek-R1-0528` (and `nvidia/DeepSeek-R1-0528-FP4`, a model
  no config ran there), 10c for any other. SGLang's DeepSeek configs ran on that runner
  (`runner: b200`, `.github/configs/nvidia-master.yaml`): FP8 as `DeepSeek-R1-0528`, NVFP4
  as `nvidia/DeepSeek-R1-0528-FP4-V2` (10c). From ea181ae6d (2025-12-31 06:18 UTC) the `b200`
  label holds slurm nodes too, whose scripts send 10c ("make num prompts conc ten"): a run
  from then is not known to have run the docker launcher: it keeps 10c and the fits train
  without it (`prompt_count_unknown`). TensorRT-LLM's ran
  on `b200-trt` (slurm nodes, 10c), vLLM's B200 rows of the time are Llama.
- **A first-use build in the first wave** (`first_use_builds`): SGLang's `trtllm_mla`
  attention with the chunked prefix cache on plans FlashInfer's ragged prefill wrapper for
  the first prompt chunk over a cached prefix, whose SM100 CUTLASS FMHA module at head dims
  192 / 128 is not in FlashInfer's ahead-of-time set and is compiled with nvcc at that first
  call (SGLang 0.5.5 `deepseek_v2.py` l.378-385, 2417-2446, `flashinfer_mla_backend.py`
  l.99-147, 245-246; FlashInfer 0.5.0 `prefill.py` l.2708-2745, `aot.py` l.319-332). Every
  InferenceX DeepSeek SGLang B200 script of the time launched `--attention-backend
  trtllm_mla` and left the chunked prefix cache on (`dsr1_fp4_b200_docker.sh` @ 7daaa8bb3,
  `dsr1_fp8_b200_docker.sh` @ 189ae51cc), and each run started on an empty `~/.cache`
  (`docker run --rm`). A first wave whose prompts exceed one prompt step (c x ISL >
  `max_num_batched_tokens`, the script's `--chunked-prefill-size`) splits a prompt over a
  cached head and builds the module while the whole first wave waits; a warm-up of 2c
  requests (from d053ae24e) splits the same way and builds it before the timed requests.
  From the `v0.5.5-cu129-amd64` image (d8fe8f73e, #204, 2025-11-10; a run of that day is
  read as it), whose wheels the build was read in: the `v0.5.3rc1-cu129-b200` image before
  it carried another FlashInfer (not on PyPI; its script patched the cubin loader), and its
  run of 2025-11-02 shows no such stall (section 41).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from llmsizer.calibrate.aic_launch import family_of
from llmsizer.calibrate.aic_sweeps import measured_at
from llmsizer.calibrate.aic_twins import is_gap

TRANSFORMERS_5_FROM = (0, 5, 10)  # SGLang 0.5.10.post1 pins transformers==5.3.0; 0.5.9 4.57.1
LLAMA_CLASS_BYTE_LEVEL = frozenset({"deepseek-v3", "deepseek-r1"})  # InferenceX #937
CLIENT_FIXED = "2026-05-15"  # InferenceX 5fe6d56ee (#1381): the client's repair for repo ids
SERVER_PROMPT_RATIO = 5.0  # InferenceX ef01c2205 (#937): "7000 tokens -> 35000 tokens"
WARMUP_FROM = "2026-01-21T17:53:38Z"  # InferenceX d053ae24e (#480): `--num-warmups 2c`
SLURM_B200_FROM = "2025-12-31T06:18:28Z"  # InferenceX ea181ae6d (#379): slurm nodes, 10c
BUILD_IMAGE_FROM = "2025-11-10"  # InferenceX d8fe8f73e (#204): SGLang v0.5.5-cu129-amd64 on B200
DOCKER_PROMPTS_PER_CLIENT = 50  # launch_b200-nvd.sh l.51-58 @ 7daaa8bb3: DeepSeek-R1-0528
DOCKER_LONG_OUTPUT_PROMPTS_PER_CLIENT = 20  # the same, at OSL 8192
_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def prompt_length_unknown(row: Mapping[str, str], model: str) -> str | None:
    """Why the fits train without `row` (module docstring), or None where they train on it.
    `model`: the row's catalog model name."""
    if row["backend"] != "sglang" or model not in LLAMA_CLASS_BYTE_LEVEL or is_gap(row):
        return None
    release = _RELEASE.match(row["backend_version"].strip())
    if release is None or tuple(int(p) for p in release.groups()) < TRANSFORMERS_5_FROM:
        return None
    measured = measured_at(row)
    if measured is None or measured[:10] >= CLIENT_FIXED:
        return None
    return (
        f"prompt length approximate: SGLang {row['backend_version'].strip()} (transformers 5) "
        f"with {model}'s LlamaTokenizerFast, measured {measured[:10]} before InferenceX's "
        f"client tokenizer fix (#1381): the server saw ~{SERVER_PROMPT_RATIO:g}x the prompt "
        "(InferenceX #937), priced at that"
    )


def server_prompt_ratio(row: Mapping[str, str], model: str) -> float:
    """The server's prompt tokens per the row's: `SERVER_PROMPT_RATIO` where the client and
    the server tokenized apart (`prompt_length_unknown`), else 1 (module docstring)."""
    return SERVER_PROMPT_RATIO if prompt_length_unknown(row, model) else 1.0


def _deepseek_before_warmup(row: Mapping[str, str], model: str) -> str | None:
    """The row's `measured=` time where it is an InferenceX DeepSeek SGLang B200 run measured
    before the client's warm-up (d053ae24e), else None."""
    if row["backend"] != "sglang" or row["system"] != "b200_sxm" or is_gap(row):
        return None
    measured = measured_at(row) if family_of(model) == "deepseek" else None
    return measured if measured is not None and measured < WARMUP_FROM else None


def prompts_per_client(row: Mapping[str, str], model: str, precision: str) -> int | None:
    """The prompts per client the B200 docker runner's launcher sent for `row` (module
    docstring), or None where the row's script says (`aic.PROMPTS_PER_CLIENT`). `model`: the
    catalog name; `precision`: the weights' (`fp8`: the `deepseek-ai/DeepSeek-R1-0528`
    checkpoint; the NVFP4 one, `...-FP4-V2`, got 10c)."""
    measured = _deepseek_before_warmup(row, model)
    if measured is None or measured >= SLURM_B200_FROM or not precision.startswith("fp8"):
        return None
    long_output = int(row["osl"]) == 8192
    return DOCKER_LONG_OUTPUT_PROMPTS_PER_CLIENT if long_output else DOCKER_PROMPTS_PER_CLIENT


def prompt_count_unknown(row: Mapping[str, str], model: str, precision: str) -> str | None:
    """Why the fits train without `row`, a run `prompts_per_client` cannot place: an
    InferenceX DeepSeek FP8 SGLang B200 run from ea181ae6d to the warm-up, when the `b200`
    label sent it to a docker node (50c / 20c) or a slurm node (10c); else None."""
    measured = _deepseek_before_warmup(row, model)
    if measured is None or measured < SLURM_B200_FROM or not precision.startswith("fp8"):
        return None
    return (
        f"prompt count unknown: measured {measured[:10]} on the b200 label's docker (50c) or "
        "slurm (10c) nodes, before InferenceX's client warm-up (ea181ae6d, d053ae24e)"
    )


def first_use_builds(
    row: Mapping[str, str], model: str, concurrency: int, chunk_tokens: int
) -> int:
    """How many one-off module builds the timed requests of `row` waited for (module
    docstring): 1 for an InferenceX DeepSeek SGLang B200 run from the 0.5.5 image without
    the client's warm-up whose first wave, `concurrency` prompts of the row's ISL, exceeds
    one prompt step of `chunk_tokens` (the launch's `--chunked-prefill-size`); else 0."""
    measured = _deepseek_before_warmup(row, model)
    if measured is None or measured[:10] < BUILD_IMAGE_FROM:
        return 0
    return int(concurrency * int(row["isl"]) > chunk_tokens)
