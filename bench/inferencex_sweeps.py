"""Transcribe InferenceX's multi-node disaggregated sweeps (NVIDIA systems) into the table
`llmsizer.calibrate.aic_launches` reads: `src/llmsizer/calibrate/data/inferencex_sweeps.csv`.

    .venv/bin/python bench/inferencex_sweeps.py --git-dir PATH [--out PATH]

PATH is a clone of SemiAnalysisAI/InferenceX (its git directory; a bare clone is enough).
Every revision of `.github/configs/nvidia-master.yaml` (`configs/nvidia-master.yaml` from
2026-07-02) is read (`git log`, `git show`, no
work tree), and for each Dynamo disaggregated config (`framework: dynamo-trt` or
`dynamo-sglang`, `disagg: true`) on a system AIC measures (B200, B300, GB200, GB300, H100)
each `search-space` entry becomes one line: its `conc-list`, the prefill and decode pools
(`num-worker`, `tp`, `ep`, `dp-attn`), `spec-decoding` (mtp or none) with its draft tokens
where the entry says them (`mtp_tokens`) and the srt-slurm recipe it names (`CONFIG_FILE=`).
A config's sweeps are written at each revision that changed them, with the commit and its
commit time (UTC): the table's `since`, from which the sweeps were in force (InferenceX runs
a config's sweeps when its change reaches `main`, so a row's
`measured=` time follows the commit's by seconds to days).
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

OUT = Path(__file__).resolve().parents[1] / "src/llmsizer/calibrate/data/inferencex_sweeps.csv"
CONFIGS = (".github/configs/nvidia-master.yaml", "configs/nvidia-master.yaml")  # moved 2026-07-02
SYSTEMS = ("b200", "b300", "gb200", "gb300", "h100")  # runner prefixes AIC measures
ENGINES = {"dynamo-trt": "trtllm", "dynamo-sglang": "sglang"}
COLUMNS = (
    "since", "commit", "config", "engine", "system", "model_prefix", "precision", "isl",
    "osl", "mtp", "mtp_tokens", "clients", "prefill_workers", "prefill_tp", "prefill_ep",
    "prefill_dp_attn", "decode_workers", "decode_tp", "decode_ep", "decode_dp_attn", "recipe",
)  # fmt: skip


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True, text=True
    ).stdout


def _revisions(git_dir: Path) -> list[tuple[str, str]]:
    """(commit, commit time in UTC) of every revision of the config, oldest first."""
    out = []
    log = _git(git_dir, "log", "--reverse", "--format=%H %cI", "--", *CONFIGS)
    for line in log.splitlines():
        commit, when = line.split()
        utc = datetime.fromisoformat(when).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append((commit, utc))
    return out


def _recipe(pool: dict[str, Any]) -> str:
    for setting in pool.get("additional-settings") or ():
        if str(setting).startswith("CONFIG_FILE="):
            return str(setting).removeprefix("CONFIG_FILE=")
    return ""


_MTP_IN_RECIPE = re.compile(r"mtp(\d+)")  # `..._eplb0_mtp3.yaml`: num_nextn_predict_layers 3


def _mtp_tokens(decode: dict[str, Any], recipe: str) -> str:
    """Draft tokens per step of an MTP sweep as its entry says: `DECODE_MTP_SIZE=N` (the
    GB200 launch script's `gen_mtp_size`), else `mtpN` in the recipe's name (the TensorRT-LLM
    recipes' `num_nextn_predict_layers`); empty when neither says (the recipe's body does)."""
    for setting in decode.get("additional-settings") or ():
        if str(setting).startswith("DECODE_MTP_SIZE="):
            return str(setting).removeprefix("DECODE_MTP_SIZE=")
    found = _MTP_IN_RECIPE.search(recipe.rsplit("/", 1)[-1])
    return found.group(1) if found else ""


def _sweeps(name: str, entry: dict[str, Any]) -> dict[tuple[str, int, int], list[dict[str, Any]]]:
    """A config's lines by (config, isl, osl), or nothing when it is not one we read."""
    engine = ENGINES.get(str(entry.get("framework")))
    system = str(entry.get("runner", "")).split("-")[0]
    if engine is None or not entry.get("disagg") or system not in SYSTEMS:
        return {}
    out: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    scenarios = entry.get("scenarios") or {}  # the schema from 2026-07
    for seq in entry.get("seq-len-configs") or scenarios.get("fixed-seq-len") or ():
        lines = []
        for s in seq.get("search-space") or ():
            p, d = s.get("prefill") or {}, s.get("decode") or {}
            mtp = int(s.get("spec-decoding", "none") not in ("none", None))
            lines.append(
                {"config": name, "engine": engine, "system": system,
                 "model_prefix": entry.get("model-prefix", ""), "precision": entry["precision"],
                 "isl": seq["isl"], "osl": seq["osl"],
                 "mtp": mtp, "mtp_tokens": _mtp_tokens(d, _recipe(p) or _recipe(d)) if mtp else "",
                 "clients": " ".join(str(c) for c in s.get("conc-list") or ()),
                 **{f"{role}_{k}": int(pool.get(key, 1) or 0)
                    for role, pool in (("prefill", p), ("decode", d))
                    for k, key in (("workers", "num-worker"), ("tp", "tp"), ("ep", "ep"))},
                 "prefill_dp_attn": int(bool(p.get("dp-attn"))),
                 "decode_dp_attn": int(bool(d.get("dp-attn"))),
                 "recipe": _recipe(p) or _recipe(d)}
            )  # fmt: skip
        out[(name, int(seq["isl"]), int(seq["osl"]))] = lines
    return out


def config_entries(git_dir: Path) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(commit, its time, config name, config) of every config at every revision of the
    config file (`_revisions`), oldest first; a revision that does not parse ran nothing."""
    for commit, since in _revisions(git_dir):
        doc = None
        for path in CONFIGS:
            try:
                doc = yaml.load(_git(git_dir, "show", f"{commit}:{path}"), Loader=yaml.CSafeLoader)
                break
            except subprocess.CalledProcessError:
                continue  # not at this path in this revision
            except yaml.YAMLError:
                break
        if isinstance(doc, dict):
            for name, entry in doc.items():
                if isinstance(entry, dict):
                    yield commit, since, str(name), entry


def transcribe(git_dir: Path) -> list[dict[str, Any]]:
    """Every config's sweeps at each revision that changed them (module docstring)."""
    last: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    table = []
    for commit, since, name, entry in config_entries(git_dir):
        for key, lines in _sweeps(name, entry).items():
            if last.get(key) != lines:
                last[key] = lines
                table += [{"since": since, "commit": commit[:9], **line} for line in lines]
    return table


def write_table(path: Path, columns: Sequence[str], table: list[dict[str, Any]]) -> None:
    """`table` as CSV at `path`, in `columns` order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, columns, lineterminator="\n")
        out.writeheader()
        out.writerows(table)


def run_transcription(
    doc: str,
    transcribe: Callable[[Path], list[dict[str, Any]]],
    columns: Sequence[str],
    out: Path,
) -> None:
    """A transcription script's command line: `--git-dir` (InferenceX's) and `--out`
    (default `out`); `transcribe` the revisions, write the table with `columns`."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--git-dir", type=Path, required=True, help="InferenceX's git directory")
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args()
    table = transcribe(args.git_dir)
    write_table(args.out, columns, table)
    print(f"wrote {len(table)} sweeps to {args.out}")


def main() -> None:
    run_transcription(__doc__, transcribe, COLUMNS, OUT)


if __name__ == "__main__":
    main()
