"""Paged KV cache: a finite pool of blocks of `block_size` tokens, with a prefix cache.

Counting, not addresses: the simulator needs how many blocks are in use, not which. A block
is one of three things:

    capacity = free + private (held by one request) + cached (prefix blocks, by hash)
    cached   = referenced (some running request uses it) + evictable (ref count 0, LRU)

Allocation takes free blocks first, then evicts the least recently used evictable prefix
blocks (vLLM's free-block queue works the same way). A prefix hash covers
`blocks_per_hash` blocks (Mooncake's `hash_ids` cover 512 tokens = 32 blocks of 16).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


class KVCacheManager:
    """Block accounting for one engine instance. `num_blocks=None` means unlimited."""

    def __init__(
        self,
        num_blocks: int | None,
        block_size: int,
        *,
        enable_prefix_caching: bool = True,
        blocks_per_hash: int = 1,
    ) -> None:
        self.capacity = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.blocks_per_hash = blocks_per_hash
        self.num_used = 0  # private + cached
        self.peak_used = 0
        self._refs: dict[int, int] = {}  # hash -> number of requests referencing it
        self._evictable: OrderedDict[int, None] = OrderedDict()  # ref-0 hashes, LRU first

    @property
    def num_evictable(self) -> int:
        return len(self._evictable) * self.blocks_per_hash

    def num_allocatable(self) -> float:
        if self.capacity is None:
            return float("inf")
        return self.capacity - self.num_used + self.num_evictable

    def blocks_for(self, num_tokens: int) -> int:
        return -(-num_tokens // self.block_size)

    def allocate(self, num_blocks: int) -> bool:
        """Take `num_blocks` private blocks, evicting cached prefixes if needed; False if short."""
        if num_blocks <= 0:
            return True
        used = self.num_used + num_blocks
        if self.capacity is not None and used > self.capacity:
            if used - self.capacity > self.num_evictable:
                return False
            while self.num_used + num_blocks > self.capacity:  # evict LRU prefix blocks
                victim, _ = self._evictable.popitem(last=False)
                del self._refs[victim]
                self.num_used -= self.blocks_per_hash
            used = self.num_used + num_blocks
        self.num_used = used
        if used > self.peak_used:
            self.peak_used = used
        return True

    def free(self, num_blocks: int) -> None:
        self.num_used -= num_blocks

    def num_cached_prefix(self, hashes: Sequence[int]) -> int:
        """How many leading hashes of a prompt are in the cache (0 when caching is off)."""
        if not self.enable_prefix_caching:
            return 0
        n = 0
        for h in hashes:
            if h not in self._refs:
                break
            n += 1
        return n

    def acquire(self, hashes: Sequence[int]) -> None:
        """Reference cached prefix blocks (they stop being evictable)."""
        for h in hashes:
            if self._refs[h] == 0:
                del self._evictable[h]
            self._refs[h] += 1

    def register(self, hashes: Sequence[int]) -> int:
        """Turn a request's freshly computed prompt blocks into cache entries it references.

        Registers the leading hashes not yet cached and stops at the first one that is (another
        request computed it meanwhile; the rest stay private to this request, as both computed
        them). Returns the number of hashes registered.
        """
        if not self.enable_prefix_caching:
            return 0
        n = 0
        for h in hashes:
            if h in self._refs:
                break
            self._refs[h] = 1
            n += 1
        return n

    def release(self, hashes: Sequence[int]) -> None:
        """Drop a request's references; unreferenced blocks stay cached until evicted."""
        for h in hashes:
            refs = self._refs[h] - 1
            self._refs[h] = refs
            if refs == 0:
                self._evictable[h] = None
