"""What the input fuzzing feeds and what it checks, shared by the property tests
(`tests/test_input_properties.py`, driven by Hypothesis) and the longer campaign
(`bench/fuzz_campaign.py`, driven by `random.Random`).

A *reader target* is one of llmsizer's readers of user files, with seed documents (valid
inputs taken from the examples and test data) and a check. An input is a seed with a few
values replaced, deleted or added (`mutate`), a seed's text with bytes changed
(`mutate_text`), or random bytes. The property: the reader returns a value that passes the
check (no negative length, no NaN rate), or raises the project's own error, a `ValueError`
whose message is one readable text (never pydantic's raw dump). Anything else is a crash.

A *command target* is a command of the CLI with a vocabulary of flags and values; the
property: exit status 0, 1 (compare's tolerance verdict) or 2, never a traceback.
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import math
import random
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import ValidationError

from tests.bench.fault_server import Fault, FaultServer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DATA = ROOT / "tests" / "calibrate" / "data"
REFERENCE = EXAMPLES / "reference-server" / "calibration"

SPECIAL: tuple[Any, ...] = (
    0, -1, 1, 2, 2**31, 2**63, -(2**63), 2**64, 10**9, 10**7 + 1,
    float("inf"), float("-inf"), float("nan"), 0.5, -0.5, 1e-300, 1e300,
    "", "x", "inf", "nan", "-1", "1e400", "0", "1000", None, True, False,
    [], {}, [0], [None], {"kind": "x"}, {"engine": {}}, "vllm", "trtllm", "gpu", "fixed",
    "continuous", "static", "poisson", "burst", "closed_loop", "trace", "llama-3.1-8b",
    "h100-sxm", "fp8", "efficiency_factors", "fitted_step_cost", "a" * 300,
)  # fmt: skip


class Crash(AssertionError):
    """The property failed: another exception type, or a value that is silently wrong."""


class Misnamed(Crash):
    """A message about flags names what the user did not type (a schema path, a field)."""


# --- mutations -------------------------------------------------------------------------


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON/YAML-able value: mostly the special values, sometimes random or nested."""
    roll = rng.random()
    if roll < 0.6:
        return copy.deepcopy(rng.choice(SPECIAL))
    if roll < 0.7:
        return rng.randint(-(2**70), 2**70)
    if roll < 0.8:
        return rng.uniform(-1e6, 1e6)
    if roll < 0.9 or depth > 1:
        return "".join(rng.choice("ab01 .-_\n:{}[]#é\x00") for _ in range(rng.randint(0, 8)))
    if rng.random() < 0.5:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}": random_value(rng, depth + 1) for i in range(rng.randint(0, 3))}


