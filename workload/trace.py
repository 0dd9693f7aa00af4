"""Read and replay Mooncake FAST'25 request traces (``kvcache-ai/Mooncake FAST25-release/traces``).

Format: JSON Lines, one request per line::

    {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}

- ``timestamp``: arrival time in milliseconds (relative; need not start at 0; ties are common);
- ``input_length`` / ``output_length``: prompt / generated length in tokens;
- ``hash_ids``: remapped prefix-block hashes, ``block_tokens`` (512) tokens per block; an id stands for a
  block *and every block before it*, so ``len(hash_ids) == ceil(input_length / block_tokens)`` and the
  last id usually covers a partial block.

The trace carries no token ids, so :func:`block_tokens_ids` makes up the tokens of a block from its id:
equal ids give equal tokens, distinct ids never give equal full blocks. :class:`TraceWorkload` turns rows
into :class:`~workload.request.Request` objects whose prompts share exactly the prefixes the trace says.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence

import numpy as np

from workload.request import _MASK64, Request, _key, _mix_int, _splitmix64
from workload.rows import DEFAULT_BLOCK_TOKENS, LateRows, TraceProblem, TraceRow, late_rows
from workload.stats import AiperfPrefixCache, IdealPrefixCache
from workload.text import plural

__all__ = [
    "TraceRow",
    "TraceProblem",
    "TraceError",
    "read_trace",
    "block_tokens_ids",
    "TraceWorkload",
    "check_page_divides_block",
    "skipped_rows_text",
    "skipped_count",
    "late_rows",
    "DEFAULT_BLOCK_TOKENS",
    "replay_block_text",
]

_FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
_TRACE_TAG = 0x7472616365  # "trace": key domain of block filler tokens
_LIMB_BITS = 31
_LIMB_MASK = (1 << _LIMB_BITS) - 1


def skipped_count(problems: Sequence[TraceProblem]) -> int:
    """How many of ``problems`` are skipped rows (warnings about rows that are kept do not count)."""
    return sum(1 for p in problems if p.skipped)


def skipped_rows_text(problems: Sequence[TraceProblem]) -> str:
    """What kvtui says about the problems :func:`read_trace` found, e.g. ``skipped 2 bad trace rows (first:
    line 7: bad JSON: ...)`` and/or ``1 trace row out of order, replayed at the earlier row's time (first:
    line 12: timestamp 900 ms is below the previous row's 1000 ms)``, joined by ``; ``; ``""`` when there are
    none. Every command that replays a trace says it this way."""
    skipped = [p for p in problems if p.skipped]
    late = [p for p in problems if not p.skipped]
    parts = []
    if skipped:
        first = skipped[0]
        parts.append(f"skipped {plural(len(skipped), 'bad trace row')} (first: line {first.line_no}: {first.reason})")
    if late:
        first = late[0]
        parts.append(f"{plural(len(late), 'trace row')} out of order, replayed at the earlier "
                     f"row's time (first: line {first.line_no}: {first.reason})")
    return "; ".join(parts)


class TraceError(ValueError):
    """A trace file that cannot be used; one line, starting with ``FILE:LINE: `` when about a row."""


def _blocks_needed(input_length: int, block_tokens: int) -> int:
    return -(-input_length // block_tokens)


def _check_row(obj: object) -> str | TraceRow:
    """Return the reason a parsed JSON value is not a valid row, or the row's fields (line_no 0); the count of
    its hash ids against its length is :func:`_count_problem`'s."""
    if not isinstance(obj, dict):
        return f"not a JSON object (got {type(obj).__name__})"
    for field in _FIELDS:
        if field not in obj:
            return f"missing field {field!r}"
    vals = {}
    for field in ("timestamp", "input_length", "output_length"):
        v = obj[field]
        if isinstance(v, bool) or not isinstance(v, int):
            return f"{field!r} must be an integer, got {type(v).__name__} {v!r}"
        if v < 0:
            return f"{field!r} must be >= 0, got {v}"
        vals[field] = v
    if vals["input_length"] == 0:
        return "'input_length' is 0 (a prompt has at least one token)"
    ids = obj["hash_ids"]
    if not isinstance(ids, list):
        return f"'hash_ids' must be a list of integers, got {type(ids).__name__}"
    for i, h in enumerate(ids):
        if isinstance(h, bool) or not isinstance(h, int):
            return f"hash_ids[{i}] must be an integer, got {type(h).__name__} {h!r}"
        if h < 0:
            return f"hash_ids[{i}] must be >= 0, got {h}"
    return TraceRow(0, vals["timestamp"], vals["input_length"], vals["output_length"], tuple(ids))


