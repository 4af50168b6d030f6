"""Records files: plain or gzip JSONL, lossless, and readable after an interrupted run."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from llmsizer.records import (
    JsonlWriter,
    RequestRecord,
    jsonl_with_label,
    open_jsonl,
    read_jsonl,
    record_to_json,
    write_jsonl,
)


def records(n: int) -> list[RequestRecord]:
    return [
        RequestRecord(
            request_id=i,
            arrival_s=0.1 * i,
            num_prompt_tokens=512,
            num_output_tokens_requested=4,
            token_times_s=np.array([0.2, 0.21, 0.22, 0.23]) + 0.1 * i,
            finish_s=0.23 + 0.1 * i,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("name", ["runs.jsonl", "runs.jsonl.gz"])
def test_round_trip(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    write_jsonl(records(50), path)
    assert [record_to_json(r) for r in read_jsonl(path)] == [record_to_json(r) for r in records(50)]
    compressed = path.suffix == ".gz"
    assert path.read_bytes()[:2] == b"\x1f\x8b" if compressed else path.read_text()[0] == "{"


def test_an_interrupted_gzip_file_keeps_every_flushed_record(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl.gz"
    stream = open_jsonl(path, "w")
    writer = JsonlWriter(stream)
    for r in records(7):
        writer.write(r)  # flushed: a process killed now leaves these on disk
    data = path.read_bytes()  # as a killed run leaves it: no gzip end marker
    stream.close()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data)
    with pytest.raises(EOFError), gzip.open(cut, "rt") as f:
        f.read()
    assert [r.request_id for r in read_jsonl(cut)] == list(range(7))


def test_labels_go_before_the_suffixes() -> None:
    assert jsonl_with_label(Path("d/runs.jsonl"), "rate2") == Path("d/runs-rate2.jsonl")
    assert jsonl_with_label(Path("d/runs.jsonl.gz"), "c4") == Path("d/runs-c4.jsonl.gz")
    assert jsonl_with_label(Path("d/runs"), "c4") == Path("d/runs-c4")