def _slots(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in `doc`, depth first."""
    out: list[tuple[Any, Any]] = []
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, value in items:
        out.append((doc, key))
        out += _slots(value)
    return out


def mutate(seed: Any, rng: random.Random) -> Any:
    """`seed` with one to four changes: a value replaced, a key or item deleted, an unknown
    key added, an item doubled; rarely the whole document replaced."""
    if rng.random() < 0.03:
        return random_value(rng)
    doc = copy.deepcopy(seed)
    for _ in range(rng.randint(1, 4)):
        slots = _slots(doc)
        if not slots:
            break
        container, key = rng.choice(slots)
        action = rng.random()
        if action < 0.65:
            container[key] = random_value(rng)
        elif action < 0.8:
            del container[key]
        elif action < 0.9 and isinstance(container, dict):
            container[rng.choice(["extra", "kind", "engine", "model", "name"])] = random_value(rng)
        elif isinstance(container, list):
            container.append(copy.deepcopy(container[key]))
    return doc


def mutate_text(data: bytes, rng: random.Random) -> bytes:
    """`data` with bytes flipped, a piece cut, or a special token put in."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        at = rng.randint(0, len(out))
        if roll < 0.3 and out:
            out[min(at, len(out) - 1)] = rng.randint(0, 255)
        elif roll < 0.5:
            del out[at:]
        elif roll < 0.8:
            token = rng.choice([b"-1", b"1e400", b"NaN", b"9223372036854775808", b"\xff", b"\n"])
            out[at:at] = token
        else:
            del out[at : at + rng.randint(1, 20)]
    return bytes(out)


# --- reader targets -------------------------------------------------------------------


@dataclass(frozen=True)
class ReaderTarget:
    name: str
    suffix: str
    seeds: tuple[Any, ...]
    render: Callable[[Any], bytes]
    read: Callable[[Path], None]  # reads the file and checks what it returns

    def generate(self, rng: random.Random) -> bytes:
        seed = rng.choice(self.seeds)
        roll = rng.random()
        if roll < 0.05:
            return rng.randbytes(rng.randint(0, 120))
        if roll < 0.25:
            return mutate_text(self.render(seed), rng)
        try:
            return self.render(mutate(seed, rng))
        except (TypeError, ValueError, yaml.YAMLError):  # a mutation the format cannot hold
            return self.render(seed)

    def check(self, data: bytes, folder: Path) -> str:
        """ "ok" or "error" (the project's error); raises `Crash` otherwise."""
        path = folder / f"input{self.suffix}"
        path.write_bytes(data)
        return run_reader(self.read, path)


def run_reader(read: Callable[[Path], None], path: Path) -> str:
    try:
        read(path)
    except ValidationError as e:  # a ValueError, but pydantic's dump, not ours
        raise Crash(f"unformatted pydantic error: {str(e)[:300]}") from e
    except ValueError as e:
        if not str(e).strip():
            raise Crash(f"{type(e).__name__} without a message") from e
        return "error"
    except Crash:
        raise
    except Exception as e:
        raise Crash(f"{type(e).__name__}: {e}"[:300]) from e
    return "ok"


def _yaml(doc: Any) -> bytes:
    return yaml.safe_dump(doc, allow_unicode=True).encode()


def _json(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def _jsonl(doc: Any) -> bytes:
    rows = doc if isinstance(doc, list) else [doc]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _csv(doc: Any) -> bytes:
    rows = doc if isinstance(doc, list) else [doc]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow(row if isinstance(row, list) else [row])
    return buffer.getvalue().encode()


def _finite(value: Any, what: str) -> None:
    number = isinstance(value, float | int) and not isinstance(value, bool)
    if number and not math.isfinite(value):
        raise Crash(f"{what} = {value} taken silently")


def _all_finite(doc: Any, what: str = "value") -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            _all_finite(v, f"{what}.{k}")
    elif isinstance(doc, list | tuple):
        for i, v in enumerate(doc):
            _all_finite(v, f"{what}[{i}]")
    else:
        _finite(doc, what)


def _check_lengths(prompt: np.ndarray, output: np.ndarray) -> None:
    from llmsizer.workload import lengths as module

    MAX_TOKENS = getattr(module, "MAX_TOKENS", 2**62)  # older versions have none
    for name, lengths in (("prompt", prompt), ("output", output)):
        if lengths.size and (lengths.min() < 1 or lengths.max() > MAX_TOKENS):
            raise Crash(f"{name} length {lengths.min()}..{lengths.max()} taken silently")


def _read_scenario(path: Path) -> None:
    from llmsizer.config import load_scenario
    from llmsizer.workload import make_workload

    scenario = load_scenario(path)
    _all_finite(scenario.model_dump(), "scenario")
    if (scenario.workload.num_requests or 1000) <= 2000:
        workload = make_workload(scenario.workload)
        _check_lengths(workload.num_prompt_tokens, workload.num_output_tokens)
        if workload.arrival_s is not None and not np.isfinite(workload.arrival_s).all():
            raise Crash("arrival times not finite")


def _read_usecase(path: Path) -> None:
    from llmsizer.config import load_usecase

    usecase = load_usecase(path)
    _all_finite(usecase.model_dump(), "usecase")
    if usecase.input_tokens < 1 or usecase.output_tokens < 1:
        raise Crash(f"lengths {usecase.input_tokens} / {usecase.output_tokens}")
    rate = usecase.load.planning_peak_rps()
    if not (math.isfinite(rate) and rate > 0):
        raise Crash(f"planning peak {rate} req/s taken silently")


def _read_trace(path: Path) -> None:
    from llmsizer.workload import read_trace

    workload = read_trace(path)
    _check_lengths(workload.num_prompt_tokens, workload.num_output_tokens)
    arrivals = workload.arrival_s
    if arrivals is not None and not (
        np.isfinite(arrivals).all() and (np.diff(arrivals) >= 0).all()
    ):
        raise Crash("arrival times not finite or not in order")


def _read_hf_config(path: Path) -> None:
    from llmsizer.specs import get_model

    model = get_model(path)
    counts = (model.num_layers, model.hidden_size, model.num_key_value_heads, model.head_dim)
    if min(counts) < 1:
        raise Crash(f"counts {counts} taken silently")


def _read_results(path: Path) -> None:
    from llmsizer.calibrate.readers import import_results
    from llmsizer.metrics import summarize

    for run in import_results(path):
        for record in run.records:
            if record.num_prompt_tokens < 0 or not math.isfinite(record.arrival_s):
                raise Crash(f"record {record.request_id}: negative length or arrival not finite")
        with warnings.catch_warnings():  # times near 1e308 overflow a sum: inf, not a crash
            warnings.simplefilter("ignore", RuntimeWarning)
            summarize(list(run.records))


def _read_efficiency(path: Path) -> None:
    from dataclasses import asdict

    from llmsizer.perf.calibrated import load_calibration

    _all_finite(asdict(load_calibration(path)), "factors")


def _read_step_calibration(path: Path) -> None:
    from llmsizer.calibrate.step_calibration import load_step_calibration

    _all_finite(load_step_calibration(path).model_dump(), "calibration")


def _read_cases(path: Path) -> None:
    from llmsizer import errors
    from llmsizer.cli.predict import _spec_of

    if hasattr(errors, "read_csv_rows"):
        rows = errors.read_csv_rows(path, "cases file")
    else:  # before issue 14: what `predict --cases` did
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
    for row in rows:
        spec = _spec_of(row)
        if spec.isl < 1 or spec.osl < 1:
            raise Crash("non-positive lengths taken")


def _load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _load_lines(path: Path, limit: int = 12) -> list[Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for _, line in zip(range(limit), f, strict=False)]


def _trimmed(doc: Any, limit: int = 6) -> Any:
    """`doc` with every list cut to `limit` items (small seeds mutate faster)."""
    if isinstance(doc, dict):
        return {k: _trimmed(v, limit) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_trimmed(v, limit) for v in doc[:limit]]
    return doc


LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
}
MOE_CONFIG = {
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "mlp_only_layers": [],
    "vocab_size": 151936,
    "sliding_window": 4096,
    "use_sliding_window": True,
    "text_config": {"head_dim": 128},
}
MLA_CONFIG = {
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "num_nextn_predict_layers": 1,
}
GPU_SCENARIO = {
    "workload": {"arrival": "closed_loop", "concurrency": 2, "num_requests": 4, "isl": 64},
    "step_cost": {"kind": "gpu", "model": "llama-3.1-8b", "gpu": "h100-sxm", "precision": "fp8"},
    "slo": {"ttft_ms": 500},
}
AZURE_ROWS = [
    ["TIMESTAMP", "ContextTokens", "GeneratedTokens"],
    ["2023-11-16 18:15:46.6805900", "374", "44"],
    ["2023-11-16 18:15:50.9951690", "396", "109"],
    ["2023-11-16 18:15:51.2224670", "879", "55"],
]
MOONCAKE_ROWS = [
    {"timestamp": 0, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2]},
    {"timestamp": 27482, "input_length": 7319, "output_length": 490, "hash_ids": [0, 3]},
    {"timestamp": 30535, "input_length": 7234, "output_length": 794, "hash_ids": [4]},
]