def _count_problem(row: TraceRow, block_tokens: int) -> str | None:
    """Why ``row``'s hash ids do not cover its ``input_length`` in blocks of ``block_tokens``, else None."""
    need = _blocks_needed(row.input_length, block_tokens)
    if len(row.hash_ids) == need:
        return None
    return f"{len(row.hash_ids)} hash_ids but input_length {row.input_length} needs ceil({row.input_length}/" \
           f"{block_tokens}) = {need}"


class _BlockSizes:
    """The block sizes every row seen so far fits: row ``(n tokens, k ids)`` fits ``B`` when ``ceil(n / B) ==
    k``, i.e. ``ceil(n / k) <= B <= floor((n - 1) / (k - 1))`` (``B >= n`` for one id), and the rows' ranges
    intersect."""

    def __init__(self) -> None:
        self.low, self.high = 1, math.inf

    def add(self, row: TraceRow) -> None:
        n, k = row.input_length, len(row.hash_ids)
        if k == 0:
            self.low, self.high = 1, 0  # no block size gives a prompt no block
            return
        self.low = max(self.low, -(-n // k))
        if k > 1:
            self.high = min(self.high, (n - 1) // (k - 1))

    def one(self) -> int | None:
        """The one block size the rows agree on: the only one they fit, or the only power of two among those
        they fit; None when they fit none, or several (e.g. every row a single block)."""
        if math.isinf(self.high) or self.low > self.high:
            return None
        if self.low == self.high:
            return int(self.low)
        powers = [1 << b for b in range(int(self.high).bit_length()) if self.low <= 1 << b <= self.high]
        return powers[0] if len(powers) == 1 else None


def replay_block_text(block_tokens: int, flag: str = "--trace-block-tokens") -> str:
    """How to replay a trace of ``block_tokens``-token blocks: kvtui's ``flag`` and aiperf's flags (``aiperf
    profile --isl-block-size``, ``aiperf analyze-trace --block-size``), e.g. ``--trace-block-tokens 8 (aiperf:
    --isl-block-size 8, analyze-trace --block-size 8)``."""
    b = block_tokens
    return f"{flag} {b} (aiperf: --isl-block-size {b}, analyze-trace --block-size {b})"


def read_trace(
    path: str | os.PathLike[str], *, block_tokens: int = DEFAULT_BLOCK_TOKENS, strict: bool = False,
    block_flag: str = "--trace-block-tokens",
) -> tuple[list[TraceRow], list[TraceProblem]]:
    """Parse a Mooncake FAST'25 JSONL trace file.

    Args:
        path: the ``.jsonl`` file.
        block_tokens: tokens per hash id (512 in the FAST'25 release); used to check
            ``len(hash_ids) == ceil(input_length / block_tokens)``.
        strict: raise :class:`TraceError` at the first bad row instead of skipping it, and at the first row
            whose timestamp is below an earlier row's instead of warning about it.
        block_flag: the flag that sets ``block_tokens`` in the command that reads the file, named in the
            reason of a row whose hash ids do not match when every row fits one other block size.

    Returns:
        ``(rows, problems)``: the valid rows in file order and, in line order, one :class:`TraceProblem` per
        skipped bad row and one warning (``skipped=False``, the row is kept) per row whose timestamp is
        below an earlier valid row's (see :func:`late_rows`). Blank lines and CRLF line ends are fine. A bad
        row is: a line that is not UTF-8 or has a NUL byte, bad JSON (including a truncated last line), not an
        object, a missing field, a wrong type (``bool`` is not an int, floats are not ints), a negative length /
        timestamp / id, ``input_length`` 0, or a ``hash_ids`` count that does not match (the first such row's
        reason then names the one block size every row fits, when there is one, and how to replay the file
        with it: :func:`replay_block_text`). Ids keep their exact value (no float round trip), even above ``2**64``.

    Raises:
        TraceError: missing or unreadable file, a directory, a binary file (no valid row, and lines that are not
            UTF-8 or hold NUL bytes), a file with no rows, a file where every row is bad, or (``strict``) the
            first bad or out-of-order row as ``FILE:LINE: reason``.
        ValueError: ``block_tokens < 1``.
    """
    if isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or block_tokens < 1:
        raise ValueError(f"block size must be an integer >= 1 tokens, got {block_tokens!r}")
    name = os.fspath(path)
    if os.path.isdir(name):
        raise TraceError(f"{name}: is a folder, not a trace file")
    try:
        with open(name, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise TraceError(f"{name}: no such trace file") from None
    except OSError as exc:
        raise TraceError(f"{name}: cannot read trace file ({exc.strerror or exc})") from None
    if data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
        data = data[3:]

    rows: list[TraceRow] = []
    problems: list[TraceProblem] = []
    late_check = LateRows()
    sizes = _BlockSizes()
    miscounted: list[int] = []  # indexes into problems of rows whose hash ids do not match block_tokens
    nul_lines = 0
    first_not_utf8: int | None = None  # byte offset in the file of the first byte that is not UTF-8
    offset = 0
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        start, offset = offset, offset + len(raw) + 1
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:  # a bad row like any other; only a file with no valid row is binary
            if first_not_utf8 is None:
                first_not_utf8 = start + exc.start
            problems.append(TraceProblem(line_no, f"not UTF-8 at byte {exc.start + 1} (binary data, not JSON)"))
            continue
        if not line:
            continue
        nul = line.find("\x00")
        if nul >= 0:
            nul_lines += 1
            problems.append(TraceProblem(line_no, f"NUL byte at column {nul + 1} (binary data, not JSON)"))
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            result: str | TraceRow = f"bad JSON: {exc.msg} (column {exc.colno})"
        except ValueError as exc:  # e.g. an integer with more digits than Python's int-parsing limit
            result = f"bad JSON: {exc}"
        except RecursionError:
            result = "bad JSON: nested too deeply"
        else:
            result = _check_row(obj)
        if isinstance(result, str):
            problems.append(TraceProblem(line_no, result))
            continue
        row = TraceRow(line_no, result.timestamp_ms, result.input_length, result.output_length, result.hash_ids)
        sizes.add(row)
        miscount = _count_problem(row, block_tokens)
        if miscount is not None:
            miscounted.append(len(problems))
            problems.append(TraceProblem(line_no, miscount))
            continue
        late = late_check.reason(row)
        if late is not None:
            problems.append(TraceProblem(line_no, late, skipped=False))
        rows.append(row)
    fits = sizes.one() if miscounted else None
    hint = ""
    if fits is not None and fits != block_tokens:  # (a saved trace read with the FAST'25 block size, say): said
        hint = f"; every row fits blocks of {fits} tokens: replay it with {replay_block_text(fits, block_flag)}"
        problems[miscounted[0]].reason += hint  # once, with the first row it explains
    if strict and problems:
        first = problems[0]
        raise TraceError(f"{name}:{first.line_no}: {first.reason}")
    if not rows:
        if nul_lines:
            raise TraceError(f"{name}: binary file (NUL bytes), not a JSONL trace")
        if first_not_utf8 is not None:
            raise TraceError(f"{name}: binary file (not UTF-8 at byte {first_not_utf8}), not a JSONL trace")
        if not problems:
            raise TraceError(f"{name}: empty trace (no rows)")
        first = problems[0]  # all skipped: a warning needs a kept row
        said = not hint or first is problems[miscounted[0]]
        raise TraceError(
            f"{name}: no valid rows ({len(problems)} bad; first at line {first.line_no}: {first.reason})"
            + ("" if said else hint)
        )
    return rows, problems


# --- tokens of a block ----------------------------------------------------------------------------------


def _limbs(block_id: int) -> list[int]:
    limbs = [block_id & _LIMB_MASK]
    block_id >>= _LIMB_BITS
    while block_id:
        limbs.append(block_id & _LIMB_MASK)
        block_id >>= _LIMB_BITS
    return limbs


def _blocks_matrix(ids: Sequence[int], block_tokens: int) -> np.ndarray:
    """Full tokens of each block: shape ``(len(ids), block_tokens)`` uint32, values ``< 2**31``.

    Layout of a block: token 0 = number of 31-bit limbs ``L`` of the id, tokens ``1..L`` = the limbs
    (least significant first) -- an exact, injective encoding of the id -- then pseudo-random filler
    derived from the id by SplitMix64.
    """
    k = len(ids)
    if any(i < 0 for i in ids):
        raise ValueError("block ids must be >= 0")
    # filler key per id: SplitMix64(id ^ tag) for ids < 2**64 (vectorised), a fold of all limbs above
    if all(i <= _MASK64 for i in ids):
        keys = _splitmix64(np.array(ids, dtype=np.uint64).reshape(k) ^ np.uint64(_TRACE_TAG))
    else:
        keys = np.array(
            [_mix_int(i ^ _TRACE_TAG) if i <= _MASK64 else _key(_TRACE_TAG, i) for i in ids], dtype=np.uint64
        ).reshape(k)
    pos = np.arange(block_tokens, dtype=np.uint64)
    out = (_splitmix64(pos[None, :] ^ keys[:, None]) >> np.uint64(64 - _LIMB_BITS)).astype(np.uint32)
    if k and max(ids) <= _LIMB_MASK:
        if block_tokens < 2:
            raise ValueError(f"block id {ids[0]} needs 2 tokens to encode but a block has only {block_tokens}")
        out[:, 0] = 1
        out[:, 1] = np.array(ids, dtype=np.uint32)
    else:
        for row, i in enumerate(ids):
            limbs = _limbs(i)
            if 1 + len(limbs) > block_tokens:
                raise ValueError(
                    f"block id {i} needs {1 + len(limbs)} tokens to encode but a block has only {block_tokens}"
                )
            out[row, 0] = len(limbs)
            out[row, 1 : 1 + len(limbs)] = limbs
    return out


def block_tokens_ids(block_id: int, n: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> np.ndarray:
    """The first ``n`` tokens of the block with id ``block_id``: shape ``(n,)`` uint32, values ``< 2**31``.

    Deterministic per id; distinct ids never give equal full blocks (the id is encoded exactly in the
    first tokens: a limb count, then its 31-bit limbs), the rest is pseudo-random filler from the id.
    Works for ids of any size >= 0; raises ``ValueError`` if the id needs more tokens than
    ``block_tokens`` to encode, or if ``n`` is not in ``[0, block_tokens]``.
    """
    if isinstance(block_id, bool) or not isinstance(block_id, int) or block_id < 0:
        raise ValueError(f"block id must be an integer >= 0, got {block_id!r}")
    if isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or block_tokens < 1:
        raise ValueError(f"block size must be an integer >= 1 tokens, got {block_tokens!r}")
    if not 0 <= n <= block_tokens:
        raise ValueError(f"n must be between 0 and the block size {block_tokens} tokens, got {n}")
    return _blocks_matrix([block_id], block_tokens)[0, :n].copy()


def row_tokens(hash_ids: Sequence[int], input_length: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> np.ndarray:
    """A row's prompt: the blocks of ``hash_ids`` concatenated, cut to ``input_length`` tokens.

    Shape ``(input_length,)`` uint32. Equivalent to concatenating :func:`block_tokens_ids` per id, but
    vectorised over the row. Raises ``ValueError`` if the ids do not cover ``input_length`` exactly.
    """
    if len(hash_ids) != _blocks_needed(input_length, block_tokens):
        raise ValueError(
            f"{len(hash_ids)} hash_ids but input_length {input_length} needs "
            f"ceil({input_length}/{block_tokens}) = {_blocks_needed(input_length, block_tokens)}"
        )
    return _blocks_matrix(list(hash_ids), block_tokens).reshape(-1)[:input_length]


def check_page_divides_block(page_tokens: int, block_tokens: int = DEFAULT_BLOCK_TOKENS) -> None:
    """Raise ``ValueError`` unless KV pages of ``page_tokens`` tile a trace block of ``block_tokens``.

    Trace prefixes are only known to block granularity, so a page must never straddle two blocks.
    """
    if page_tokens < 1 or block_tokens % page_tokens:
        raise ValueError(f"page size {page_tokens} tokens does not divide the trace block size {block_tokens} tokens")


# --- replay ---------------------------------------------------------------------------------------------


class TraceWorkload:
    """Replay trace rows as :class:`~workload.request.Request` objects, one per row, in file order.

    Args:
        rows: rows from :func:`read_trace` (at least one).
        block_tokens: tokens per hash id (512 for the FAST'25 release).
        speed: time scale; ``arrival_s = (timestamp_ms - first_timestamp_ms) / 1000 / speed`` seconds
            (2.0 = twice as fast). ``None`` or ``math.inf`` = as fast as possible (closed loop,
            ``arrival_s`` None). Must be > 0. Arrival times never go backwards: a row whose timestamp
            is below an earlier row's is issued at the earlier row's arrival time (:func:`read_trace`
            names each such row).
        name: shown as ``scenario = f"trace:{name}"`` (usually the file name).

    Each request: ``tokens`` = the rows' block tokens concatenated, the last block cut so that
    ``len(tokens) == input_length``; ``cacheable_tokens = (input_length // block_tokens) * block_tokens``
    (only full blocks may be published or hit); labels ``row`` (line number), ``output_tokens``,
    ``prefix`` (the row's prefix group: its hash id at :attr:`group_depth`, the first block position where
    the trace's rows differ, so rows of one conversation or document share it; absent for a shorter row) and
    ``ideal_hit_tokens`` (the row's hit with an unbounded cache in file order, the rule of ``trace-stats``:
    :class:`workload.stats.IdealPrefixCache`) and ``aiperf_share`` (the row's share under aiperf's rule,
    :class:`workload.stats.AiperfPrefixCache`, as ``repr`` of the float; absent for a row with no hash ids).

    The speed can change while a replay runs (:meth:`set_speed`): the rows after the change keep the trace's
    spacing from the last row yielded, scaled by the new speed. :meth:`progress` says where the replay is.
    ``tokens=False`` leaves the token ids out (an empty array: for a simulation without a store).
    """

    def __init__(
        self,
        rows: Sequence[TraceRow],
        *,
        block_tokens: int = DEFAULT_BLOCK_TOKENS,
        speed: float | None = 1.0,
        name: str = "trace",
        tokens: bool = True,
    ):
        if isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or block_tokens < 1:
            raise ValueError(f"block size must be an integer >= 1 tokens, got {block_tokens!r}")
        self._checked_speed(speed)
        if not rows:
            raise ValueError("trace has no rows to replay")
        for r in rows:
            need = _blocks_needed(r.input_length, block_tokens)
            if len(r.hash_ids) != need:
                raise ValueError(
                    f"row at line {r.line_no}: {len(r.hash_ids)} hash_ids but input_length {r.input_length} "
                    f"needs {need} blocks of {block_tokens} tokens"
                )
        self._rows = list(rows)
        self.block_tokens = block_tokens
        self.speed = self._checked_speed(speed)
        self.name = name
        self.tokens = tokens  # False: requests carry no token ids (a store-less simulation needs only the rest)
        self.group_depth = _group_depth(self._rows)
        self._length_s = (max(r.timestamp_ms for r in self._rows) - self._rows[0].timestamp_ms) / 1000.0
        self._anchor: tuple[float, float] | None = None  # (arrival s, timestamp ms) the arrivals count from
        self._last: tuple[float | None, int] = (None, self._rows[0].timestamp_ms)  # newest yielded row
        self.issued = 0  # rows yielded by the current replay

    @staticmethod
    def _checked_speed(speed: float | None) -> float | None:
        if speed is not None:
            if isinstance(speed, bool) or not isinstance(speed, (int, float)) or math.isnan(speed) or speed <= 0:
                raise ValueError(f"replay speed must be > 0 (or None for as fast as possible), got {speed!r}")
        return None if speed is None or math.isinf(speed) else float(speed)

    def set_speed(self, speed: float | None, now_s: float | None = None) -> None:
        """Replay the rows not yet yielded at ``speed`` (> 0; None or ``math.inf``: as fast as possible).
        Their arrival times keep the trace's spacing from the newest row yielded, counted from its arrival
        or, when ``now_s`` (seconds on the arrival clock: the driver's time since the replay began, pauses
        excluded) is given and later, from ``now_s``; so a replay that ran as fast as possible carries on
        from now. ``ValueError`` for a speed that is not > 0. Call it between two draws (the driver's feeder
        thread does, before the next request): the row already drawn keeps its arrival time."""
        speed = self._checked_speed(speed)
        last_arrival, last_ms = self._last
        if now_s is not None and now_s > (last_arrival or 0.0):
            ran_ms = (now_s - last_arrival) * 1000.0 * self.speed if self.speed and last_arrival is not None else 0.0
            self._anchor = (now_s, last_ms + ran_ms)  # the trace clock has moved on since the newest row
        else:
            self._anchor = (last_arrival or 0.0, last_ms)
        self.speed = speed

    @property
    def length_s(self) -> float:
        """Trace time from the first row to the latest timestamp (s)."""
        return self._length_s

    def progress(self) -> dict:
        """Where the replay is: ``issued`` rows of ``total``, ``position_s`` (trace time of the newest row
        yielded, since the first row, s), ``length_s`` (:attr:`length_s`) and ``speed`` (×, None = as fast as
        possible)."""
        return {"issued": self.issued, "total": len(self._rows),
                "position_s": (self._last[1] - self._rows[0].timestamp_ms) / 1000.0,
                "length_s": self.length_s, "speed": self.speed}

    @property
    def rows_total(self) -> int:
        """Number of rows (= requests) in the replay."""
        return len(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Request]:
        """Yield one request per row; each call starts a fresh replay."""
        first_ms = self._rows[0].timestamp_ms
        self._anchor, self._last, self.issued = (0.0, first_ms), (None, first_ms), 0
        latest_ms = first_ms
        bt = self.block_tokens
        ideal = IdealPrefixCache(bt)
        aiperf = AiperfPrefixCache()
        depth = self.group_depth
        for req_id, row in enumerate(self._rows):
            tokens = row_tokens(row.hash_ids, row.input_length, bt) if self.tokens else np.zeros(0, np.uint32)
            tokens.flags.writeable = False
            latest_ms = max(latest_ms, row.timestamp_ms)  # a late row is issued at the earlier row's time
            if self.speed is None:
                arrival: float | None = None
            else:
                base_s, base_ms = self._anchor
                arrival = max(self._last[0] or 0.0, base_s + (latest_ms - base_ms) / 1000.0 / self.speed)
            hit = ideal.add(row)
            labels = [("row", str(row.line_no)), ("output_tokens", str(row.output_length))]
            if depth is not None and len(row.hash_ids) > depth:
                labels.append(("prefix", str(row.hash_ids[depth])))
            labels.append(("ideal_hit_tokens", str(hit * bt)))
            share = aiperf.share(row)
            if share is not None:  # (repr: the float back exactly, so the live mean equals trace-stats')
                labels.append(("aiperf_share", repr(share)))
            self._last = (arrival, latest_ms)
            self.issued = req_id + 1
            yield Request(
                req_id=req_id,
                tokens=tokens,
                arrival_s=arrival,
                cacheable_tokens=(row.input_length // bt) * bt,
                scenario=f"trace:{self.name}",
                labels=tuple(labels),
            )


def _group_depth(rows: Sequence[TraceRow]) -> int | None:
    """The first block position at which the rows' hash ids differ (0 when their first blocks differ; 1 for
    the FAST'25 conversation trace, whose rows all start with one system-prompt block); None when every row
    is the same prefix."""
    depth = 0
    while True:
        ids = {r.hash_ids[depth] for r in rows if len(r.hash_ids) > depth}
        if not ids:
            return None
        if len(ids) > 1:
            return depth
        depth += 1
