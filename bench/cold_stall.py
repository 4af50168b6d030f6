"""Whether an engine's InferenceX rows measured before the client's warm-up hold a one-off
stall: the shape test of docs/aic_measurement.md sections 41 and 58.

    .venv/bin/python bench/cold_stall.py ROWS.csv [--engine trtllm] [--system b200_sxm]

ROWS.csv is a `bench/fit_aic.py --rows` file (measured and shipped mean TTFT / TPOT per
row); the calibration file gives each row's `measured=` time, precision and version. A run
that waits S seconds once, before its first wave's first tokens, raises its mean TTFT by
S c / N = S / k (c clients, N = k c prompts) and its TPOT by nothing (`calibrate.replay`).
So for each row the stall it would hold is S = (measured - shipped mean TTFT) x k, with k
the prompts per client its launcher sent (`aic_clients.prompts_per_client`, else
`aic.PROMPTS_PER_CLIENT`). A one-off build gives one S whatever the clients; a slower
step gives an S that grows with them, and a TPOT miss beside it.

Printed, for the engine's DeepSeek rows on the GPU: per (warm-up, day, precision, band of
clients) the rows, the median signed shipped TTFT and TPOT error (%), the median excess
(ms) and S (s); then per (day, precision) before the warm-up, the least-squares line
S = a + b c over its rows.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import numpy as np

from llmsizer.calibrate.aic import PROMPTS_PER_CLIENT
from llmsizer.calibrate.aic_clients import WARMUP_FROM, prompts_per_client
from llmsizer.calibrate.aic_sweeps import measured_at

CSV = Path(__file__).resolve().parents[2] / "shared" / "calibration" / "aic_silicon_calibration.csv"
BANDS = ((1, 8), (9, 32), (33, 128), (129, 4096))  # clients
Key = tuple[bool, str, str, tuple[int, int]]  # warmed up, day, precision, band


class Stall(NamedTuple):
    """One row: its group, shipped errors (%), excess mean TTFT (ms), the stall it would hold
    (s) and its clients."""

    key: Key
    ttft_error: float
    tpot_error: float
    excess_ms: float
    stall_s: float
    clients: int


def band_of(clients: int) -> tuple[int, int]:
    """The band of `BANDS` holding `clients`."""
    return next(b for b in BANDS if b[0] <= clients <= b[1])


def stalls(rows: list[dict[str, str]], raw: dict[str, dict[str, str]]) -> list[Stall]:
    """A `Stall` per row of `rows` (a `--rows` CSV's) that `raw` (the calibration rows by id)
    dates, of a DeepSeek model (module docstring)."""
    out = []
    for r in rows:
        row = raw.get(r["id"])
        measured = measured_at(row) if row else None
        if row is None or measured is None or not r["model"].startswith("deepseek"):
            continue
        clients = int(r["concurrency"])
        k = prompts_per_client(row, r["model"], row["precision"]) or PROMPTS_PER_CLIENT
        ttft, tpot = float(r["measured_mean_ttft_ms"]), float(r["measured_mean_tpot_ms"])
        shipped_ttft = float(r["shipped_mean_ttft_ms"])
        excess_ms = ttft - shipped_ttft
        key = (measured >= WARMUP_FROM, measured[:10], row["precision"], band_of(clients))
        ttft_error = 100 * (shipped_ttft / ttft - 1)
        tpot_error = 100 * (float(r["shipped_mean_tpot_ms"]) / tpot - 1)
        out.append(Stall(key, ttft_error, tpot_error, excess_ms, excess_ms * k / 1000, clients))
    return out


def stall_line(items: list[Stall]) -> tuple[float, float]:
    """The least-squares line S = a + b c over `items`: (a in s, b in s per client). A one-off
    stall gives b = 0; a step cost, b > 0 (module docstring)."""
    counts = sorted({it.clients for it in items})
    if len(counts) < 2:
        raise ValueError(f"a line over clients needs two client counts, got {counts}")
    c = np.array([it.clients for it in items], dtype=float)
    s = np.array([it.stall_s for it in items])
    a, b = np.linalg.lstsq(np.column_stack([np.ones_like(c), c]), s, rcond=None)[0]
    return float(a), float(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path, help="a bench/fit_aic.py --rows CSV")
    parser.add_argument("--engine", default="trtllm")
    parser.add_argument("--system", default="b200_sxm")
    parser.add_argument("--csv", type=Path, default=CSV, help="the calibration rows")
    args = parser.parse_args()
    with args.csv.open() as f:
        raw = {r["id"]: r for r in csv.DictReader(f)}
    with args.rows.open() as f:
        rows = [r for r in csv.DictReader(f) if r["backend"] == args.engine]
    rows = [r for r in rows if r["system"] == args.system]
    groups: dict[Key, list[Stall]] = defaultdict(list)
    for item in stalls(rows, raw):
        groups[item.key].append(item)
    print("warm  day         precision clients  rows  TTFT %  TPOT %  excess ms   S s")
    for key, items in sorted(groups.items()):
        warm, day, precision, (lo, hi) = key
        ttft, tpot, excess, s = (float(np.median([it[j] for it in items])) for j in range(1, 5))
        print(f"{'yes' if warm else 'no':5} {day}  {precision:9} {lo:>3}-{hi:<4} {len(items):5} "
              f"{ttft:+7.1f} {tpot:+7.1f} {excess:9.1f} {s:5.2f}")  # fmt: skip
    lines: dict[tuple[str, str], list[Stall]] = defaultdict(list)
    for key, items in groups.items():
        if not key[0]:
            lines[(key[1], key[2])] += items
    print("\nbefore the warm-up, S = a + b c (a flat S: b ~ 0)")
    for (day, precision), items in sorted(lines.items()):
        if len({it.clients for it in items}) < 2:
            continue
        a, b = stall_line(items)
        print(f"  {day} {precision:9} rows {len(items):3}: S = {a:+.2f} s + {1000 * b:.1f} ms x c")


if __name__ == "__main__":
    main()
