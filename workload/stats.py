"""Offline analysis of a Mooncake FAST'25 trace (``kvcache-ai/Mooncake FAST25-release/traces``): no store.

The ideal prefix-hit figures use the replay rule of the FAST'25 trace release's README (each ``hash_ids``
entry names one block of ``block_tokens`` tokens, 512 in the release), which is the connector's rule: replay rows in
file order; only the ``input_length // block_tokens`` full blocks of a row are cacheable; a row's hit is the **longest
leading run** of its full blocks already cached by earlier rows; then the row publishes its full blocks. A real replay
through a store with room for every KV page, one request at a time, must reproduce these numbers exactly.

Bounded cache (``capacity_tokens``): an LRU cache of ``capacity_tokens // block_tokens`` blocks. Looking
a block up (hit) or publishing it touches it (most recently used); publishing a block into a full cache
evicts the least recently used one, possibly one the same row just published. Because every hit block is
published again by the same row, the cache content is always the ``capacity`` most recently published
blocks, so the hit rate never decreases when the capacity grows (the shape of the paper's Fig. 9).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from workload.trace import DEFAULT_BLOCK_TOKENS, TraceRow, late_rows

__all__ = ["TraceStats", "trace_stats", "ideal_hits", "hit_rate_curve", "percentile", "IdealPrefixCache"]


@dataclass
class TraceStats:
    """Summary of a trace. Token counts are tokens, times seconds, rates requests per second.

    Attributes:
        rows: number of rows (requests).
        block_tokens: tokens per hash id used for the analysis.
        duration_s: last minus first arrival (max minus min ``timestamp``), seconds.
        arrival_rate_rps: mean arrival rate ``(rows - 1) / duration_s`` (req/s); ``None`` if duration 0.
        out_of_order_rows: rows whose timestamp is below an earlier row's, the rows
            :func:`workload.trace.read_trace` warns about (:func:`workload.trace.late_rows`; 0 in the FAST'25
            files).
        input_tokens: total prompt tokens.
        input_mean: mean prompt length (tokens).
        input_p50 / input_p90 / input_p99 / input_max: prompt length percentiles (nearest rank, tokens).
        output_tokens: total generated tokens.
        blocks_listed: total number of hash ids over all rows.
        distinct_blocks: number of distinct hash ids.
        full_blocks: number of full (cacheable) blocks over all rows (``sum(input_length // block_tokens)``).
        ideal_block_hits: full-block prefix hits with an unbounded cache (the README rule).
        ideal_hit_tokens: ``ideal_block_hits * block_tokens``.
        ideal_token_hit_rate: ``ideal_hit_tokens / input_tokens`` (0..1).
        all_blocks_hits / all_blocks_hit_tokens / all_blocks_token_hit_rate: the same if partial tail
            blocks were cacheable too (hit tokens capped at the row's input length) -- an upper bound.
    """

    rows: int
    block_tokens: int
    duration_s: float
    arrival_rate_rps: float | None
    out_of_order_rows: int
    input_tokens: int
    input_mean: float
    input_p50: int
    input_p90: int
    input_p99: int
    input_max: int
    output_tokens: int
    blocks_listed: int
    distinct_blocks: int
    full_blocks: int
    ideal_block_hits: int
    ideal_hit_tokens: int
    ideal_token_hit_rate: float
    all_blocks_hits: int
    all_blocks_hit_tokens: int
    all_blocks_token_hit_rate: float

    def to_dict(self) -> dict[str, object]:
        """Plain dict of the fields (JSON-serialisable)."""
        return asdict(self)


def percentile(sorted_values: Sequence[int], p: float) -> int:
    """Nearest-rank percentile ``p`` (0..100) of a non-empty ascending sequence: an actual element."""
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be between 0 and 100, got {p}")
    rank = max(1, -(-len(sorted_values) * p // 100))  # ceil(p/100 * N), at least 1
    return sorted_values[int(rank) - 1]


def _check_block_tokens(block_tokens: int) -> None:
    if isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or block_tokens < 1:
        raise ValueError(f"block size must be an integer >= 1 tokens, got {block_tokens!r}")


def _full_blocks(rows: Iterable[TraceRow], block_tokens: int) -> list[tuple[int, ...]]:
    return [r.hash_ids[: r.input_length // block_tokens] for r in rows]


class IdealPrefixCache:
    """The unbounded-cache rule of the module docstring, one row at a time (what ``trace-stats`` replays over
    the whole file): :meth:`add` gives a row's ideal hit, then caches its full blocks. Feeding every row of a
    trace in file order gives :attr:`TraceStats.ideal_block_hits` exactly; the monitor feeds the rows a replay
    issues, for the ideal hit rate of the trace so far. Memory: one set entry per distinct full block."""

    def __init__(self, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> None:
        _check_block_tokens(block_tokens)
        self.block_tokens = block_tokens
        self._cached: set[int] = set()
        self.rows = 0
        self.hit_blocks = 0
        self.input_tokens = 0

    def add_blocks(self, full: Sequence[int]) -> int:
        """Hit blocks of a row whose full blocks are ``full`` (the longest leading run already cached), then
        cache them all."""
        cached, hits = self._cached, 0
        for h in full:
            if h not in cached:
                break
            hits += 1
        cached.update(full)
        self.hit_blocks += hits
        self.rows += 1
        return hits

    def add(self, row: TraceRow) -> int:
        """:meth:`add_blocks` of ``row``'s ``input_length // block_tokens`` full blocks; also counts its input
        tokens (for :attr:`hit_rate`)."""
        self.input_tokens += row.input_length
        return self.add_blocks(row.hash_ids[: row.input_length // self.block_tokens])

    @property
    def hit_tokens(self) -> int:
        """Ideal hit tokens so far (``hit_blocks * block_tokens``)."""
        return self.hit_blocks * self.block_tokens

    @property
    def hit_rate(self) -> float:
        """Ideal token hit rate of the rows added with :meth:`add` (0..1; 0 before any)."""
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0


def _replay(full: Sequence[Sequence[int]], capacity_blocks: int | None) -> int:
    """Full-block prefix hits of a replay; ``capacity_blocks`` None = unbounded (:class:`IdealPrefixCache`)."""
    hits = 0
    if capacity_blocks is None:
        cache = IdealPrefixCache()
        for ids in full:
            cache.add_blocks(ids)
        return cache.hit_blocks
    if capacity_blocks <= 0:
        return 0
    lru: OrderedDict[int, None] = OrderedDict()
    for ids in full:
        for h in ids:  # the hit touches are redone by the publish below, so only count here
            if h not in lru:
                break
            hits += 1
        for h in ids:
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
                if len(lru) > capacity_blocks:
                    lru.popitem(last=False)
    return hits


def _capacity_blocks(capacity_tokens: int | None, block_tokens: int) -> int | None:
    if capacity_tokens is None:
        return None
    if isinstance(capacity_tokens, bool) or not isinstance(capacity_tokens, int) or capacity_tokens < 0:
        raise ValueError(f"cache capacity must be an integer >= 0 tokens, got {capacity_tokens!r}")
    return capacity_tokens // block_tokens


def ideal_hits(
    rows: Sequence[TraceRow], block_tokens: int = DEFAULT_BLOCK_TOKENS, capacity_tokens: int | None = None
) -> tuple[int, int]:
    """``(full-block prefix hits, hit tokens)`` of replaying ``rows`` in order (see the module docstring).

    ``capacity_tokens`` None = unbounded cache; else an LRU cache of ``capacity_tokens // block_tokens``
    blocks. Hit tokens = hits * ``block_tokens`` (only full blocks are hit).
    """
    _check_block_tokens(block_tokens)
    hits = _replay(_full_blocks(rows, block_tokens), _capacity_blocks(capacity_tokens, block_tokens))
    return hits, hits * block_tokens


def hit_rate_curve(
    rows: Sequence[TraceRow], capacities: Iterable[int | None], block_tokens: int = DEFAULT_BLOCK_TOKENS
) -> list[tuple[int | None, float]]:
    """Ideal token hit rate (0..1, hit tokens / input tokens) at each LRU capacity in tokens.

    Returns ``[(capacity_tokens, hit_rate), ...]`` in the order given; a capacity of ``None`` means
    unbounded. Each point is one LRU replay (O(blocks)); the rate is non-decreasing in capacity.
    """
    _check_block_tokens(block_tokens)
    caps = list(capacities)
    blocks = [_capacity_blocks(c, block_tokens) for c in caps]
    full = _full_blocks(rows, block_tokens)
    input_tokens = sum(r.input_length for r in rows)
    out: list[tuple[int | None, float]] = []
    for cap, cap_blocks in zip(caps, blocks):
        hits = _replay(full, cap_blocks)
        out.append((cap, hits * block_tokens / input_tokens if input_tokens else 0.0))
    return out


def trace_stats(rows: Sequence[TraceRow], block_tokens: int = DEFAULT_BLOCK_TOKENS) -> TraceStats:
    """Compute :class:`TraceStats` for ``rows`` (at least one) with ``block_tokens`` tokens per hash id."""
    _check_block_tokens(block_tokens)
    if not rows:
        raise ValueError("trace has no rows")
    ts = [r.timestamp_ms for r in rows]
    duration_s = (max(ts) - min(ts)) / 1000.0
    lengths = sorted(r.input_length for r in rows)
    input_tokens = sum(lengths)
    full = _full_blocks(rows, block_tokens)
    hits = _replay(full, None)

    # upper bound: partial tail blocks cacheable too
    cached: set[int] = set()
    all_hits = all_hit_tokens = 0
    for r in rows:
        k = 0
        for h in r.hash_ids:
            if h not in cached:
                break
            k += 1
        all_hits += k
        all_hit_tokens += min(k * block_tokens, r.input_length)
        cached.update(r.hash_ids)

    distinct: set[int] = set()
    for r in rows:
        distinct.update(r.hash_ids)
    return TraceStats(
        rows=len(rows),
        block_tokens=block_tokens,
        duration_s=duration_s,
        arrival_rate_rps=(len(rows) - 1) / duration_s if duration_s > 0 else None,
        out_of_order_rows=len(late_rows(rows)),
        input_tokens=input_tokens,
        input_mean=input_tokens / len(rows),
        input_p50=percentile(lengths, 50),
        input_p90=percentile(lengths, 90),
        input_p99=percentile(lengths, 99),
        input_max=lengths[-1],
        output_tokens=sum(r.output_length for r in rows),
        blocks_listed=sum(len(r.hash_ids) for r in rows),
        distinct_blocks=len(distinct),
        full_blocks=sum(len(f) for f in full),
        ideal_block_hits=hits,
        ideal_hit_tokens=hits * block_tokens,
        ideal_token_hit_rate=hits * block_tokens / input_tokens,
        all_blocks_hits=all_hits,
        all_blocks_hit_tokens=all_hit_tokens,
        all_blocks_token_hit_rate=all_hit_tokens / input_tokens,
    )
