"""The studio over HTTP (no browser): the answer equals `plan`, bad input is a message beside
its field and never a traceback, exports read back into the CLI, uploads are checked."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from llmsizer.config import load_usecase
from llmsizer.serve import views
from llmsizer.serve.form import usecase_from_form
from llmsizer.sizing.plan import plan
from tests.specs.test_models import QWEN2_MOE_CONFIG

DATA = Path(__file__).resolve().parents[1] / "calibrate" / "data"
FAST = {
    "model": "llama-3-8b",
    "user": "2000",
    "output": "200",
    "peak_rps": "50",
    "ttft_ms": "300",
    "gpus": "h100-sxm",
    "tp": "1,2",
    "usd_per_gpu_hour": "h100-sxm=3",
}


@pytest.fixture(scope="module")
def client(studio: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=studio, timeout=600) as c:
        yield c


def finished(client: httpx.Client, form: dict[str, str]) -> str:
    """The job fragment of a form's plan once done (polling as the page does)."""
    html = client.get("/plan", params=form).text
    end = time.monotonic() + 300
    while 'data-state="done"' not in html:
        assert time.monotonic() < end and "failed" not in html, html[:500]
        job_id = re.search(r'hx-get="/job/([0-9a-f]+)', html)
        assert job_id is not None, html[:500]
        time.sleep(0.1)
        html = client.get(f"/job/{job_id.group(1)}").text
    return html


def number(html: str, element_id: str) -> int:
    found = re.search(rf'id="{element_id}">([0-9,]+)<', html)
    assert found is not None, element_id
    return int(found.group(1).replace(",", ""))


def test_the_page_ships_its_scripts_and_asks_the_course_questions(client: httpx.Client) -> None:
    html = client.get("/").text
    assert 'src="/static/htmx.min.js"' in html and 'src="/static/plotly.min.js"' in html
    assert "cdn" not in html.lower() and 'src="http' not in html
    assert "How many requests per second?" in html and "Time to first token." in html
    assert client.get("/static/htmx.min.js").status_code == 200
    plotly_js = client.get("/static/plotly.min.js")
    assert plotly_js.status_code == 200 and len(plotly_js.content) > 1_000_000


def test_the_answer_is_the_plan(client: httpx.Client) -> None:
    html = finished(client, FAST)
    usecase, _ = usecase_from_form(FAST)
    assert usecase is not None
    expected = plan(usecase).winner
    assert expected is not None and expected.sizing is not None
    assert number(html, "servers") == expected.sizing.num_servers
    assert number(html, "gpus") == expected.sizing.num_gpus
    assert 'id="curve"' in html  # the latency-throughput curve with the limit
    again = client.get("/plan", params=FAST)  # cached by input: answered at once
    assert 'data-state="done"' in again.text
    assert again.headers["HX-Push-Url"] == "/?" + urlencode(FAST)


def test_a_bad_field_gets_its_message_and_the_url_keeps_what_was_typed(
    client: httpx.Client,
) -> None:
    form = {**FAST, "peak_rps": "-5", "model": "llama-9-400b"}
    response = client.get("/plan", params=form)
    assert response.status_code == 200
    assert re.search(r'id="err-peak_rps" hx-swap-oob="true">[^<]*greater than 0', response.text)
    assert re.search(r'id="err-model" hx-swap-oob="true">[^<]*llama-9-400b', response.text)
    assert "peak_rps=-5" in response.headers["HX-Push-Url"]
    assert "Traceback" not in response.text


def test_the_exported_yaml_is_the_use_case_the_cli_reads(
    client: httpx.Client, tmp_path: Path
) -> None:
    response = client.get("/export/usecase.yaml", params=FAST)
    assert response.status_code == 200
    path = tmp_path / "usecase.yaml"
    path.write_text(response.text)
    assert load_usecase(path) == usecase_from_form(FAST)[0]


def test_the_exported_report_is_the_cli_report(client: httpx.Client) -> None:
    finished(client, FAST)
    response = client.get("/export/report.html", params=FAST)
    assert response.status_code == 200
    assert response.text.startswith("<!DOCTYPE html>") and "Sizing plan" in response.text
    assert "attachment" in response.headers["Content-Disposition"]


def test_the_timeline_page_draws_the_winner(client: httpx.Client) -> None:
    html = client.get("/timeline", params=FAST).text
    assert 'id="timeline"' in html and "Plotly.newPlot" in html
    bad = client.get("/timeline", params={**FAST, "output": "0"})
    assert bad.status_code == 400 and "output" in bad.text


def test_compare_shows_each_plan_side_by_side(client: httpx.Client) -> None:
    tighter = {**FAST, "ttft_ms": "150"}
    links = [f"http://x/?{urlencode(FAST)}", urlencode(tighter)]
    html = client.get("/compare", params=[("plan", link) for link in links]).text
    servers = re.findall(r'<td class="servers">(\d+)</td>', html)
    assert len(servers) == 2
    assert int(servers[1]) >= int(servers[0])  # a tighter limit never needs fewer


def test_uploads_are_checked_and_limited(client: httpx.Client) -> None:
    config = json.dumps(QWEN2_MOE_CONFIG).encode()
    ok = client.post("/upload/config", files={"file": ("config.json", config)})
    assert ok.status_code == 200 and 'getElementById("f-model")' in ok.text
    not_config = client.post("/upload/config", files={"file": ("c.json", b'{"a": 1}')})
    assert 'id="upload-error-config"' in not_config.text
    big = client.post("/upload/config", files={"file": ("c.json", b" " * (1024 * 1024 + 1))})
    assert "over the 1 MiB limit" in big.text
    trace = client.post("/upload/trace", files={"file": ("t.csv", b"not,a\ntrace,file\n")})
    assert 'id="upload-error-trace"' in trace.text
    empty = client.post("/upload/trace", files={"file": ("t.csv", b"")})
    assert "is empty" in empty.text
    assert client.post("/upload/other", files={"file": ("x", b"x")}).status_code == 404


def test_a_use_case_yaml_upload_fills_the_form(client: httpx.Client) -> None:
    yaml_text = Path(__file__).resolve().parents[2] / "examples/sizing/llama3_8b_h100.yaml"
    response = client.post("/upload/usecase", files={"file": ("u.yaml", yaml_text.read_bytes())})
    assert response.headers["HX-Redirect"].startswith("/?name=course+Llama+3+8B")


def test_measured_against_predicted(client: httpx.Client) -> None:
    form = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": "1", "precision": "bf16",
            "engine": "vllm"}  # fmt: skip
    data = (DATA / "vllm_detailed.json").read_bytes()
    response = client.post("/measured", data=form, files={"file": ("r.json", data)})
    assert response.status_code == 200, response.text[-800:]
    assert "mean TTFT (ms)" in response.text and 'id="measured"' in response.text
    bad = client.post("/measured", data=form, files={"file": ("r.json", b"[1, 2]")})
    assert bad.status_code == 400 and re.search(r'id="err-file">[^<]+<', bad.text)
    wrong = client.post("/measured", data={**form, "gpu": "h900"}, files={"file": ("r.json", data)})
    assert wrong.status_code == 400 and re.search(r'id="err-gpu">[^<]*h900', wrong.text)


def test_no_traceback_ever(client: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(views, "finished_plan", broken)
    response = client.get("/timeline", params=FAST)
    assert response.status_code == 500
    assert response.text == "internal error (RuntimeError); the server log has the details"
    missing = client.get("/nowhere")
    assert missing.status_code == 404 and "Traceback" not in missing.text
    gone = client.get("/job/0123456789ab")
    assert "no longer kept" in gone.text
