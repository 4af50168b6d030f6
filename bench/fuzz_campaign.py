"""Fuzz every reader of user files and every command, and count what happens (issue 14).

    python bench/fuzz_campaign.py [--inputs-per-reader 1000] [--inputs-per-command 200]
                                  [--seed 0] [--timeout-s 10]

Inputs and checks are `tests/fuzz_targets.py`'s: seed documents mutated (values replaced,
keys deleted or added), seed text with bytes changed, random bytes; random command lines.
Each input runs in this process under a per-input alarm: past `--timeout-s` (12 times
that for a `plan` or `calibrate` run, which simulates for tens of seconds) it counts as a
hang; the process may use 4 GiB, an input that allocates more is a crash. A crash is an
exception other than the project's own error (a `ValueError` with its own message), a value
taken silently wrong, or a command that exits with a traceback. A message about flags that
names a schema path or field instead of the flag typed (`workload.osl` for `--osl`) is
counted apart. `bench` runs against a local fault server (tests/bench/fault_server.py) whose
every answer is the next of its fast faults. Prints one row per reader and command, and the
first failures of each.
"""

from __future__ import annotations

import argparse
import collections
import random
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz_targets import (
    COMMANDS,
    Crash,
    Misnamed,
    command_argv,
    fault_server,
    reader_targets,
    run_command,
)


class Hang(BaseException):
    """The input ran past the timeout (not an `Exception`: nothing in a command catches it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise Hang


def _run(job: Any, timeout_s: float) -> str:
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return str(job())
    except Misnamed as e:
        return f"misnamed: {e}"
    except Crash as e:
        return f"crash: {e}"
    except Hang:
        return "hang"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def campaign(per_reader: int, per_command: int, seed: int, timeout_s: float) -> int:
    signal.signal(signal.SIGALRM, _alarm)
    limit = 4 * 2**30  # an input that allocates past this is a memory bomb: a crash
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    rng = random.Random(seed)
    rows: list[tuple[str, collections.Counter[str], float]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, fault_server() as server:
        folder = Path(tmp)
        jobs: list[tuple[str, int, Any, float]] = [
            (t.name, per_reader, lambda t=t: t.check(t.generate(rng), folder), timeout_s)
            for t in reader_targets()
        ]
        for command in COMMANDS:
            slow = {"plan": 4, "calibrate": 4, "bench": 2}  # seconds a run: fewer runs
            count = per_command // slow.get(command, 1)
            limit_s = timeout_s * 12 if command in ("plan", "calibrate") else timeout_s

            def job(command: str = command) -> str:
                argv = command_argv(command, rng, folder, server.url)
                code, _ = run_command(argv)
                return f"exit {code}"

            jobs.append((f"llmsizer {command}", count, job, limit_s))
        for name, count, job, limit_s in jobs:
            counts: collections.Counter[str] = collections.Counter()
            t0 = time.perf_counter()
            for _ in range(count):
                outcome = _run(job, limit_s)
                kind = outcome.split(":")[0]
                counts[kind] += 1
                if kind in ("crash", "hang", "misnamed") and len(failures) < 40:
                    failures.append(f"{name}: {outcome[:300]}")
            rows.append((name, counts, time.perf_counter() - t0))
            print(f"{name}: {dict(counts)}", file=sys.stderr, flush=True)
    _print_table(rows)
    for f in failures:
        print(f"  {f}")
    return sum(c["crash"] + c["hang"] + c["misnamed"] for _, c, _ in rows)


def _print_table(rows: list[tuple[str, collections.Counter[str], float]]) -> None:
    print("| reader or command | inputs | parsed / exit 0-1 | clear error / exit 2 | "
          "crashes (tracebacks) | hangs | internal names | seconds |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    total: collections.Counter[str] = collections.Counter()
    for name, c, seconds in rows:
        ok = c["ok"] + c["exit 0"] + c["exit 1"]
        error = c["error"] + c["exit 2"]
        n = sum(c.values())
        bad = {"crash": c["crash"], "hang": c["hang"], "misnamed": c["misnamed"]}
        total.update({"n": n, "ok": ok, "error": error, **bad})
        print(f"| {name} | {n} | {ok} | {error} | {c['crash']} | {c['hang']} | "
              f"{c['misnamed']} | {seconds:.0f} |")  # fmt: skip
    print(f"| **total** | {total['n']} | {total['ok']} | {total['error']} | {total['crash']} | "
          f"{total['hang']} | {total['misnamed']} | |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs-per-reader", type=int, default=1000)
    parser.add_argument("--inputs-per-command", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=10.0)
    args = parser.parse_args()
    failures = campaign(args.inputs_per_reader, args.inputs_per_command, args.seed, args.timeout_s)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
