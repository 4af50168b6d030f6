"""Transcribe InferenceX's single-node SGLang sweeps into the table
`llmsizer.calibrate.aic_agg_sweeps` reads: `src/llmsizer/calibrate/data/inferencex_agg_sweeps.csv`.

    .venv/bin/python bench/inferencex_agg_sweeps.py --git-dir PATH [--out PATH]

PATH is a clone of SemiAnalysisAI/InferenceX (its git directory; a bare clone is enough).
Every revision of `nvidia-master.yaml` (`bench/inferencex_sweeps.py` reads the same
revisions) is read, and for each single-node SGLang config (`framework: sglang`, neither
`multinode` nor `disagg`) on a system AIC measures, each `search-space` entry becomes one
line: the config's `image`, the entry's GPUs (`tp`), `ep`, `dp-attn`, its client counts
(`conc-start` to `conc-end`, doubling, as the workflow expands them), and `spec-decoding`
(mtp or none). An MTP line carries its draft tokens per step: `SPECULATIVE_NUM_STEPS` (or
the literal `--speculative-num-steps`) of the config's launch script at the revision that
changed the config's lines (`benchmarks/single_node/<prefix>_<precision>_<runner>_mtp.sh`;
`benchmarks/` before 2026-02-19), with `--speculative-eagle-topk 1` a chain of that many
tokens. A config's lines are written at each revision that changed them, with the commit and
its commit time (UTC): the table's `since`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from inferencex_sweeps import SYSTEMS, _git, config_entries, run_transcription

OUT = Path(__file__).resolve().parents[1] / "src/llmsizer/calibrate/data/inferencex_agg_sweeps.csv"
COLUMNS = (
    "since", "commit", "config", "system", "model_prefix", "precision", "image", "isl", "osl",
    "gpus", "ep", "dp_attn", "clients", "mtp", "mtp_tokens",
)  # fmt: skip
_STEPS = re.compile(r"SPECULATIVE_NUM_STEPS=(\d+)|--speculative-num-steps[ =](\d+)")


def _clients(entry: dict[str, Any]) -> str:
    """`conc-start` to `conc-end`, doubling (the workflow's expansion), or `conc-list`."""
    if entry.get("conc-list"):
        return " ".join(str(c) for c in entry["conc-list"])
    c, end, out = entry.get("conc-start"), entry.get("conc-end"), []
    while c is not None and c <= (end or c):
        out.append(str(c))
        c *= 2
    return " ".join(out)


def _mtp_tokens(git_dir: Path, commit: str, entry: dict[str, Any]) -> str:
    """`SPECULATIVE_NUM_STEPS` of the config's MTP script at `commit` ('' if none found)."""
    runner = str(entry.get("runner", "")).split("-")[0]
    name = f"{entry.get('model-prefix')}_{entry.get('precision')}_{runner}_mtp.sh"
    for folder in ("benchmarks/single_node", "benchmarks"):
        try:
            found = _STEPS.search(_git(git_dir, "show", f"{commit}:{folder}/{name}"))
        except subprocess.CalledProcessError:
            continue
        return (found.group(1) or found.group(2)) if found else ""
    return ""


def _lines(name: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A config's lines (module docstring), or none when it is not one we read."""
    system = str(entry.get("runner", "")).split("-")[0]
    single = not entry.get("multinode") and not entry.get("disagg")
    if entry.get("framework") != "sglang" or not single or system not in SYSTEMS:
        return []
    out = []
    for seq in entry.get("seq-len-configs") or ():
        for s in seq.get("search-space") or ():
            mtp = int(s.get("spec-decoding", "none") not in ("none", None))
            out.append(
                {"config": name, "system": system, "model_prefix": entry.get("model-prefix", ""),
                 "precision": entry.get("precision", ""), "image": entry.get("image", ""),
                 "isl": seq["isl"], "osl": seq["osl"], "gpus": int(s.get("tp", 1)),
                 "ep": int(s.get("ep") or 1), "dp_attn": int(bool(s.get("dp-attn"))),
                 "clients": _clients(s), "mtp": mtp}
            )  # fmt: skip
    return out


def transcribe(git_dir: Path) -> list[dict[str, Any]]:
    """Every config's lines at each revision that changed them (module docstring)."""
    last: dict[str, list[dict[str, Any]]] = {}
    table = []
    for commit, since, name, entry in config_entries(git_dir):
        lines = _lines(name, entry)
        if lines and last.get(name) != lines:
            last[name] = lines
            tokens = _mtp_tokens(git_dir, commit, entry) if any(x["mtp"] for x in lines) else ""
            table += [
                {"since": since, "commit": commit[:9], **line,
                 "mtp_tokens": tokens if line["mtp"] else ""}
                for line in lines
            ]  # fmt: skip
    return table


def main() -> None:
    run_transcription(__doc__, transcribe, COLUMNS, OUT)


if __name__ == "__main__":
    main()
