"""Fault campaign: every misbehaviour of the fault server, through the real `llmsizer bench`.

    .venv/bin/python bench/fault_campaign.py [--requests N] [--concurrency C] [--modes a,b,...]

For each mode a fault server on 127.0.0.1 (tests/bench/fault_server.py) answers every
streamed request with that fault, and `llmsizer bench` runs as its own process, exactly as a
user runs it (flags, records file, results file, exit status). Two more modes stop a run from
outside while requests are in flight, with SIGINT and with SIGTERM, against a server whose
every other answer stalls. Default: 20 requests per mode, 19 modes, 380 requests.

One row per mode: requests the server received, records in the JSONL file, records lost
(received minus written: the target is 0), whether the results file parses and counts the
same records, and the records by error kind (from the results file). A row is flagged when
anything was lost or a kind is not the one expected for its fault. Bounded: the server
answers at most `--requests` streamed requests per mode and lives at most 2 minutes; each
run is killed after 2 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests/

from tests.bench.fault_server import EXPECTED_KIND, Fault, FaultServer

SIGNALS = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM}
RUN_LIMIT_S = 120.0
_MAIN = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from llmsizer.cli import main; main()"
)
CLIENT_TIMEOUT_S = 2.0  # --timeout-s: a stall or a silent server fails after this long (0.5 s
# flaked on a loaded 2-core CI machine: the first connection, to /tokenize, timed out)


@dataclass(frozen=True, slots=True)
class Row:
    mode: str
    num_sent: int  # streamed requests the server received
    num_records: int  # lines in the records file
    results_ok: bool  # the results file parses and counts `num_records` records
    kinds: dict[str, int]  # failed records by error kind, from the results file
    exit_code: int
    expected: set[str]  # kinds this mode may produce ("" for a good record)

    @property
    def num_lost(self) -> int:
        return self.num_sent - self.num_records

    @property
    def as_expected(self) -> bool:
        ok = self.num_records - sum(self.kinds.values())
        seen = set(self.kinds) | ({""} if ok else set())
        return self.num_lost == 0 and self.results_ok and seen <= self.expected


def bench_command(url: str, n: int, concurrency: int, out: Path, timeout_s: float) -> list[str]:
    """`llmsizer bench` as a user types it, in this interpreter (with Ctrl-C delivered as on
    a terminal, even when this script was started with SIGINT ignored, as background jobs are)."""
    return [
        sys.executable, "-c", _MAIN, "bench",
        "--base-url", url, "--num-prompts", str(n), "--num-warmups", "0",
        "--concurrency", str(concurrency), "--isl", "8", "--osl", "4",
        "--timeout-s", str(timeout_s), "--request-timeout-s", "30",
        "--json", str(out / "results.json"), "--records", str(out / "records.jsonl"),
    ]  # fmt: skip


def run_mode(mode: str, n: int, concurrency: int, workdir: Path) -> Row:
    """One mode: a fault (`Fault` value) or a signal ("sigint", "sigterm"), `n` requests."""
    out = workdir / mode
    out.mkdir(parents=True)
    stopping = mode in SIGNALS
    faults = [Fault.OK, Fault.STALL] if stopping else [Fault(mode)]
    # a stalled request of a signal mode must still be in flight when the signal comes
    timeout_s = RUN_LIMIT_S / 4 if stopping else CLIENT_TIMEOUT_S
    stall_s = timeout_s + 1.0
    with FaultServer(faults, stall_s=stall_s, max_requests=n, lifetime_s=RUN_LIMIT_S) as server:
        command = bench_command(server.url, n, concurrency, out, timeout_s)
        env = {**os.environ, "CI": "1"}  # plain progress lines, no live bar
        with subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        ) as proc:
            if stopping:
                _signal_when_in_flight(proc, server, concurrency, SIGNALS[mode])
            try:
                _, stderr = proc.communicate(timeout=RUN_LIMIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, stderr = proc.communicate()
        num_sent = server.num_streamed
    if proc.returncode == 2:  # the run could not start: say why
        print(f"{mode}: {stderr.decode(errors='replace').strip()}", file=sys.stderr)
    num_records, results_ok, kinds = _read_outputs(out)
    expected = {"", "interrupted"} if stopping else {EXPECTED_KIND[Fault(mode)] or ""}
    if stopping:  # a stalled request may also time out first, and a good one may just finish
        expected |= {"timeout"}
    return Row(mode, num_sent, num_records, results_ok, kinds, proc.returncode, expected)


def _signal_when_in_flight(
    proc: subprocess.Popen[bytes], server: FaultServer, concurrency: int, signum: int
) -> None:
    """Send `signum` once the server has taken more requests than fit in one wave."""
    deadline = time.monotonic() + RUN_LIMIT_S / 2
    while server.num_streamed <= concurrency and proc.poll() is None:
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)
    time.sleep(0.2)  # let the good requests of this wave finish and the stalled ones stall
    proc.send_signal(signum)


def _read_outputs(out: Path) -> tuple[int, bool, dict[str, int]]:
    records = out / "records.jsonl"
    lines = records.read_text().splitlines() if records.exists() else []
    num_records = sum(1 for line in lines if json.loads(line))
    try:
        (point,) = json.loads((out / "results.json").read_text())
    except (OSError, ValueError):
        return num_records, False, {}
    # (results files before num_records: completed + failed)
    counted = point.get("num_records", point.get("completed", 0) + point.get("failed", 0))
    return num_records, counted == num_records, dict(point["failures"])


def campaign(modes: list[str], n: int, concurrency: int) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="fault-campaign-") as tmp:
        return [run_mode(mode, n, concurrency, Path(tmp)) for mode in modes]


def format_table(rows: list[Row]) -> str:
    header = f"{'mode':<17} {'sent':>5} {'records':>7} {'lost':>4} {'results':>7}  error kinds"
    lines = [header, "-" * len(header)]
    for r in rows:
        ok = r.num_records - sum(r.kinds.values())
        kinds = ", ".join([f"ok {ok}"] * bool(ok) + [f"{k} {v}" for k, v in r.kinds.items()])
        flag = "" if r.as_expected else "   <-- unexpected"
        results = "ok" if r.results_ok else "MISSING"
        lines.append(
            f"{r.mode:<17} {r.num_sent:>5} {r.num_records:>7} {r.num_lost:>4} {results:>7}  "
            f"{kinds}{flag}"
        )
    sent, lost = sum(r.num_sent for r in rows), sum(r.num_lost for r in rows)
    lines.append(f"total: {sent} requests sent, {lost} records lost, {len(rows)} modes")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20, help="requests per mode (1-200)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (1-64)")
    all_modes = [f.value for f in Fault] + list(SIGNALS)
    parser.add_argument("--modes", default=",".join(all_modes), help="comma list of modes")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(all_modes))
    if unknown or not 1 <= args.requests <= 200 or not 1 <= args.concurrency <= 64:
        parser.error(f"--modes takes {', '.join(all_modes)}; --requests 1-200; --concurrency 1-64")
    start = time.perf_counter()
    rows = campaign(modes, args.requests, args.concurrency)
    print(format_table(rows))
    print(f"wall time {time.perf_counter() - start:.1f} s")
    sys.exit(0 if all(r.as_expected for r in rows) else 1)


if __name__ == "__main__":
    main()