def reader_targets() -> list[ReaderTarget]:
    """Every reader of a user file, with its seeds."""
    sizing = sorted((EXAMPLES / "sizing").glob("*.yaml"))
    cases = list(csv.reader((EXAMPLES / "predict" / "cases.csv").read_text().splitlines()))
    records = _load_lines(REFERENCE / "round1" / "sweep-concurrency1.jsonl.gz")
    sweep = json.loads((REFERENCE / "round1" / "sweep.json").read_text())[:2]
    for point in sweep:
        point["records_path"] = str(REFERENCE / "round1" / Path(point["records_path"]).name)
    results = [
        _trimmed(json.loads((DATA / name).read_text()))
        for name in ("vllm_detailed.json", "guidellm_v03_benchmarks.json")
    ]
    aiperf = _load_lines(DATA / "aiperf" / "profile_export.jsonl", 6)
    packaged = ROOT / "src" / "llmsizer" / "perf" / "data" / "calibrated_vllm.yaml"
    return [
        ReaderTarget(
            "scenario YAML",
            ".yaml",
            (
                _load_yaml(EXAMPLES / "notebook" / "static.yaml"),
                _load_yaml(EXAMPLES / "notebook" / "inflight.yaml"),
                GPU_SCENARIO,
            ),
            _yaml,
            _read_scenario,
        ),
        ReaderTarget(
            "use-case YAML", ".yaml", tuple(map(_load_yaml, sizing)), _yaml, _read_usecase
        ),
        ReaderTarget("Azure trace CSV", ".csv", (AZURE_ROWS,), _csv, _read_trace),
        ReaderTarget("Mooncake trace JSONL", ".jsonl", (MOONCAKE_ROWS,), _jsonl, _read_trace),
        ReaderTarget(
            "HF config.json",
            ".json",
            (LLAMA_CONFIG, MOE_CONFIG, MLA_CONFIG),
            _json,
            _read_hf_config,
        ),
        ReaderTarget("result file (JSON)", ".json", (*results, sweep), _json, _read_results),
        ReaderTarget("result file (JSONL)", ".jsonl", (records, aiperf), _jsonl, _read_results),
        ReaderTarget(
            "efficiency calibration", ".yaml", (_load_yaml(packaged),), _yaml, _read_efficiency
        ),
        ReaderTarget(
            "fitted step cost",
            ".yaml",
            (_load_yaml(REFERENCE / "calibration.yaml"),),
            _yaml,
            _read_step_calibration,
        ),
        ReaderTarget("predict --cases CSV", ".csv", (cases[:4],), _csv, _read_cases),
    ]


