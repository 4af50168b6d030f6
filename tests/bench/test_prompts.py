"""Prompts come out exactly as long as asked, distinct unless the workload shares a prefix."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

from llmsizer.bench.counters import local_counter
from llmsizer.bench.errors import PromptError
from llmsizer.bench.prompts import PromptMaker, make_prompts, measure_word_costs
from llmsizer.workload import Workload


def word_counter(merge_of_the: bool = False):
    """A BOS token, one token per word of up to 4 letters, two for longer ones; a first word
    starting with "s" costs one more (no leading space). With `merge_of_the`, "of the" is a
    single token, so counts are not additive and prompts need adjusting."""

    async def count(text: str) -> int:
        words = text.split()
        n = 1 + sum(1 if len(w) <= 4 else 2 for w in words)
        n += bool(words) and words[0].startswith("s")
        if merge_of_the:
            n -= sum(a == "of" and b == "the" for a, b in itertools.pairwise(words))
        return n

    return count


async def maker(seed: int = 0, merge_of_the: bool = False) -> PromptMaker:
    count = word_counter(merge_of_the)
    return PromptMaker(await measure_word_costs(count), count, np.random.default_rng(seed))


def workload(lengths: list[int], **kw: object) -> Workload:
    n = np.array(lengths, dtype=np.int64)
    return Workload(n, np.ones_like(n), concurrency=1, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("merge_of_the", [False, True])
async def test_exact_and_distinct(merge_of_the: bool) -> None:
    lengths = [2, 3, 17, 64, 64, 64, 300]
    m = await maker(merge_of_the=merge_of_the)
    prompts = await make_prompts(m, workload(lengths))
    assert [await m.count(p) for p in prompts] == lengths
    assert len(set(prompts)) == len(prompts)


async def test_same_seed_same_prompts() -> None:
    first = await make_prompts(await maker(seed=3), workload([50, 60]))
    again = await make_prompts(await maker(seed=3), workload([50, 60]))
    assert first == again


async def test_system_prompt_is_shared() -> None:
    m = await maker()
    prompts = await make_prompts(m, workload([40, 50, 60], system_prompt_tokens=30))
    heads = {" ".join(p.split()[:12]) for p in prompts}  # 30 tokens are at least 14 words
    assert len(heads) == 1
    assert [await m.count(p) for p in prompts] == [40, 50, 60]


async def test_prefix_blocks_follow_hash_ids() -> None:
    m = await maker()
    hashes = ((1, 2, 3), (1, 2, 4), (5, 6))
    prompts = await make_prompts(
        m, workload([35, 35, 25], prefix_hashes=hashes, prefix_block_tokens=10)
    )
    assert [await m.count(p) for p in prompts] == [35, 35, 25]
    a, b, c = (p.split() for p in prompts)
    shared = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    assert await m.count(" ".join(a[:shared])) >= 20  # blocks 1 and 2 are common
    assert a[:2] != c[:2]


async def test_impossible_lengths_raise() -> None:
    async def two_per_word(text: str) -> int:
        return 2 * len(text.split())

    with pytest.raises(PromptError, match="single token"):
        await measure_word_costs(two_per_word)
    m = await maker()
    with pytest.raises(PromptError, match="shorter than any word"):
        m.compose(1)  # the BOS token alone fills it


def test_local_counter_needs_tokenizers(tmp_path: Path) -> None:
    if importlib.util.find_spec("tokenizers") is not None:
        pytest.skip("tokenizers is installed")
    with pytest.raises(PromptError, match="pip install tokenizers"):
        local_counter(tmp_path / "tokenizer.json")


async def test_local_counter_counts(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, "alpha": 1, "beta": 2}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    count = local_counter(tmp_path / "tokenizer.json")
    assert await count("alpha beta gamma") == 3
