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

Optimal cache of the same capacity (:func:`optimal_hits`): Belady's MIN (L. A. Belady, "A study of replacement
algorithms for a virtual-storage computer", IBM Systems Journal 5(2), 1966): when a block must be published into
a full cache, drop whichever of the cached blocks and the new one is used furthest in the future (the new one
is then not kept). With the replay rule above a block's "use" is the next later row that lists it among its
full blocks, ties broken by its position in that row (a deeper block only hits if the ones before it do). No
cache of that capacity hits more: the unit tests check it against an exhaustive search over every eviction
choice. It is an upper bound no online policy reaches (it knows the future): the gap between it and LRU is
what the eviction policy costs, the gap between it and the unbounded cache what the capacity costs.

Two more ways to read a hit rate:

* aiperf's (:func:`aiperf_hit_rate`, the ``cache_hit_rate`` of ``aiperf analyze-trace``,
  ``ai-dynamo/aiperf`` ``src/aiperf/dataset/synthesis/prefix_analyzer.py``): the **mean over requests** of
  each request's share of its listed blocks (partial tail included) in the leading run already seen, with an
  unbounded cache. Every request weighs the same, whatever its length; kvtui's figures weigh each token the
  same (hit tokens ÷ input tokens), so long prompts count for more. Both are right; they answer different
  questions and differ on real traces.
* The prefill-compute ceiling (:func:`prefill_ceiling`) of a token hit rate ``r``: ``1 / (1 − r)``, how many
  times less prefill work there is if every hit token costs nothing and every other token the same (input
  tokens ÷ tokens still computed). An ideal: loading a hit costs time, and attention over a long reused
  prefix is not free.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from workload.rows import DEFAULT_BLOCK_TOKENS, TraceRow, late_rows

__all__ = ["TraceStats", "trace_stats", "ideal_hits", "hit_rate_curve", "optimal_hits", "optimal_hit_rate_curve",
           "aiperf_hit_rate", "AiperfPrefixCache", "prefill_ceiling", "percentile", "IdealPrefixCache"]


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
        aiperf_hit_rate: aiperf ``analyze-trace``'s ``cache_hit_rate`` (:func:`aiperf_hit_rate`): the mean
            over rows of each row's block hit share, unbounded cache (0..1).
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
    aiperf_hit_rate: float

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


def _next_uses(full: Sequence[Sequence[int]]) -> list[list[tuple[int, int]]]:
    """For each row ``r`` and each of its full blocks, ``(next row, position)``: the first row after ``r`` that
    lists the block among its full blocks and the block's position there; ``(len(full), 0)`` when none does.
    One backward pass, O(blocks) time and one dict entry per distinct block."""
    never = (len(full), 0)
    later: dict[int, tuple[int, int]] = {}
    out: list[list[tuple[int, int]]] = [[] for _ in full]
    for r in range(len(full) - 1, -1, -1):
        ids = full[r]
        out[r] = [later.get(h, never) for h in ids]
        for k in range(len(ids) - 1, -1, -1):  # the first position wins when a row lists a block twice
            later[ids[k]] = (r, k)
    return out


def _replay_min(full: Sequence[Sequence[int]], capacity_blocks: int) -> int:
    """Full-block prefix hits of Belady's MIN with room for ``capacity_blocks`` blocks (module docstring).

    Each row: count its leading run of cached blocks, then publish its full blocks in order. A cached block
    gets its new next use; a new block is cached while there is room, else it replaces the cached block used
    furthest in the future when that one is used later than itself, and is dropped otherwise. The cached
    blocks sit in a max-heap on their next use; an entry whose block has since been re-keyed or dropped is
    skipped when it reaches the top (lazy deletion). Cost: O(B log B) time for B full blocks in all, memory
    one heap entry per publish plus one dict entry per distinct block."""
    if capacity_blocks <= 0:
        return 0
    uses = _next_uses(full)
    cached: dict[int, tuple[int, int]] = {}  # block -> its next use (row, position)
    heap: list[tuple[int, int, int]] = []  # (-row, -position, block): furthest next use on top
    hits = 0
    for ids, nexts in zip(full, uses):
        for h in ids:
            if h not in cached:
                break
            hits += 1
        for h, nxt in zip(ids, nexts):
            if h not in cached and len(cached) >= capacity_blocks:
                while True:  # the cached block used furthest ahead (stale entries dropped)
                    row, pos, victim = heap[0]
                    if cached.get(victim) == (-row, -pos):
                        break
                    heapq.heappop(heap)
                if nxt >= (-row, -pos):
                    continue  # the new block is needed last: keep the cache as it is
                heapq.heappop(heap)
                del cached[victim]
            cached[h] = nxt
            heapq.heappush(heap, (-nxt[0], -nxt[1], h))
        if len(heap) > 4 * capacity_blocks + 64:  # bound the stale entries: rebuild from the live ones
            heap = [(-r, -p, b) for b, (r, p) in cached.items()]
            heapq.heapify(heap)
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