# --- command targets --------------------------------------------------------------------

NUMBERS = ("0", "-1", "1", "4", "64", "1000", "0.5", "inf", "nan", "-inf", "1e400",
           "9223372036854775808", "1000000000", "x", "")  # fmt: skip
COMMON_FLAGS: dict[str, tuple[str, ...]] = {
    "--model": ("llama-3.1-8b", "qwen3-8b", "llama-3.1-70c", "x", "/nonexistent/config.json"),
    "--gpu": ("h100-sxm", "H100_SXM", "b200", "l4", "nope", ""),
    "--precision": ("fp8", "bf16", "fp4", "int3", ""),
    "--tp": ("1", "2", "3", "0", "-1", "x"),
    "--pp": ("1", "2", "0"),
    "--engine": ("vllm", "trtllm", "sglang", "tgi", ""),
    "--isl": NUMBERS,
    "--osl": NUMBERS,
}
COMMANDS: dict[str, dict[str, tuple[str, ...]]] = {
    "simulate": {
        "--num-requests": ("1", "8", "64", "0", "-3", "x"),
        "--arrival": ("burst", "poisson", "gamma", "closed_loop", "trace", "nope"),
        "--request-rate": NUMBERS,
        "--concurrency": ("1", "4", "0", "-1", "x"),
        "--batching": ("static", "dynamic", "continuous", "nope"),
        "--max-num-seqs": ("1", "4", "0", "1000000000"),
        "--max-num-batched-tokens": ("1", "16", "8192", "0"),
        "--step-time-ms": NUMBERS,
        "--prefill-ticks": ("1", "8", "0"),
        "--burstiness": NUMBERS,
        "--seed": ("0", "1", "-1", "9223372036854775808"),
        "--plot": ("t.png", "t.jpg", "t"),
        **{k: v for k, v in COMMON_FLAGS.items() if k != "--engine"},
        "--trace": ("@trace", "/nonexistent.csv"),
    },
    "predict": {
        **COMMON_FLAGS,
        "--concurrency": ("1", "4", "0", "-2", "x", "1000000000"),
        "--request-rate": NUMBERS,
        "--num-requests": ("1", "16", "0"),
        "--offline": (),
        "--kv-cache-dtype": ("fp8", "bf16", "nope"),
        "--gpu-memory-utilization": ("0.9", "0", "1.5", "nan"),
        "--calibration": ("@fitted", "@garbage", "/nonexistent.yaml"),
    },
    "plan": {
        **COMMON_FLAGS,
        "--peak-rps": NUMBERS,
        "--average-rps": NUMBERS,
        "--ttft-ms": NUMBERS,
        "--tpot-ms": NUMBERS,
        "--percentile": ("50", "95", "99", "100", "0", "101", "nan"),
        "--headroom": ("0", "0.2", "-1", "nan"),
        "--offline": (),
        "--words": (),
        "--calibration": ("@fitted", "@garbage"),
    },
    "calibrate": {
        "@results": ("@sweep", "@records", "@garbage", "@empty", "/nonexistent.json"),
        "--engine": ("vllm", "trtllm", "nope"),
        "--max-num-seqs": ("1", "128", "0", "-5"),
        "--max-num-batched-tokens": ("2048", "0"),
        "--num-gpu-blocks": ("8192", "0", "1"),
        "--block-size": ("16", "128", "0", "3"),
        "--no-context-term": (),
        "--out": ("@out",),
    },
    "bench": {  # against the fault server (tests/bench/fault_server.py): `@server`
        "--base-url": ("@server", "@server", "@server", "http://127.0.0.1:9", "localhost", ""),
        "--num-prompts": ("1", "3", "8", "0", "-1", "x"),
        "--num-warmups": ("0", "1", "-1"),
        "--concurrency": ("1", "2", "1,4", "0", "2,x", ""),
        "--request-rate": ("10", "1000", "inf", "-1", "nan", "5,x"),
        "--isl": ("1", "8", "64", "0", "-1", "x", "1e400", "9223372036854775808"),
        "--osl": ("1", "4", "16", "0", "x", "9223372036854775808"),
        "--burstiness": ("1", "0.5", "0", "nan"),
        "--endpoint": ("completions", "chat", "nope"),
        "--timeout-s": ("1", "2", "0", "-1", "nan"),
        "--request-timeout-s": ("2", "0", "inf"),
        "--seed": ("0", "1", "-1", "9223372036854775808"),
        "--system-prompt-tokens": ("0", "16", "-1"),
        "--prompt-tokens-from": ("auto", "usage", "tokenize-endpoint", "x"),
        "--json": ("@bench-json", "/nonexistent/dir/r.json"),
        "--records": ("@bench-records", "@bench-records-gz", "t.jpg"),
        "--trace": ("@trace", "/nonexistent.csv"),
    },
    "compare": {
        "@measured": ("@light", "@garbage", "@empty", "@heavy"),
        "@predicted": ("@predicted-light", "@predicted-heavy", "@garbage", "@empty", "@light"),
        "--tolerance": ("5", "50", "0", "-5", "nan", "inf", "x"),
        "--markdown": ("@md",),
    },
}


