"""Which aggregated AIC rows an InferenceX single-node sweep ran with MTP, without it, or both.

    .venv/bin/python bench/agg_mtp_sweeps.py --git-dir PATH [--rows ROWS_CSV]

PATH is a clone of SemiAnalysisAI/InferenceX (its git directory). Every revision of
`.github/configs/nvidia-master.yaml` from 2025-09 to 2026-04 is read, and each single-node
search-space entry gives the points it ran: framework, runner, model prefix, precision,
lengths, GPUs (`tp`), attention data parallelism (`dp-attn`), client counts (`conc-start`
to `conc-end`, doubling) and whether it speculated (`spec-decoding`). Each InferenceX agg row
of the calibration file (layout as `llmsizer.calibrate.aic` reads it) is matched against
them. With `--rows` (a `bench/fit_aic.py --rows` CSV) the leave-one-out TPOT errors are
summarised per engine, model and kind (docs/aic_measurement.md section 14).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import yaml

from llmsizer.calibrate.aic import AIC_GPUS, _concurrency, _layout
from llmsizer.specs import get_gpu

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "calibration" / "aic_silicon_calibration.csv"
CONFIG = ".github/configs/nvidia-master.yaml"
FRAMEWORKS = {"trtllm": "trt", "sglang": "sglang", "vllm": "vllm"}
PREFIXES = {"deepseek-ai/DeepSeek-R1": "dsr1", "deepseek-ai/DeepSeek-R1-0528": "dsr1",
            "Qwen/Qwen3.5-397B-A17B": "qwen3.5", "zai-org/GLM-5": "glm5",
            "zhipuai/GLM-5": "glm5", "moonshotai/Kimi-K2.5": "kimik2.5",
            "MiniMaxAI/MiniMax-M2.5": "minimaxm2.5"}  # fmt: skip
Point = tuple[str, str, str, str, int, int, int, bool, int, bool]


def _git(git_dir: Path, *args: str) -> str:
    run = ["git", "--git-dir", str(git_dir), *args]
    return subprocess.run(run, capture_output=True, text=True, check=False).stdout


def points(git_dir: Path) -> set[Point]:
    """(framework, runner, prefix, precision, isl, osl, GPUs, dp-attn, clients, mtp) of every
    single-node sweep in any revision of the window."""
    out: set[Point] = set()
    log = _git(
        git_dir, "log", "--format=%H", "--since=2025-09-01", "--until=2026-05-01", "--", CONFIG
    )
    for commit in log.split():
        try:
            doc = yaml.load(_git(git_dir, "show", f"{commit}:{CONFIG}"), Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue
        for entry in (doc or {}).values() if isinstance(doc, dict) else ():
            if not isinstance(entry, dict) or entry.get("multinode") or entry.get("disagg"):
                continue
            head = (str(entry.get("framework")), str(entry.get("runner", "")).split("-")[0],
                    str(entry.get("model-prefix")), str(entry.get("precision")))  # fmt: skip
            for seq in entry.get("seq-len-configs") or ():
                for s in seq.get("search-space") or ():
                    c, mtp = s.get("conc-start"), s.get("spec-decoding") not in ("none", None)
                    while c is not None and c <= s.get("conc-end", c):
                        out.add((*head, int(seq["isl"]), int(seq["osl"]), int(s.get("tp", 1)),
                                 bool(s.get("dp-attn")), int(c), mtp))  # fmt: skip
                        c *= 2
    return out


def kinds(rows_path: Path, ran: set[Point]) -> dict[str, str]:
    """Each InferenceX agg row's kind: `only MTP`, `MTP and STP`, `STP only` or `neither`."""
    out = {}
    with rows_path.open(newline="") as f:
        for r in csv.DictReader(f):
            source = r["silicon_data_source"]
            gpu = AIC_GPUS.get(r["system"])
            if r["mode"] != "agg" or gpu in (None, "gb200") or "gap-analysis" in source:
                continue
            if "gtl_job_id" in source:
                continue
            tp, _, dp = _layout(r, get_gpu(gpu).scale_up_domain_size)
            key = (FRAMEWORKS.get(r["backend"], ""), r["system"].split("_")[0],
                   PREFIXES.get(r["model_path"], r["model_path"]), r["precision"],
                   int(r["isl"]), int(r["osl"]), tp * dp, dp > 1, _concurrency(r))  # fmt: skip
            mtp, stp = (*key, True) in ran, (*key, False) in ran
            out[r["id"]] = {(True, False): "only MTP", (True, True): "MTP and STP",
                            (False, True): "STP only"}.get((mtp, stp), "neither")  # fmt: skip
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--git-dir", type=Path, required=True, help="InferenceX's git directory")
    p.add_argument("--csv", type=Path, default=CSV)
    p.add_argument("--rows", type=Path, default=None, help="a bench/fit_aic.py --rows CSV")
    args = p.parse_args()
    kind = kinds(args.csv, points(args.git_dir))
    if args.rows is None:
        for k, n in sorted(Counter(kind.values()).items()):
            print(f"{n} {k}")
        return
    errors: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    with args.rows.open(newline="") as f:
        for r in csv.DictReader(f):
            if r["id"] not in kind:
                continue
            for run in ("leave_one_GPU_out", "leave_one_model_out"):
                e = float(r[f"{run}_mean_tpot_ms"]) / float(r["measured_mean_tpot_ms"]) - 1
                errors[(r["backend"], r["model"], kind[r["id"]], run)].append(100 * e)
    for key, e in sorted(errors.items()):
        a = sorted(abs(x) for x in e)
        p90 = a[min(len(a) - 1, int(0.9 * len(a)))]
        median, bias = statistics.median(a), statistics.median(e)
        print(f"{' '.join(key)}: {len(e)} rows, TPOT {median:.0f} / {p90:.0f} ({bias:+.0f})")


if __name__ == "__main__":
    main()
