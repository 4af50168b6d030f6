"""Which chunks carry tokens, and how chunk times become token times."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.bench.stream import Chunk, assign_token_times, parse_chunk


def completion(text: str, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}


def chat(delta: dict, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_completion_chunks() -> None:
    assert parse_chunk(completion(" a"), chat=False) == Chunk(carries_tokens=True)
    assert parse_chunk(completion(""), chat=False).carries_tokens  # a partial UTF-8 token
    usage = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}
    assert parse_chunk(usage, chat=False) == Chunk(False, completion_tokens=3, prompt_tokens=5)


@pytest.mark.parametrize(
    ("delta", "finish", "carries"),
    [
        ({"role": "assistant", "content": ""}, None, False),  # the opening role chunk
        ({"content": ""}, None, True),  # vLLM: a token that decodes to nothing
        ({"content": "hi"}, None, True),
        ({"reasoning_content": "hm"}, None, True),
        ({}, "length", True),
        ({}, None, False),
    ],
)
def test_chat_chunks(delta: dict, finish: str | None, carries: bool) -> None:
    assert parse_chunk(chat(delta, finish), chat=True).carries_tokens is carries


def test_error_event() -> None:
    chunk = parse_chunk({"error": {"message": "out of memory", "code": 500}}, chat=False)
    assert chunk.error == "server error in stream: out of memory"


def test_one_token_per_chunk() -> None:
    times = assign_token_times([1.0, 2.0, 3.0], 3)
    np.testing.assert_array_equal(times, [1.0, 2.0, 3.0])


def test_more_tokens_than_chunks_go_with_the_last_chunk() -> None:
    times = assign_token_times([1.0, 2.0, 3.0], 5)
    np.testing.assert_array_equal(times, [1.0, 2.0, 3.0, 3.0, 3.0])


def test_more_chunks_than_tokens_keep_the_last_chunk() -> None:
    times = assign_token_times([1.0, 2.0, 3.0, 4.0], 2)
    np.testing.assert_array_equal(times, [1.0, 4.0])


def test_known_counts_are_exact() -> None:
    times = assign_token_times([1.0, 2.0, 3.0], 6, chunk_token_counts=[1, 3, 2])
    np.testing.assert_array_equal(times, [1.0, 2.0, 2.0, 2.0, 3.0, 3.0])


def test_no_chunks_or_no_tokens() -> None:
    assert assign_token_times([], 4).size == 0
    assert assign_token_times([1.0], 0).size == 0
    with pytest.raises(ValueError, match="one per chunk"):
        assign_token_times([1.0, 2.0], 2, chunk_token_counts=[1])