GPU = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "fp8", "--tp", "1"]
BASE: dict[str, list[str]] = {
    "simulate": ["--num-requests", "16", "--isl", "64", "--osl", "16"],
    "predict": [*GPU, "--isl", "128", "--osl", "16", "--concurrency", "2", "--num-requests", "8"],
    "plan": [*GPU, "--engine", "vllm", "--isl", "500", "--osl", "50", "--peak-rps", "2"],
    "calibrate": [],
    "compare": [],
    "bench": [
        "--base-url",
        "@server",
        "--num-prompts",
        "4",
        "--num-warmups",
        "0",
        "--isl",
        "8",
        "--osl",
        "4",
        "--timeout-s",
        "2",
        "--request-timeout-s",
        "10",
    ],
}  # a valid command line that the chosen flags then change (a later flag wins)


def command_argv(
    command: str, rng: random.Random, folder: Path, server_url: str | None = None
) -> list[str]:
    """A random command line for `command`: a few of its flags with values from the
    vocabulary; `@name` stands for a file made in `folder`, `@server` for `server_url` (a
    fault server's: `bench` needs one)."""
    vocabulary = COMMANDS[command]
    files = _command_files(folder) | ({"@server": server_url} if server_url else {})
    base = [files.get(a, a) for a in BASE[command]]
    argv = [command, *(base if rng.random() < 0.8 else [])]
    positional = [flag for flag in vocabulary if flag.startswith("@")]
    options = [flag for flag in vocabulary if not flag.startswith("@")]
    for flag in positional:
        value = rng.choice(vocabulary[flag])
        argv.append(files.get(value, value))
    for flag in rng.sample(options, k=min(len(options), rng.randint(1, 4))):
        values = vocabulary[flag]
        if not values:
            argv.append(flag)
        else:
            value = rng.choice(values)
            argv += [flag, files.get(value, value)]
    if command == "calibrate" and "--out" not in argv:  # its default is ./calibration.yaml
        argv += ["--out", files["@out"]]
    if command == "simulate" and "--num-requests" not in argv:
        argv += ["--num-requests", "16"]  # a default run is 1000 requests: keep each short
    if command == "bench":  # the defaults (port 8000, 200 prompts, 60 s timeout): too slow
        defaults = {"--base-url": server_url or "http://127.0.0.1:9", "--num-prompts": "4"}
        for flag, value in (defaults | {"--timeout-s": "2", "--osl": "4"}).items():
            if flag not in argv:
                argv += [flag, value]
    return [*argv, "--overwrite"]  # outputs share a scratch folder: each run may replace them


