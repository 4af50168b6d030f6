"""The studio in a real headless Chromium: the course's NeMo 43B case typed in shows the
servers `llmsizer plan` gives on the same YAML; a bad field shows its message and keeps what
was typed; a shared link reproduces the plan; the timeline renders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sizing"
PLAN_TIMEOUT_MS = 300_000  # a full NeMo plan on a busy 2-core machine
NEMO = {  # examples/sizing/nemo43b_dgx_h100.yaml, as a user types it
    "name": "course NeMo 43B, 31 req/s, TTFT 3 s",
    "model": "nemo-gpt-43b",
    "documents": "3500",
    "output": "500",
    "peak_rps": "31",
    "ttft_ms": "3000",
    "gpus": "dgx-h100",
    "precisions": "bf16",
    "engines": "trtllm",
    "tp": "1,2,4,8",
    "server_usd": "dgx-h100=300000",
    "depreciation_years": "4",
    "power_and_hosting_usd_per_year": "40000",
}


def cli_plan(name: str) -> dict[str, Any]:
    """`llmsizer plan examples/sizing/<name>.yaml --json`'s winner (the committed output,
    which tests/sizing/test_plan_examples.py keeps current)."""
    data = json.loads((EXAMPLES / f"{name}.json").read_text())
    return next(c for c in data["candidates"] if c["gpu"] == data["winner"])


def fill(page: Any, fields: dict[str, str]) -> None:
    for name, value in fields.items():
        page.fill(f"#f-{name}", value)


def answer(page: Any) -> dict[str, str]:
    page.wait_for_selector("#job[data-state=done]", timeout=PLAN_TIMEOUT_MS)
    return {k: page.inner_text(f"#{k}") for k in ("servers", "gpus", "instances", "cost")}


def test_the_nemo_case_shows_the_servers_of_llmsizer_plan(studio: str, page: Any) -> None:
    page.goto(studio)
    fill(page, NEMO)
    page.click("#plan-button")
    shown = answer(page)
    winner = cli_plan("nemo43b_dgx_h100")
    assert int(shown["servers"]) == winner["sizing"]["num_servers"]
    assert int(shown["gpus"]) == winner["sizing"]["num_gpus"]
    assert int(shown["instances"]) == winner["sizing"]["num_instances"]
    assert float(shown["cost"].replace(",", "")) == pytest.approx(
        winner["cost"]["usd_per_month"], rel=1e-3
    )
    assert page.locator("#curve .main-svg").count() > 0  # the curve with the limit


def test_a_shared_link_reproduces_the_plan(studio: str, page: Any, browser: Any) -> None:
    page.goto(studio)
    fill(page, NEMO)
    page.click("#plan-button")
    first = answer(page)
    link = page.url
    assert "peak_rps=31" in link and "model=nemo-gpt-43b" in link
    other = browser.new_context().new_page()  # a colleague opening the link
    other.goto(link)
    assert answer(other) == first
    assert other.input_value("#f-documents") == "3500"
    other.context.close()


def test_a_bad_field_shows_its_message_and_keeps_what_was_typed(studio: str, page: Any) -> None:
    page.goto(studio)
    fill(page, {**NEMO, "peak_rps": "-31", "model": "nemo-gpt-44b"})
    page.click("#plan-button")
    page.wait_for_selector("#err-peak_rps:not(:empty)")
    assert "greater than 0" in page.inner_text("#err-peak_rps")
    assert "nemo-gpt-44b" in page.inner_text("#err-model")
    assert page.input_value("#f-peak_rps") == "-31"  # nothing typed is lost
    assert page.input_value("#f-documents") == "3500"
    page.fill("#f-peak_rps", "31")
    page.fill("#f-model", "nemo-gpt-43b")
    page.click("#plan-button")
    page.wait_for_selector("#servers", timeout=PLAN_TIMEOUT_MS)
    assert page.inner_text("#err-peak_rps") == ""


def test_the_timeline_renders(studio: str, page: Any) -> None:
    page.goto(studio)
    fill(page, NEMO)
    page.click("#plan-button")
    answer(page)
    page.goto(page.eval_on_selector("#timeline-link", "a => a.href"))
    page.wait_for_selector("#timeline .main-svg", timeout=PLAN_TIMEOUT_MS)
    bars = page.locator("#timeline .barlayer .point")
    assert bars.count() > 100  # one bar per request phase
    assert "h100-sxm bf16 TP" in page.inner_text("#timeline")


def test_an_upload_that_is_not_a_config_says_so(studio: str, page: Any, tmp_path: Path) -> None:
    page.goto(studio)
    fill(page, NEMO)
    bad = tmp_path / "config.json"
    bad.write_text("this is not json")
    page.set_input_files("#file-config", str(bad))
    page.wait_for_selector("#upload-error-config")
    assert "not a usable config file" in page.inner_text("#upload-error-config")
    assert page.input_value("#f-model") == "nemo-gpt-43b"


def test_a_long_plan_shows_progress_and_cancels(studio: str, page: Any) -> None:
    page.goto(studio)
    fill(page, {**NEMO, "peak_rps": "29", "tp": "1,2,4,8", "precisions": "bf16,fp8"})
    page.click("#plan-button")
    page.wait_for_selector("#job progress")
    page.click("#cancel")
    page.wait_for_selector("#cancelled", timeout=PLAN_TIMEOUT_MS)
    assert page.input_value("#f-peak_rps") == "29"
