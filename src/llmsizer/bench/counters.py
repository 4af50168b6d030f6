"""Token counters for prompt construction: a local tokenizer, or a round trip to the server.

Each returns a `TokenCounter` (text -> number of prompt tokens). `choose_counter` picks one
for a `prompt_tokens_from` setting and says which it picked, so the result file can record
it: "auto" means the local tokenizer when a path is given, else vLLM's `/tokenize` when the
server answers it, else the `usage` of a one-token request (each costs the server a prefill).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import httpx

from llmsizer.bench.client import ClientOptions, Endpoint
from llmsizer.bench.errors import PromptError
from llmsizer.bench.failure import describe_exception
from llmsizer.bench.prompts import PromptTokenSource, TokenCounter

CounterChoice = Literal["auto", "tokenizer", "tokenize-endpoint", "usage"]


def _guarded(count: TokenCounter, http: httpx.AsyncClient, what: str) -> TokenCounter:
    """`count`, whose network errors and unreadable answers become a `PromptError` saying
    what was being counted and what went wrong (a traceback tells a user nothing)."""
    url = str(http.base_url).rstrip("/")

    async def guarded(text: str) -> int:
        try:
            return await count(text)
        except httpx.HTTPError as e:
            failure = describe_exception(e, url=url, responded=False)
            raise PromptError(f"{what}: {failure}") from e
        except (KeyError, IndexError, TypeError, ValueError) as e:  # JSON of another shape
            raise PromptError(f"{what}: unexpected answer ({type(e).__name__}: {e})") from e

    return guarded


def local_counter(tokenizer_json: Path) -> TokenCounter:
    """Count with a local `tokenizer.json` (needs the optional `tokenizers` package)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise PromptError(
            "counting with a local tokenizer needs the `tokenizers` package "
            "(pip install tokenizers), or count with the server instead"
        ) from e
    tokenizer = Tokenizer.from_file(str(tokenizer_json))

    async def count(text: str) -> int:
        return len(tokenizer.encode(text).ids)

    return count


def _text_body(text: str, options: ClientOptions) -> dict[str, Any]:
    if options.endpoint is Endpoint.CHAT:
        return {"model": options.model, "messages": [{"role": "user", "content": text}]}
    return {"model": options.model, "prompt": text}


def tokenize_endpoint_counter(http: httpx.AsyncClient, options: ClientOptions) -> TokenCounter:
    """Count with vLLM's `POST /tokenize` (chat messages go through the chat template)."""

    async def count(text: str) -> int:
        response = await http.post("/tokenize", json=_text_body(text, options))
        if response.status_code != 200:
            raise PromptError(f"/tokenize answered HTTP {response.status_code}: {response.text}")
        return int(response.json()["count"])

    return _guarded(count, http, "counting prompt tokens with /tokenize")


def usage_counter(http: httpx.AsyncClient, options: ClientOptions) -> TokenCounter:
    """Count with `usage.prompt_tokens` of a non-streaming request for one output token."""

    async def count(text: str) -> int:
        body = {**_text_body(text, options), "max_tokens": 1, "stream": False}
        response = await http.post(options.endpoint.path, json=body)
        if response.status_code != 200:
            raise PromptError(
                f"counting tokens with a one-token request: HTTP {response.status_code}: "
                f"{response.text[:300]}"
            )
        return int(response.json()["usage"]["prompt_tokens"])

    return _guarded(count, http, "counting prompt tokens with a one-token request")


async def has_tokenize_endpoint(http: httpx.AsyncClient, options: ClientOptions) -> bool:
    """Whether the server answers `POST /tokenize` with a count (vLLM does)."""
    try:
        response = await http.post("/tokenize", json=_text_body("hello", options))
        return response.status_code == 200 and "count" in response.json()
    except (httpx.HTTPError, ValueError):  # no server answer, or an answer that isn't JSON
        return False


async def choose_counter(
    choice: CounterChoice,
    http: httpx.AsyncClient,
    options: ClientOptions,
    tokenizer_json: Path | None,
) -> tuple[TokenCounter, PromptTokenSource]:
    """The counter for `choice`, and which source it is (see the module notes for "auto")."""
    if choice == "tokenizer" or (choice == "auto" and tokenizer_json is not None):
        if tokenizer_json is None:
            raise PromptError("prompt_tokens_from=tokenizer needs a tokenizer.json path")
        return local_counter(tokenizer_json), PromptTokenSource.TOKENIZER
    if choice == "tokenize-endpoint" or (
        choice == "auto" and await has_tokenize_endpoint(http, options)
    ):
        return tokenize_endpoint_counter(http, options), PromptTokenSource.TOKENIZE_ENDPOINT
    return usage_counter(http, options), PromptTokenSource.USAGE