FUZZ_FAULTS = tuple(f for f in Fault if f not in (Fault.STALL, Fault.SILENT))  # the fast ones


def fault_server(lifetime_s: float = 3600.0) -> FaultServer:
    """A fault server for fuzzing `bench`: every fault but the slow ones (a stall, a silent
    server: the fault campaign's), cycled per request; enter it to start it."""
    return FaultServer(FUZZ_FAULTS, huge_bytes=2**16, max_requests=10**6, lifetime_s=lifetime_s)


def _command_files(folder: Path) -> dict[str, str]:
    garbage, empty = folder / "garbage.json", folder / "empty.json"
    if not garbage.exists():
        garbage.write_bytes(b"\x00\xffnot json")
        empty.write_text("{}")
        (folder / "trace.csv").write_bytes(_csv(AZURE_ROWS))
    return {
        "@trace": str(folder / "trace.csv"),
        "@garbage": str(garbage),
        "@empty": str(empty),
        "@fitted": str(REFERENCE / "calibration.yaml"),
        "@sweep": str(REFERENCE / "round1" / "sweep.json"),
        "@records": str(REFERENCE / "round1" / "sweep-concurrency1.jsonl.gz"),
        "@light": str(REFERENCE / "poisson-light.json"),
        "@heavy": str(REFERENCE / "poisson-heavy.json"),
        "@predicted-light": str(REFERENCE / "predicted-light.json"),
        "@predicted-heavy": str(REFERENCE / "predicted-heavy.json"),
        "@out": str(folder / "calibration.yaml"),
        "@md": str(folder / "comparison.md"),
        "@bench-json": str(folder / "bench.json"),
        "@bench-records": str(folder / "records.jsonl"),
        "@bench-records-gz": str(folder / "records.jsonl.gz"),
        "t.png": str(folder / "t.png"),
        "t.jpg": str(folder / "t.jpg"),
        "t": str(folder / "t"),
    }


def run_command(argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of `llmsizer argv` through the real entry point, in process;
    raises `Crash` when an exception escapes it or its output holds a traceback."""
    import contextlib
    import sys

    from llmsizer.cli import main

    err = io.StringIO()
    saved = sys.argv
    sys.argv = ["llmsizer", *argv]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                main()
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Crash:
        raise
    except Exception as e:
        raise Crash(f"{' '.join(argv)}: {type(e).__name__}: {e}"[:400]) from e
    finally:
        sys.argv = saved
    text = err.getvalue()
    if "Traceback" in text or code not in (0, 1, 2):
        raise Crash(f"{' '.join(argv)}: exit {code}: {text[-400:]}")
    if code == 2 and not text.strip():
        raise Crash(f"{' '.join(argv)}: exit 2 without a message")
    if code == 2 and (internal := internal_names(argv, text)):
        raise Misnamed(f"{' '.join(argv)}: names {internal}, not the flags: {text[-400:]}")
    return code, text


SCHEMA_PATH = re.compile(
    r"(?<![\w./'-])(workload|engine|step_cost|slo|limits|load|candidates|search|input)\.\w"
)
VLLM_NAMES = frozenset({"gpu_memory_utilization", "tensor_parallel_size"})  # also flags


def internal_names(argv: list[str], text: str) -> list[str]:
    """What a message about flags-only input names that the user did not type (issue 14):
    a schema path (`workload.osl`), a field under `invalid flags:` that is not a flag, or a
    flag's field name (`num_requests` for `--num-requests`)."""
    found = [m.group(0)[:-2] for m in SCHEMA_PATH.finditer(text)]
    if "invalid flags:" in text:
        block = text.split("invalid flags:", 1)[1].splitlines()
        found += [line for line in block if line.startswith("  ") and "--" not in line]
    fields = {a[2:].replace("-", "_") for a in argv if a.startswith("--") and "-" in a[2:]}
    found += [f for f in sorted(fields - VLLM_NAMES) if re.search(rf"\b{f}\b", text)]
    return found
