"""Trace synthesis: new traces from a Mooncake FAST'25 trace, row for row, with faster arrivals, longer or
shorter shared prefixes, more prefix trees or longer prompts (the knobs aiperf and Dynamo's prefix data
generator offer for Mooncake traces, here as pure transforms of the parsed rows of :mod:`workload.trace`).

Every transform keeps the rows, their order and their ``output_length``; ids it makes up are new integers
above every id of its input (taken in row order, then position), so they never collide with real blocks.

**Shared prefix, unique suffix** (the split every transform but the speed-up works on). With
``B = block_tokens``, a row's *full blocks* are its first ``input_length // B`` hash ids (the blocks the
replay rule of :mod:`workload.stats` can publish or hit). A hash id is **shared** when at least two rows
list it among their full blocks. A row's **shared prefix** is the longest leading run of its full blocks
that are all shared (``s`` blocks, ``s · B`` tokens); the rest of the row -- later blocks and the partial
tail -- is its **unique suffix** (``u = input_length − s · B`` tokens). This is Dynamo's split of a request
into "context" (blocks that can be visited more than once) and "prompt" (visited once), on the rows
themselves. Every ideal hit lies inside the shared prefix: a block is hit only if an earlier row
published it, and then two rows list it.

In the FAST'25 files an id names a block *and every block before it* (a node of a prefix tree), so an id
always sits at the same depth with the same parent (true of both shipped traces, checked by the tests);
the exact effects below hold for such traces. ``H`` = ideal hit blocks, ``T`` = input tokens, ``S =
Σ s · B`` the shared-prefix tokens, ``k_h`` = rows listing id ``h`` as a full block; in a prefix tree
``H = Σ_h (k_h − 1)``.

- :func:`speed_up` (``--trace-speedup X``): each row's arrival time after the first row (``timestamp −
  first timestamp``, ms) is divided by ``X`` and rounded half up to a millisecond. The order, hence every
  hit figure, is unchanged; the duration is ``÷ X`` and the arrival rate ``× X`` (to the rounding).
- :func:`scale_prefixes` (``--prefix-scale X``): a shared prefix of ``s`` blocks becomes
  ``L(s) = max(1, ⌊s·X + ½⌋)`` blocks; the node at depth ``d`` turns into ``L(d) − L(d−1)`` blocks (its
  own id first, then new ids; none when that is 0), the same blocks in every row that lists it, so rows
  that shared ``k`` leading blocks share ``L(k)``. The suffix is unchanged; ``input_length`` grows by
  ``(L(s) − s) · B``. A hit run of ``k`` blocks becomes ``L(k)``: for an integer ``X`` the ideal hit
  rate goes from ``H·B / T`` to ``X·H·B / (T + (X − 1)·S)``; it rises with ``X``.
- :func:`scale_prompts` (``--prompt-scale X``): the unique suffix of ``u > 0`` tokens becomes
  ``max(1, ⌊u·X + ½⌋)`` tokens of new ids (a row with no suffix is unchanged). Hits are unchanged (no
  suffix block is ever hit), so the ideal hit rate goes from ``H·B / T`` to ``H·B / T'`` with ``T'`` the
  new input tokens: it falls when ``X > 1``.
- :func:`replicate_roots` (``--prefix-roots N``): ``N`` disjoint copies of the prefix trees; row ``i``
  (0-based, in order) uses copy ``i mod N``: copy 0 keeps the ids, copy ``c ≥ 1`` replaces each shared-
  prefix id ``h`` by a new id of its own for ``(h, c)``. Suffixes and lengths are unchanged. A block is
  now hit only by later rows of the same copy: ``H`` becomes ``Σ_h (k_h − c_h)``, ``c_h`` the copies
  among the rows that list ``h`` (at most ``min(k_h, N)``), so the hit rate never rises, falls about
  ``N``-fold for rarely shared prefixes, and is 0 when ``N`` ≥ the rows.

:func:`synthesize` applies them in that order (speed-up, prefix scale, prompt scale, roots); each keeps
the shared/unique split of the one before, so their effects compose.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from fractions import Fraction

from workload.trace import DEFAULT_BLOCK_TOKENS, TraceRow

__all__ = [
    "Synthesis",
    "MAX_BLOCKS",
    "shared_ids",
    "shared_prefix_lengths",
    "speed_up",
    "scale_prefixes",
    "scale_prompts",
    "replicate_roots",
    "synthesize",
    "rows_to_jsonl",
]

MAX_BLOCKS = 50_000_000
"""The most hash ids a synthesized trace may list (about 2 GB of Python ints): above it a transform raises
``ValueError`` before building anything."""


def _exact(x: float | int | Fraction) -> Fraction:
    """``x`` as the decimal the user typed (``1.1`` is 11/10, not the binary double)."""
    return x if isinstance(x, Fraction) else Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def _half_up(x: Fraction) -> int:
    """``⌊x + ½⌋``: round half up, exactly."""
    return math.floor(x + Fraction(1, 2))


def _check_factor(x, what: str) -> Fraction:
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction)) or not math.isfinite(x) or not x > 0:
        raise ValueError(f"{what} must be a positive finite number, got {x!r}")
    return _exact(x)


def _check_block_tokens(block_tokens: int) -> None:
    if isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or block_tokens < 1:
        raise ValueError(f"block size must be an integer >= 1 tokens, got {block_tokens!r}")


@dataclass(frozen=True)
class Synthesis:
    """The transforms to apply (defaults: none). ``speedup``, ``prefix_scale``, ``prompt_scale``: positive
    factors; ``prefix_roots``: an integer >= 1 (see the module docstring for what each does)."""

    speedup: float = 1.0
    prefix_scale: float = 1.0
    prompt_scale: float = 1.0
    prefix_roots: int = 1

    def validate(self) -> None:
        """``ValueError`` naming the field (``prefix_scale must be …``) for a factor that is not a positive
        finite number or ``prefix_roots`` that is not an integer >= 1."""
        for name in ("speedup", "prefix_scale", "prompt_scale"):
            _check_factor(getattr(self, name), name)
        n = self.prefix_roots
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"prefix_roots must be an integer >= 1, got {n!r}")

    @property
    def identity(self) -> bool:
        """True when every field is at its default (nothing changes)."""
        return self == Synthesis()

    def as_dict(self) -> dict[str, float | int]:
        """The fields that differ from the default, e.g. ``{"prefix_scale": 2.0}`` (``{}`` for none)."""
        default = Synthesis()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}

    def describe(self) -> str:
        """One line, e.g. ``arrivals ÷ 2, shared prefixes × 1.5, 4 prefix roots`` (``none`` for none)."""
        parts = []
        if self.speedup != 1:
            parts.append(f"arrivals ÷ {self.speedup:g}")
        if self.prefix_scale != 1:
            parts.append(f"shared prefixes × {self.prefix_scale:g}")
        if self.prompt_scale != 1:
            parts.append(f"unique suffixes × {self.prompt_scale:g}")
        if self.prefix_roots != 1:
            parts.append(f"{self.prefix_roots} prefix roots")
        return ", ".join(parts) or "none"


# --- the shared/unique split --------------------------------------------------------------------------


def _full(row: TraceRow, block_tokens: int) -> tuple[int, ...]:
    return row.hash_ids[: row.input_length // block_tokens]


def shared_ids(rows: Iterable[TraceRow], block_tokens: int = DEFAULT_BLOCK_TOKENS) -> set[int]:
    """The hash ids that at least two rows list among their full blocks (a row listing an id twice
    counts once)."""
    _check_block_tokens(block_tokens)
    seen: set[int] = set()
    shared: set[int] = set()
    for r in rows:
        ids = set(_full(r, block_tokens))
        shared |= ids & seen
        seen |= ids
    return shared


def shared_prefix_lengths(rows: Sequence[TraceRow], block_tokens: int = DEFAULT_BLOCK_TOKENS) -> list[int]:
    """Per row, the blocks of its shared prefix: the longest leading run of its full blocks that are all
    :func:`shared_ids` (0 when the first block is not shared)."""
    shared = shared_ids(rows, block_tokens)
    out = []
    for r in rows:
        full = _full(r, block_tokens)
        s = 0
        while s < len(full) and full[s] in shared:
            s += 1
        out.append(s)
    return out


class _NewIds:
    """New hash ids above every id of ``rows``, handed out in the order asked for."""

    def __init__(self, rows: Sequence[TraceRow]):
        self.next = max((max(r.hash_ids) for r in rows if r.hash_ids), default=-1) + 1

    def take(self, n: int = 1) -> tuple[int, ...]:
        out = tuple(range(self.next, self.next + n))
        self.next += n
        return out


def _check_size(blocks: int) -> None:
    if blocks > MAX_BLOCKS:
        raise ValueError(f"the synthesized trace would list {blocks:,} blocks, more than {MAX_BLOCKS:,}: "
                         "use smaller factors")


# --- the transforms -------------------------------------------------------------------------------------


def speed_up(rows: Sequence[TraceRow], x: float) -> list[TraceRow]:
    """Arrival times ÷ ``x``: ``timestamp' = t0 + ⌊(timestamp − t0) / x + ½⌋`` ms with ``t0`` the first
    row's timestamp (at least 0). ``ValueError`` unless ``x`` is a positive finite number."""
    fx = _check_factor(x, "speed-up")
    if not rows or fx == 1:
        return list(rows)
    t0 = rows[0].timestamp_ms
    return [replace(r, timestamp_ms=max(0, t0 + _half_up((r.timestamp_ms - t0) / fx))) for r in rows]


