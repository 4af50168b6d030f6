"""Prompts of an exact token length: random words from a fixed vocabulary, counted and adjusted.

How a prompt of N tokens is made
--------------------------------
1. Measure each vocabulary word once with the chosen counter: `first_cost[w]`, the tokens of
   a prompt that is just `w` (including any BOS token the counter adds), and `cost[w]`, the
   tokens `" w"` adds after another word (`count(anchor + " " + w) - count(anchor)`).
2. Compose: a random first word, then random words while the remaining budget exceeds the
   largest cost, then words that fit the remainder exactly. With byte-level BPE or
   SentencePiece, which split at spaces, the predicted count is then exact.
3. Verify every prompt with the counter; a prompt that is off is trimmed and refilled, and
   verified again (a few rounds, then an error naming the length asked for and the one got).

Prompts are never reused, so a prefix cache cannot turn one request's prompt into another's
hit, except where the workload says prompts share a prefix: a system prompt, or the leading
blocks of requests with equal `prefix_hashes` ids (a Mooncake trace), built once each.

Counters
--------
A `TokenCounter` maps text to its token count. Three exist, and the result file records
which one was used (`PromptTokenSource`): a local `tokenizer.json` (the optional `tokenizers`
package), vLLM's `/tokenize` endpoint, or the `usage.prompt_tokens` of a one-token request.
With the chat endpoint, the local tokenizer counts the message text only; the server's chat
template adds tokens on top (records take the prompt length from the server's `usage`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from llmsizer.bench.errors import PromptError
from llmsizer.workload import Workload

TokenCounter = Callable[[str], Awaitable[int]]

# Common short English words: the fixed vocabulary prompts are drawn from.
_WORDS = """
the of and to in is for on with as by at from that this it be are was or an not but all
can will one has more new time year day way use work part data model token batch cache
serve memory system user state value point form line word name case group number world
area order level place power light water night house voice music field table paper road
river stone green blue red black white small large early late short long high low fast
slow open close first last next other same great good right left north south east west
alpha beta gamma delta latency decode prefill gpu throughput city story market energy
"""
VOCABULARY: tuple[str, ...] = tuple(_WORDS.split())

_MAX_ROUNDS = 4  # verification rounds before giving up on a prompt


class PromptTokenSource(StrEnum):
    TOKENIZER = "tokenizer"  # a local tokenizer.json
    TOKENIZE_ENDPOINT = "tokenize-endpoint"  # vLLM's POST /tokenize
    USAGE = "usage"  # usage.prompt_tokens of a one-token request


@dataclass(frozen=True, slots=True)
class WordCosts:
    """Tokens per vocabulary word: alone at the start of a prompt, and after a space."""

    words: tuple[str, ...]
    first_cost: tuple[int, ...]
    cost: tuple[int, ...]


async def measure_word_costs(
    count: TokenCounter, vocabulary: Sequence[str] = VOCABULARY
) -> WordCosts:
    """Count every word once alone and once after an anchor word (the first word)."""
    anchor = vocabulary[0]
    base, *alone = await asyncio.gather(count(anchor), *(count(w) for w in vocabulary))
    after = await asyncio.gather(*(count(f"{anchor} {w}") for w in vocabulary))
    cost = tuple(a - base for a in after)
    keep = [i for i, c in enumerate(cost) if c >= 1]
    if not any(cost[i] == 1 for i in keep):
        raise PromptError("no vocabulary word is a single token: prompts can't be made exact")
    return WordCosts(
        words=tuple(vocabulary[i] for i in keep),
        first_cost=tuple(alone[i] for i in keep),
        cost=tuple(cost[i] for i in keep),
    )


def _fill(rng: np.random.Generator, costs: WordCosts, budget: int) -> list[int]:
    """Indices of random words whose costs (after a space) sum to exactly `budget`."""
    cost = np.asarray(costs.cost)
    largest = int(cost.max())
    picked: list[int] = []
    while budget > 0:
        fits = np.flatnonzero(cost <= budget) if budget <= largest else np.arange(cost.size)
        i = int(fits[rng.integers(fits.size)])
        picked.append(i)
        budget -= int(cost[i])
    return picked


@dataclass(frozen=True, slots=True)
class PromptMaker:
    """Makes prompts from `costs`, checking each with `count`; all randomness from `rng`."""

    costs: WordCosts
    count: TokenCounter
    rng: np.random.Generator

    def compose(self, num_tokens: int, prefix: str = "", prefix_tokens: int = 0) -> str:
        """A prompt predicted to have `num_tokens` tokens, optionally after a shared prefix."""
        c = self.costs
        if prefix:
            return _join(prefix, _words(c, _fill(self.rng, c, num_tokens - prefix_tokens)))
        first = np.flatnonzero(np.asarray(c.first_cost) <= num_tokens)
        if first.size == 0:
            raise PromptError(f"a prompt of {num_tokens} tokens is shorter than any word")
        i = int(first[self.rng.integers(first.size)])
        rest = _fill(self.rng, c, num_tokens - c.first_cost[i])
        return _join(c.words[i], _words(c, rest))

    async def make(self, num_tokens: int, prefix: str = "", prefix_tokens: int = 0) -> str:
        """A prompt of exactly `num_tokens` tokens by the counter (see the module notes)."""
        text = self.compose(num_tokens, prefix, prefix_tokens)
        for _ in range(_MAX_ROUNDS):
            got = await self.count(text)
            if got == num_tokens:
                return text
            text = self._adjust(text, got, num_tokens, prefix)
        got = await self.count(text)
        if got != num_tokens:
            raise PromptError(f"asked for a {num_tokens}-token prompt, got {got} tokens")
        return text

    def _adjust(self, text: str, got: int, want: int, prefix: str) -> str:
        """Drop trailing words worth at least the excess, then refill to the target."""
        words = text[len(prefix) :].split() if prefix else text.split()
        keep_first = 0 if prefix else 1
        index = {w: i for i, w in enumerate(self.costs.words)}
        excess = got - want
        while excess > 0 and len(words) > keep_first:
            excess -= self.costs.cost[index[words.pop()]]
        tail = _words(self.costs, _fill(self.rng, self.costs, -excess)) if excess < 0 else []
        return _join(prefix, words + tail) if prefix else " ".join(words + tail)


def _words(costs: WordCosts, indices: list[int]) -> list[str]:
    return [costs.words[i] for i in indices]


def _join(head: str, words: list[str]) -> str:
    return " ".join([head, *words]) if words else head


async def make_prompts(maker: PromptMaker, workload: Workload) -> list[str]:
    """One prompt per request of `workload`, sharing the prefixes it describes.

    A shared system prompt (`system_prompt_tokens`) is made once and opens every prompt. A
    block id of `prefix_hashes` gets its text the first time it is seen, as the prompt up to
    the end of that block (`prefix_block_tokens` tokens per block); later requests with the
    same ids up to that block reuse it.
    """
    system = ""
    if workload.system_prompt_tokens:
        system = await maker.make(workload.system_prompt_tokens)
    blocks: dict[tuple[int, ...], str] = {}
    prompts: list[str] = []
    for i, n in enumerate(workload.num_prompt_tokens.tolist()):
        prefix, prefix_tokens = system, workload.system_prompt_tokens
        hashes = workload.prefix_hashes[i] if workload.prefix_hashes is not None else ()
        for depth in range(1, len(hashes) + 1):
            end = depth * workload.prefix_block_tokens
            if end >= n:
                break  # the last, partial block is the request's own text
            key = tuple(hashes[:depth])
            if key not in blocks:
                blocks[key] = await maker.make(end, prefix, prefix_tokens)
            prefix, prefix_tokens = blocks[key], end
        prompts.append(await maker.make(int(n), prefix, prefix_tokens))
    return prompts
