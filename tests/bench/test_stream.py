"""Which chunks carry tokens, and how chunk times become token times."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.bench.failure import Failure
from llmsizer.bench.stream import Chunk, assign_token_times, decode_event, parse_chunk


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
    failure = parse_chunk({"error": {"message": "out of memory", "code": 500}}, chat=False)
    assert str(failure) == "server error in stream: out of memory"


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        # regression: these crashed the whole run with an exception group
        ([1, 2, 3], "bad chunk in stream: the chunk is an array, not a JSON object: [1, 2, 3]"),
        (
            {"choices": [], "usage": {"completion_tokens": "many"}},
            "bad usage in stream: usage.completion_tokens is 'many', not a whole number",
        ),
        ("text", "bad chunk in stream: the chunk is a string, not a JSON object"),
        (None, "bad chunk in stream: the chunk is null"),
        ({"choices": "abc"}, "bad chunk in stream: choices is a string, not an array"),
        ({"choices": [7]}, "bad chunk in stream: choices[0] is a number, not a JSON object"),
        ({"usage": [1]}, "bad usage in stream: usage is [1], not an object"),
        ({"usage": {"prompt_tokens": -1}}, "bad usage in stream: usage.prompt_tokens is -1"),
        ({"usage": {"completion_tokens": 2.5}}, "bad usage in stream: usage.completion_tokens"),
        ({"usage": {"completion_tokens": True}}, "bad usage in stream: usage.completion_tokens"),
        ({"usage": {"completion_tokens": 1e300}}, "bad usage in stream: usage.completion_tokens"),
        ({"error": "overloaded"}, "server error in stream: overloaded"),
        ({"error": {"code": 3}}, "server error in stream: {'code': 3}"),
    ],
)
def test_malformed_chunks_are_failures(payload: object, error: str) -> None:
    failure = parse_chunk(payload, chat=False)
    assert isinstance(failure, Failure) and str(failure).startswith(error)


def test_chat_delta_that_is_not_an_object() -> None:
    failure = parse_chunk({"choices": [{"delta": "hi"}]}, chat=True)
    assert str(failure).startswith("bad chunk in stream: choices[0].delta is a string")
    assert parse_chunk({"choices": [{"delta": None}]}, chat=True) == Chunk(False)


def test_whole_floats_are_counts() -> None:
    assert parse_chunk({"usage": {"completion_tokens": 5.0}}, chat=False) == Chunk(False, 5)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ("{not json", "bad JSON in stream: Expecting property name"),
        ("[" * 100_000, "bad JSON in stream: maximum recursion depth"),
        ("9" * 5000, "bad JSON in stream: Exceeds the limit"),
        ("\ufffd\ufffd", "bad JSON in stream: Expecting value"),
    ],
)
def test_bad_json_is_a_failure(data: str, error: str) -> None:
    assert str(decode_event(data, chat=False)).startswith(error)


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