def optimal_hits(
    rows: Sequence[TraceRow], block_tokens: int = DEFAULT_BLOCK_TOKENS, capacity_tokens: int | None = None
) -> tuple[int, int]:
    """``(full-block prefix hits, hit tokens)`` of Belady's MIN replay of ``rows`` with room for
    ``capacity_tokens // block_tokens`` blocks (module docstring; ``None`` = unbounded, where MIN and the
    unbounded cache agree). O(B log B) time for B full blocks. ``ValueError`` on a negative capacity."""
    _check_block_tokens(block_tokens)
    full = _full_blocks(rows, block_tokens)
    cap = _capacity_blocks(capacity_tokens, block_tokens)
    hits = _replay(full, None) if cap is None else _replay_min(full, cap)
    return hits, hits * block_tokens


def optimal_hit_rate_curve(
    rows: Sequence[TraceRow], capacities: Iterable[int | None], block_tokens: int = DEFAULT_BLOCK_TOKENS
) -> list[tuple[int | None, float]]:
    """Belady MIN token hit rate (0..1, hit tokens / input tokens) at each capacity in tokens, as
    :func:`hit_rate_curve` gives LRU's: ``[(capacity_tokens, hit_rate), ...]`` in the order given (``None`` =
    unbounded). Each point is one MIN replay, O(B log B) for B full blocks; at every capacity it is at least
    LRU's and at most the unbounded cache's rate."""
    _check_block_tokens(block_tokens)
    caps = list(capacities)
    input_tokens = sum(r.input_length for r in rows)
    out: list[tuple[int | None, float]] = []
    for cap in caps:
        hit_tokens = optimal_hits(rows, block_tokens, cap)[1]
        out.append((cap, hit_tokens / input_tokens if input_tokens else 0.0))
    return out


class AiperfPrefixCache:
    """aiperf's rule (:func:`aiperf_hit_rate`) one row at a time: :meth:`share` gives a row's share (the
    leading run of its ``hash_ids`` already seen ÷ ``len(hash_ids)``, the partial tail block included), then
    marks all its ids seen. The monitor feeds the rows a replay issues, for aiperf's hit rate of the trace so
    far. Memory: one set entry per distinct hash id."""

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def share(self, row: TraceRow) -> float | None:
        """``row``'s share (0..1); None for a row with no hash ids (aiperf leaves it out of the mean)."""
        ids = row.hash_ids
        if not ids:
            return None
        seen, run = self._seen, 0
        for h in ids:
            if h not in seen:
                break
            run += 1
        seen.update(ids)
        return run / len(ids)


def aiperf_hit_rate(rows: Iterable[TraceRow]) -> float:
    """aiperf ``analyze-trace``'s ``cache_hit_rate`` of ``rows`` (0..1; ``ai-dynamo/aiperf``,
    ``PrefixAnalyzer._compute_per_request_hit_rates``): rows in order with an unbounded cache of hash ids;
    a row's share is the length of the leading run of its ``hash_ids`` already seen ÷ ``len(hash_ids)``
    (every listed block, the partial tail too, so no block size enters); then all its ids are seen
    (:class:`AiperfPrefixCache`). The result is the mean of the shares over the rows that list at least one
    id (0 when none does), summed in row order."""
    cache = AiperfPrefixCache()
    total = 0.0
    n = 0
    for r in rows:
        share = cache.share(r)
        if share is None:
            continue
        total += share
        n += 1
    return total / n if n else 0.0


def prefill_ceiling(token_hit_rate: float) -> float:
    """The prefill-compute ceiling of a token hit rate ``r`` (0..1): ``1 / (1 − r)``, input tokens ÷ tokens
    still computed if every hit token were free (module docstring). ``math.inf`` at ``r = 1`` (nothing left
    to compute); ``ValueError`` outside 0..1."""
    if not 0.0 <= token_hit_rate <= 1.0:
        raise ValueError(f"a hit rate is within 0..1, got {token_hit_rate!r}")
    return math.inf if token_hit_rate >= 1.0 else 1.0 / (1.0 - token_hit_rate)


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
        aiperf_hit_rate=aiperf_hit_rate(rows),
    )
