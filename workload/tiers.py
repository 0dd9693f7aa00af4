"""An offline model of a two-tier prefix cache: LRU memory that demotes what it evicts to an LRU disk.

Mooncake's ``offload_on_evict`` writes an object to its owner's disk when DRAM eviction picks it, and a read
of a disk-only object serves it from disk without bringing it back to memory (no ``promotion_on_hit``); the
model follows that. Rows replay as in :mod:`workload.stats` (full blocks only; a row's hits are the longest
leading run of blocks held in either tier; then every full block is published: one held in memory or on disk
is refreshed where it is, a new one goes to memory's most recent end, and memory's least recent block moves
to disk's most recent end, disk dropping its least recent block when full). Mooncake's disk evicts by bucket
in write order (``fifo``), not by use: the model's disk keeps what is read more often, so it is the better
disk of the two; Belady's MIN at the total capacity (:func:`workload.stats.optimal_hits`) bounds both.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workload.stats import optimal_hits
from workload.trace import DEFAULT_BLOCK_TOKENS, TraceRow


@dataclass(frozen=True)
class TwoTierHits:
    """The model's answer for ``memory_tokens`` of memory and ``disk_tokens`` of disk: full-block prefix hits
    served from memory and from disk, the ``input_tokens`` replayed and ``block_tokens``; ``optimal_blocks``:
    Belady's MIN with room for both tiers' blocks (the most any policy could hit)."""

    memory_tokens: int
    disk_tokens: int
    memory_blocks: int
    disk_blocks: int
    optimal_blocks: int
    input_tokens: int
    block_tokens: int

    @property
    def hit_blocks(self) -> int:
        """Hits from either tier."""
        return self.memory_blocks + self.disk_blocks

    def rate(self, blocks: int) -> float:
        """``blocks`` hit blocks as a token hit rate (0..1; 0 for no input)."""
        return blocks * self.block_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def memory_rate(self) -> float:
        """Token hit rate served from memory."""
        return self.rate(self.memory_blocks)

    @property
    def disk_rate(self) -> float:
        """Token hit rate served from disk."""
        return self.rate(self.disk_blocks)

    @property
    def hit_rate(self) -> float:
        """Token hit rate from either tier."""
        return self.rate(self.hit_blocks)

    @property
    def optimal_rate(self) -> float:
        """Belady's MIN token hit rate at the total capacity."""
        return self.rate(self.optimal_blocks)


def replay_two_tier(full: Iterable[Sequence[int]], memory_blocks: int, disk_blocks: int) -> tuple[int, int]:
    """``(memory hits, disk hits)`` in full blocks of replaying rows of ``full`` blocks (module docstring) with
    room for ``memory_blocks`` in memory and ``disk_blocks`` on disk. O(blocks); ``ValueError`` for a tier below
    zero."""
    if memory_blocks < 0 or disk_blocks < 0:
        raise ValueError(f"tier sizes must be >= 0 blocks, got memory {memory_blocks}, disk {disk_blocks}")
    memory: OrderedDict[int, None] = OrderedDict()
    disk: OrderedDict[int, None] = OrderedDict()
    from_memory = from_disk = 0
    for ids in full:
        for h in ids:  # the row's hits: the leading run held in either tier
            if h in memory:
                from_memory += 1
            elif h in disk:
                from_disk += 1
            else:
                break
        for h in ids:  # its publish: refresh what is held, put what is new into memory
            if h in memory:
                memory.move_to_end(h)
            elif h in disk:
                disk.move_to_end(h)
            elif memory_blocks:
                memory[h] = None
                if len(memory) > memory_blocks:
                    old, _ = memory.popitem(last=False)
                    if disk_blocks:
                        disk[old] = None
                        if len(disk) > disk_blocks:
                            disk.popitem(last=False)
    return from_memory, from_disk


def two_tier_hits(rows: Sequence[TraceRow], memory_tokens: int, disk_tokens: int,
                  block_tokens: int = DEFAULT_BLOCK_TOKENS) -> TwoTierHits:
    """The model of ``rows`` with ``memory_tokens`` of memory and ``disk_tokens`` of disk (whole blocks of
    ``block_tokens``), and Belady's MIN at the total; ``ValueError`` for a size below zero or a block size
    below one."""
    if block_tokens < 1:
        raise ValueError(f"block size must be >= 1 tokens, got {block_tokens}")
    if memory_tokens < 0 or disk_tokens < 0:
        raise ValueError(f"tier sizes must be >= 0 tokens, got memory {memory_tokens}, disk {disk_tokens}")
    full = [r.hash_ids[: r.input_length // block_tokens] for r in rows]
    mem, dsk = replay_two_tier(full, memory_tokens // block_tokens, disk_tokens // block_tokens)
    best, _ = optimal_hits(rows, block_tokens, memory_tokens // block_tokens * block_tokens
                           + disk_tokens // block_tokens * block_tokens)
    return TwoTierHits(memory_tokens, disk_tokens, mem, dsk, best, sum(r.input_length for r in rows), block_tokens)
