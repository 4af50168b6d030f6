"""The studio's latency as a user sees it, in headless Chromium (issue 15's bar: the first
answer within 2 s of submitting the course's Llama 3 8B case; an update after a limit change
within 1 s).

    .venv/bin/python bench/serve_latency.py [--rounds 3] [--screenshots docs/serve]

Each round starts a fresh `llmsizer serve` (the real command, its own process: nothing
cached), opens the page, fills in examples/sizing/llama3_8b_h100.yaml's fields (at once, or
with `--typed` field by field as a user types, each pause sending the use case so far: the
page cancels those plans as the next arrives) and clicks Plan, then times, from the click:

- first answer: the servers shown (stage 1 of the job: the search, without curves, band
  and timeline);
- whole plan: the curves drawn (stage 2);

then changes the TTFT limit (500 -> 400 ms, then 300, then back to 500; Tab ends the field,
which sends it at once: typing waits 600 ms for a pause first) and times each until the page
shows the plan of the new limit. Prints one row per round and the median.

`--screenshots DIR` also saves each page (use case, one instance, compare, measured vs
predicted) as PNG: the README shows them.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LLAMA = {  # examples/sizing/llama3_8b_h100.yaml
    "name": "course Llama 3 8B, 2000/200, TTFT 500 ms",
    "model": "llama-3-8b",
    "user": "2000",
    "output": "200",
    "peak_rps": "70.7",
    "ttft_ms": "500",
    "gpus": "h100-sxm",
    "precisions": "bf16",
    "engines": "trtllm",
    "tp": "1,2,4,8",
    "usd_per_gpu_hour": "h100-sxm=3",
}
LIMIT_CHANGES = ("400", "300", "500")
TIMEOUT_MS = 120_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    llmsizer = shutil.which("llmsizer", path=str(Path(sys.executable).parent)) or "llmsizer"
    proc = subprocess.Popen([llmsizer, "serve", "--port", str(port)], stderr=subprocess.DEVNULL)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("llmsizer serve did not start in 60 s")


def wait_for_limit(page: Any, ttft_ms: str, selector: str) -> None:
    page.wait_for_function(
        """([ttft, selector]) => {
            const share = document.querySelector('#share');
            return share && share.href.includes('ttft_ms=' + ttft + '&')
                && document.querySelector(selector) !== null;
        }""",
        arg=[ttft_ms, selector],
        timeout=TIMEOUT_MS,
    )


def one_round(browser: Any, url: str, typed: bool, shots: Path | None) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    for name, value in LLAMA.items():
        if typed:  # field by field, as a user types: each pause plans what is there so far
            page.fill(f"#f-{name}", value)
        else:  # pasted in at once: nothing is sent before the click
            page.eval_on_selector(f"#f-{name}", "(e, v) => { e.value = v; }", value)
    row: dict[str, float] = {}
    t0 = time.perf_counter()
    page.click("#plan-button")
    page.wait_for_selector("#servers", timeout=TIMEOUT_MS)
    row["first answer"] = time.perf_counter() - t0
    page.wait_for_selector("#curve .main-svg", timeout=TIMEOUT_MS)
    row["whole plan"] = time.perf_counter() - t0
    if shots is not None:
        page.screenshot(path=str(shots / "usecase.png"), full_page=True)
    for ttft in LIMIT_CHANGES:
        page.fill("#f-ttft_ms", ttft)
        t0 = time.perf_counter()
        page.press("#f-ttft_ms", "Tab")
        wait_for_limit(page, ttft, "#servers")
        row[f"TTFT -> {ttft} ms"] = time.perf_counter() - t0
        wait_for_limit(page, ttft, "#curve .main-svg")  # let stage 2 finish before the next
    if shots is not None:
        take_screenshots(page, url, shots)
    page.close()
    return row


def take_screenshots(page: Any, url: str, shots: Path) -> None:
    page.goto(page.eval_on_selector("#timeline-link", "a => a.href"))
    page.wait_for_selector("#timeline .main-svg", timeout=TIMEOUT_MS)
    page.screenshot(path=str(shots / "timeline.png"), full_page=True)
    link = page.url.replace("/timeline?", "/?")
    tighter = link.replace("ttft_ms=500", "ttft_ms=250")
    cheaper = tighter.replace("gpus=h100-sxm", "gpus=l40s").replace("h100-sxm%3D3", "l40s%3D1")
    links = urlencode([("plan", each) for each in (link, tighter, cheaper)])
    page.goto(f"{url}compare?{links}", timeout=TIMEOUT_MS)  # plans all three first
    page.wait_for_selector("#compare", timeout=TIMEOUT_MS)
    page.screenshot(path=str(shots / "compare.png"), full_page=True)
    page.goto(f"{url}measured")
    page.set_input_files("#f-file", str(ROOT / "tests/calibrate/data/vllm_detailed.json"))
    page.fill("#f-model", "llama-3.1-8b")
    with page.expect_navigation(timeout=TIMEOUT_MS):
        page.click(".measured-form button", no_wait_after=True)
    page.wait_for_selector("#measured", timeout=TIMEOUT_MS)
    page.screenshot(path=str(shots / "measured.png"), full_page=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--screenshots", type=Path, default=None)
    parser.add_argument(
        "--typed", action="store_true", help="Type field by field (each field sends a plan)."
    )
    args = parser.parse_args()
    if args.screenshots is not None:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for i in range(args.rounds):
            port = free_port()
            server = start_server(port)
            try:
                shots = args.screenshots if i == args.rounds - 1 else None
                rows.append(one_round(browser, f"http://127.0.0.1:{port}/", args.typed, shots))
            finally:
                server.terminate()  # running plans stop at their next configuration
                try:
                    server.wait(60)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
            print(f"round {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in rows[-1].items()))
        browser.close()
    print(
        "median: "
        + ", ".join(f"{k} {statistics.median(r[k] for r in rows):.2f} s" for k in rows[0])
    )


if __name__ == "__main__":
    main()