def _levels(x: Fraction, depth: int) -> int:
    """``L(d) = max(1, ⌊d·x + ½⌋)`` blocks for a shared prefix of ``d >= 1`` blocks, ``L(0) = 0``."""
    return 0 if depth == 0 else max(1, _half_up(depth * x))


def scale_prefixes(rows: Sequence[TraceRow], x: float, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> list[TraceRow]:
    """Each row's shared prefix of ``s`` blocks becomes ``L(s) = max(1, ⌊s·x + ½⌋)`` blocks, its unique
    suffix unchanged (module docstring). The node of id ``h`` at depth ``d`` (1-based, where ``h`` first
    appears) becomes ``L(d) − L(d−1)`` blocks: ``h`` itself, then new ids; the same ones in every row.
    ``ValueError`` for a factor that is not positive and finite, or a result over :data:`MAX_BLOCKS`."""
    fx = _check_factor(x, "prefix scale")
    _check_block_tokens(block_tokens)
    if not rows or fx == 1:
        return list(rows)
    s_of = shared_prefix_lengths(rows, block_tokens)
    _check_size(sum(len(r.hash_ids) - s + _levels(fx, s) for r, s in zip(rows, s_of)))
    new = _NewIds(rows)
    nodes: dict[int, tuple[int, ...]] = {}
    out = []
    for r, s in zip(rows, s_of):
        prefix: list[int] = []
        for d, h in enumerate(r.hash_ids[:s], start=1):
            if h not in nodes:
                n = _levels(fx, d) - _levels(fx, d - 1)
                nodes[h] = ((h,) + new.take(n - 1)) if n else ()
            prefix.extend(nodes[h])
        grown = (len(prefix) - s) * block_tokens
        out.append(replace(r, input_length=r.input_length + grown, hash_ids=tuple(prefix) + r.hash_ids[s:]))
    return out


def scale_prompts(rows: Sequence[TraceRow], x: float, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> list[TraceRow]:
    """Each row's unique suffix of ``u > 0`` tokens becomes ``max(1, ⌊u·x + ½⌋)`` tokens of new ids
    (``ceil(u' / block_tokens)`` blocks); its shared prefix and a row without a suffix are unchanged.
    ``ValueError`` for a factor that is not positive and finite, or a result over :data:`MAX_BLOCKS`."""
    fx = _check_factor(x, "prompt scale")
    _check_block_tokens(block_tokens)
    if not rows or fx == 1:
        return list(rows)
    s_of = shared_prefix_lengths(rows, block_tokens)
    plan = []
    for r, s in zip(rows, s_of):
        u = r.input_length - s * block_tokens
        plan.append(max(1, _half_up(u * fx)) if u > 0 else 0)
    _check_size(sum(s + -(-u // block_tokens) for s, u in zip(s_of, plan)))
    new = _NewIds(rows)
    out = []
    for r, s, u in zip(rows, s_of, plan):
        if u == 0:
            out.append(r)
            continue
        suffix = new.take(-(-u // block_tokens))
        out.append(replace(r, input_length=s * block_tokens + u, hash_ids=r.hash_ids[:s] + suffix))
    return out


def replicate_roots(rows: Sequence[TraceRow], n: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> list[TraceRow]:
    """``n`` disjoint copies of the prefix trees: row ``i`` uses copy ``i mod n``; copy 0 keeps its ids,
    copy ``c >= 1`` maps each shared-prefix id ``h`` to a new id of its own for ``(h, c)`` (module
    docstring). ``ValueError`` unless ``n`` is an integer >= 1."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"prefix roots must be an integer >= 1, got {n!r}")
    _check_block_tokens(block_tokens)
    if not rows or n == 1:
        return list(rows)
    s_of = shared_prefix_lengths(rows, block_tokens)
    new = _NewIds(rows)
    copies: dict[tuple[int, int], int] = {}
    out = []
    for i, (r, s) in enumerate(zip(rows, s_of)):
        c = i % n
        if c == 0 or s == 0:
            out.append(r)
            continue
        prefix = []
        for h in r.hash_ids[:s]:
            if (h, c) not in copies:
                copies[(h, c)] = new.take()[0]
            prefix.append(copies[(h, c)])
        out.append(replace(r, hash_ids=tuple(prefix) + r.hash_ids[s:]))
    return out


def synthesize(rows: Sequence[TraceRow], synthesis: Synthesis,
               block_tokens: int = DEFAULT_BLOCK_TOKENS) -> list[TraceRow]:
    """Apply ``synthesis`` to ``rows``: :func:`speed_up`, :func:`scale_prefixes`, :func:`scale_prompts`,
    then :func:`replicate_roots` (each skipped at its default). Returns new rows (the input is not changed;
    line numbers stay those of the file). ``ValueError`` from :meth:`Synthesis.validate` or a transform."""
    synthesis.validate()
    out = speed_up(rows, synthesis.speedup)
    out = scale_prefixes(out, synthesis.prefix_scale, block_tokens)
    out = scale_prompts(out, synthesis.prompt_scale, block_tokens)
    return replicate_roots(out, synthesis.prefix_roots, block_tokens)


def rows_to_jsonl(rows: Iterable[TraceRow]) -> str:
    """``rows`` as a FAST'25 JSONL trace (one object per line: timestamp, input_length, output_length,
    hash_ids), which :func:`workload.trace.read_trace` reads back to the same rows (line numbers aside)."""
    return "".join(json.dumps({"timestamp": r.timestamp_ms, "input_length": r.input_length,
                               "output_length": r.output_length, "hash_ids": list(r.hash_ids)}) + "\n"
                   for r in rows)
