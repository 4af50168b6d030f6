"""Transcribe the SGLang worker settings of the srt-slurm recipes InferenceX's Dynamo SGLang
sweeps launched into the table `llmsizer.calibrate.aic_sglang_recipes` reads:
`src/llmsizer/calibrate/data/srt_slurm_sglang.csv`.

    .venv/bin/python bench/srt_slurm_recipes.py --srt-slurm PATH --inferencex PATH [--out PATH]

Both PATHs are git directories (bare clones are enough): NVIDIA/srt-slurm and
SemiAnalysisAI/InferenceX. Every `dynamo-sglang` line of
`src/llmsizer/calibrate/data/inferencex_sweeps.csv` names its recipe (`CONFIG_FILE=`): a path
in srt-slurm, optionally `:override_NAME` or `:zip_override_NAME[i]` (a file holding a `base`
recipe and variants: an `override_` section merged over `base`, the i-th element of each list
of a `zip_override_` section merged over it). InferenceX's runners cloned srt-slurm
(ishandhanani/srt-slurm `sa-submission-q1-2026` until 2026-03, merged into NVIDIA/srt-slurm
`main` at 5063eb43 "Merge sa-submission-q1-2026 into main (#202)"; `main` or a release tag
after). A sweep named before that merge reads its recipe as the branch held it, the merge
commit (a squash: the branch's files; `h100-fp8-1p1d-max-dep.yaml` there sets the decode
`max-running-requests` 16, `main` before it 8, which SGLang 0.5.x refuses on 16 attention-DP
ranks: `tp_worker.py` asserts `max_running_requests // dp_size > 0`, "max_running_request is
zero"); a recipe the merge does not hold, or a later sweep, reads it in NVIDIA/srt-slurm at
the newest commit that changed it before the InferenceX revision that named it (`since`),
else at the first commit that has it; a path srt-slurm never held is read from
InferenceX's own copy (`benchmarks/multi_node/srt-slurm-recipes/`, which its runners copy
into the clone) at the sweep's commit. One line per (recipe, InferenceX commit): the file and
commit read, and per pool the SGLang server arguments that size its batches:
`max-running-requests` (all of the worker's attention-DP ranks together), `dp-size` with
`enable-dp-attention`, `chunked-prefill-size`, `mem-fraction-static`, `cuda-graph-max-bs`,
`disable-cuda-graph`, and how its MoE layers exchange tokens, `moe-a2a-backend` with
`deepep-mode`; empty where the recipe does not set it.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SWEEPS = REPO / "src/llmsizer/calibrate/data/inferencex_sweeps.csv"
OUT = REPO / "src/llmsizer/calibrate/data/srt_slurm_sglang.csv"
INFERENCEX_COPY = "benchmarks/multi_node/srt-slurm-recipes/"
SETTINGS = {  # column -> the recipe's spellings of the server argument
    "max_running_requests": ("max-running-requests",),
    "dp_size": ("dp-size", "data-parallel-size", "dp"),
    "dp_attention": ("enable-dp-attention",),
    "chunked_prefill_size": ("chunked-prefill-size",),
    "mem_fraction_static": ("mem-fraction-static",),
    "cuda_graph_max_bs": ("cuda-graph-max-bs",),
    "disable_cuda_graph": ("disable-cuda-graph",),
    "moe_a2a_backend": ("moe-a2a-backend",),
    "deepep_mode": ("deepep-mode",),
}
POOL_COLUMNS = tuple(f"{pool}_{name}" for pool in ("prefill", "decode") for name in SETTINGS)
COLUMNS = ("recipe", "inferencex_commit", "read_from", "read_commit", *POOL_COLUMNS)
MERGE = "5063eb432", "2026-03-03T08:49:10Z"  # Merge sa-submission-q1-2026 into main (#202)
_ZIP = re.compile(r"^(zip_override_\w+)\[(\d+)\]$")


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True, text=True
    ).stdout


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in over.items()}}
    return over


def _pick(section: Any, i: int) -> Any:
    """The i-th variant of a `zip_override_` section: each list's i-th element."""
    if isinstance(section, dict):
        return {k: _pick(v, i) for k, v in section.items()}
    return section[i] if isinstance(section, list) else section


def _variant(doc: dict[str, Any], variant: str) -> dict[str, Any]:
    if not variant:
        return doc
    base = doc.get("base") or {}
    zipped = _ZIP.match(variant)
    if zipped:
        return _merge(base, _pick(doc[zipped.group(1)], int(zipped.group(2))))
    return _merge(base, doc[variant])


def _read(srt: Path, inferencex: Path, path: str, since: str, commit: str) -> tuple[str, str, str]:
    """(repository, commit, text) of a recipe as the module docstring reads it."""
    if since < MERGE[1]:
        try:
            return "NVIDIA/srt-slurm", MERGE[0], _git(srt, "show", f"{MERGE[0]}:{path}")
        except subprocess.CalledProcessError:
            pass  # not in the merged branch
    changed = _git(srt, "rev-list", "-1", f"--before={since}", "HEAD", "--", path).strip()
    if not changed:
        first = _git(srt, "log", "--reverse", "--format=%H", "HEAD", "--", path).split()
        changed = first[0] if first else ""
    if changed:
        try:
            return "NVIDIA/srt-slurm", changed[:9], _git(srt, "show", f"{changed}:{path}")
        except subprocess.CalledProcessError:
            pass  # the first commit that touched it deleted it
    copy = INFERENCEX_COPY + path.removeprefix("recipes/")
    return "SemiAnalysisAI/InferenceX", commit, _git(inferencex, "show", f"{commit}:{copy}")


def _setting(pool: dict[str, Any], names: tuple[str, ...]) -> str:
    for name in names:
        if name in pool and pool[name] is not None:
            value = pool[name]
            return str(int(value)) if isinstance(value, bool) else str(value)
    return ""


def transcribe(srt: Path, inferencex: Path) -> list[dict[str, str]]:
    with SWEEPS.open(newline="") as f:
        lines = [r for r in csv.DictReader(f) if r["engine"] == "sglang" and r["recipe"]]
    table, seen = [], set()
    for line in lines:
        key = (line["recipe"], line["commit"])
        if key in seen:
            continue
        seen.add(key)
        path, _, variant = line["recipe"].partition(":")
        try:
            repo, read_commit, text = _read(srt, inferencex, path, line["since"], line["commit"])
        except subprocess.CalledProcessError:
            print(f"not found: {line['recipe']} @{line['commit']}")
            continue
        recipe = _variant(yaml.safe_load(text), variant)
        config = (recipe.get("backend") or {}).get("sglang_config") or {}
        row = {"recipe": line["recipe"], "inferencex_commit": line["commit"],
               "read_from": f"{repo}:{path}", "read_commit": read_commit}  # fmt: skip
        for pool in ("prefill", "decode"):
            settings = config.get(pool) or {}
            row |= {f"{pool}_{k}": _setting(settings, names) for k, names in SETTINGS.items()}
        table.append(row)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--srt-slurm", type=Path, required=True, help="srt-slurm's git directory")
    parser.add_argument("--inferencex", type=Path, required=True, help="InferenceX's git dir")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    table = transcribe(args.srt_slurm, args.inferencex)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
    print(f"wrote {len(table)} recipes to {args.out}")


if __name__ == "__main__":
    main()
