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

A row's prompt length is unknown, and the fits train without it, where all of these hold:
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
row ran 0.5.9 or older. They stay in the accuracy report, predicted at their nominal lengths.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from llmsizer.calibrate.aic_sweeps import measured_at
from llmsizer.calibrate.aic_twins import is_gap

TRANSFORMERS_5_FROM = (0, 5, 10)  # SGLang 0.5.10.post1 pins transformers==5.3.0; 0.5.9 4.57.1
LLAMA_CLASS_BYTE_LEVEL = frozenset({"deepseek-v3", "deepseek-r1"})  # InferenceX #937
CLIENT_FIXED = "2026-05-15"  # InferenceX 5fe6d56ee (#1381): the client's repair for repo ids
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
        f"prompt length unknown: SGLang {row['backend_version'].strip()} (transformers 5) "
        f"with {model}'s LlamaTokenizerFast, measured {measured[:10]} before InferenceX's "
        "client tokenizer fix (#1381): the server saw ~5x the prompt (InferenceX #937)"
    )
