"""Why each page missed: one :class:`MissReason` per full page that was not a hit.

Every full (keyed) page of a request that was not reloaded gets exactly one reason; partial tail pages are
never keyed, stay PARTIAL and are not misses. The rule, for a missed page with key ``k`` (first match wins):

1. **in flight** — another request computed ``k`` while this one ran: their store calls overlapped in time
   (a request runs from the start of its reload to the end of its publish: its result's ``t_start`` and
   ``t_end``; a request queued behind others has not begun). That one was submitted earlier, or, for a page
   this request found present when it published (PRESENT), either (that one stored it first). A request whose
   result has not come yet is taken to compute the keys it has, and to have run at the same time when it may
   have: each decode worker starts its requests in submission order, at most ``concurrency`` at a time, so
   one submitted to the same decode worker ran meanwhile only at a concurrency above 1, and one of another
   decode worker only if it was submitted before this one ended and is among that worker's first
   ``concurrency`` unfinished ones. Only with concurrency > 1 or several decode workers.
2. **after a break** — the prefill worker's put-if-absent found ``k`` in the store already (PRESENT) and
   (rule 1) no request running at the same time stored it: the page was there, but an earlier page of the same request
   missed, and the connector reloads only the leading run of hits.
3. **evicted** — ``k`` was in the store earlier in this run (a request of the run reloaded or published it,
   or a probe found it) and the store did not give it now (absent, or its read failed or did not verify):
   a capacity miss, a larger store would have hit. On a store with a disk tier a page DRAM evicted is offloaded
   and reloads from disk (HIT_DISK, a hit), so *evicted* means it left both tiers.
4. **never stored** — an earlier request of this run computed ``k`` but it never reached the store (its put
   failed or was refused, e.g. store full, or it was not published).
5. **first use** — no earlier request of this run had ``k``: a compulsory miss, no cache of any size hits it.

"Earlier" means finished (its publish ended) before this request began (its reload started): what a request
that ran meanwhile did is rule 1's, not history. Requests submitted ahead of their turn (the driver keeps a
few queued) are not under way until their decode worker starts them.

Because page keys are a hash chain (equal keys ⇔ equal token prefixes), the pages a request hit plus its
evicted, never-stored and after-a-break pages are exactly the leading run of its pages that some earlier
request had: on a trace replay at concurrency 1 into a fresh store, hit tokens + those misses' tokens equal
the unbounded ideal's hit tokens (``trace-stats``) to the token, and first-use misses are the ideal's misses.

:func:`classify` is the pure rule; :class:`MissTracker` keeps the run's key history it needs and classifies
each finished request (the engine owns one, reset at each run). Memory: one 64-bit fingerprint per distinct
key in an ordered dict (its state), about 140 bytes a key in CPython (measured with ``tracemalloc``), for at
most :data:`MAX_KEYS` keys (~70 MB):
beyond that the keys touched longest ago are forgotten, and a later miss of a forgotten key counts as a first
use, so the reasons are exact while a run has seen at most :data:`MAX_KEYS` distinct keys (the ~44k pages of
``synthetic``: exact; the ~1.5M of the full conversation trace at 1 page a block: approximate) and approximate
after;
:attr:`MissTracker.forgotten` counts the keys forgotten, and the summary says it. Plus the fingerprints of the
requests not finished, and of those finished while one of them may have run. The fingerprint is Python's
64-bit string hash of the key: two keys of a run share one with probability about n²/2⁶⁵ (6e-8 for 1.5M
keys), which would count one first-use page as evicted or never stored.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from enum import IntEnum

from kvtui.core.pages import HITS, PageState


class MissReason(IntEnum):
    """Why a full page missed (one byte per page in :attr:`kvtui.core.events.RequestResult.reasons`)."""

    NONE = 0  # not a miss: reloaded (a hit)
    FIRST_USE = 1
    EVICTED = 2
    NEVER_STORED = 3
    AFTER_BREAK = 4
    IN_FLIGHT = 5


#: the reasons, in the order every output lists them
REASONS: tuple[MissReason, ...] = (MissReason.FIRST_USE, MissReason.EVICTED, MissReason.NEVER_STORED,
                                   MissReason.AFTER_BREAK, MissReason.IN_FLIGHT)
#: the reason's name in JSON, CSV columns and Prometheus labels
NAMES: dict[MissReason, str] = {MissReason.FIRST_USE: "first_use", MissReason.EVICTED: "evicted",
                                MissReason.NEVER_STORED: "never_stored", MissReason.AFTER_BREAK: "after_break",
                                MissReason.IN_FLIGHT: "in_flight"}
#: the reason in words, on screen and in the summary
LABELS: dict[MissReason, str] = {MissReason.FIRST_USE: "first use", MissReason.EVICTED: "evicted",
                                 MissReason.NEVER_STORED: "never stored", MissReason.AFTER_BREAK: "after a break",
                                 MissReason.IN_FLIGHT: "in flight"}

# a key's history in the run (what :func:`classify` reads)
UNSEEN, COMPUTED, STORED = 0, 1, 2

MAX_KEYS = 500_000
"""The distinct keys a :class:`MissTracker` remembers at most (the least recently touched go first)."""


def classify(states: bytes | Sequence[int], history: Sequence[int], in_flight: Sequence[bool]) -> bytes:
    """The reason of each full page, one byte (:class:`MissReason`) per page; ``NONE`` for a hit.

    ``states``: the request's :class:`~kvtui.core.pages.PageState` per full page (its page-grid cells without
    the partial tail); ``history``: per page, what the run knew of its key before this request (``UNSEEN``,
    ``COMPUTED``: an earlier request computed it and it never reached the store, ``STORED``: it was in the
    store earlier in the run); ``in_flight``: per page, whether a request under way at the same time computed
    the key (rule 1 of the module docstring, worked out by :class:`MissTracker`). The three have one entry per
    full page (``ValueError`` otherwise)."""
    if not len(states) == len(history) == len(in_flight):
        raise ValueError(f"one state, history and in-flight flag per page: got {len(states)}, {len(history)}, "
                         f"{len(in_flight)}")
    out = bytearray(len(states))
    for i, (state, seen, flight) in enumerate(zip(states, history, in_flight)):
        if state in HITS:
            continue
        if flight:
            out[i] = MissReason.IN_FLIGHT
        elif state == PageState.PRESENT:
            out[i] = MissReason.AFTER_BREAK
        elif seen == STORED:
            out[i] = MissReason.EVICTED
        elif seen == COMPUTED:
            out[i] = MissReason.NEVER_STORED
        else:
            out[i] = MissReason.FIRST_USE
    return bytes(out)


def counts(reasons: bytes | Sequence[int]) -> dict[str, int]:
    """Pages of each reason (:data:`NAMES`, every reason present, 0 included) in ``reasons``."""
    b = bytes(reasons)
    return {NAMES[r]: b.count(r) for r in REASONS}


# what a page's state says of its key once the request finished: it was in the store (reloaded, published,
# found present, or found by the probe before a read that failed or did not verify), or it was only computed
_IN_STORE = frozenset({*HITS, PageState.PUBLISHED, PageState.PRESENT, PageState.EVICTED, PageState.MISMATCH})


class _Open:
    """A request not finished: its submission order, its decode worker (``lane``), the engine time it was
    submitted (s) and its keys' fingerprints."""

    __slots__ = ("seq", "lane", "submitted", "fps", "fp_set")

    def __init__(self, seq: int, lane: int, submitted: float, fps: list[int]) -> None:
        self.seq, self.lane, self.submitted, self.fps = seq, lane, submitted, fps
        self.fp_set: frozenset[int] | None = None  # made when another request first needs it

    def keys(self) -> frozenset[int]:
        if self.fp_set is None:
            self.fp_set = frozenset(self.fps)
        return self.fp_set


class _Done:
    """A finished request that a request not finished may have run beside: its submission order, when it ran
    (engine time, s: reload start to publish end), the keys it computed (missed) and the history it changed
    (fingerprint → the history before it)."""

    __slots__ = ("seq", "start", "end", "computed", "changed")

    def __init__(self, seq: int, start: float, end: float, computed: frozenset[int], changed: dict[int, int]) -> None:
        self.seq, self.start, self.end, self.computed, self.changed = seq, start, end, computed, changed


class MissTracker:
    """The run's key history and the requests not finished; classifies each finished request.

    :meth:`begin` when a request is submitted (its page keys, in order; its decode worker; the engine time),
    :meth:`finish` with its full pages' states and when it ran (reload start, publish end: its result's
    ``t_start`` / ``t_end``) when its result comes (returns :func:`classify`'s reasons and records what the
    request did), :meth:`forget` when it ends without a result; :meth:`reset` at a new run (with its
    concurrency per decode worker) or after the store was cleared. A request's history is the run's as it
    was when the request began to run: what requests that ran meanwhile did is theirs (rule 1), not history.
    Not thread-safe: one caller at a time. Memory: see the module docstring."""

    def __init__(self, max_keys: int | None = None) -> None:
        self.max_keys = max_keys if max_keys is not None else MAX_KEYS
        self.concurrency = 1  # requests a decode worker runs at a time (rule 1: who may have run meanwhile)
        self.forgotten = 0  # keys dropped from the history to stay within max_keys (0: the reasons are exact)
        self._told = 0  # of them, those take_forgotten has handed out
        self._seen: OrderedDict[int, int] = OrderedDict()  # fingerprint → STORED or COMPUTED, least recently
        # touched first
        self._open: dict[int, _Open] = {}  # in submission order
        self._recent: deque[_Done] = deque()  # in the order their results came

    def __len__(self) -> int:
        """Distinct keys the history holds."""
        return len(self._seen)

    def take_forgotten(self) -> int:
        """Keys forgotten since the last call (to add to a result: the summary says how approximate it is)."""
        n, self._told = self.forgotten - self._told, self.forgotten
        return n

    def reset(self, concurrency: int | None = None) -> None:
        """Forget the run's history (a new run, or the store was cleared); requests not finished stay tracked.
        ``concurrency``: the new run's requests per decode worker (None: unchanged)."""
        if concurrency is not None:
            self.concurrency = max(1, int(concurrency))
        self._seen.clear()
        self._recent.clear()
        self.forgotten = self._told = 0

    def begin(self, seq: int, keys: Sequence[str], t: float = 0.0, lane: int = 0) -> None:
        """Request ``seq`` (submission order: increasing) was submitted at engine time ``t`` (s) to decode worker
        ``lane`` with page ``keys`` (its full pages, in order). It runs later, when that worker starts it."""
        self._open[seq] = _Open(seq, lane, t, [hash(k) for k in keys])

    def forget(self, seq: int) -> None:
        """Request ``seq`` ended without a result (dropped, lost): it no longer counts as under way."""
        self._open.pop(seq, None)
        self._prune()

    def finish(self, seq: int, states: bytes | Sequence[int], t_start: float | None = None,
               t_end: float | None = None) -> bytes:
        """The reasons of request ``seq``'s full pages (``states``: at least one state per full page; the
        partial tail after them is ignored), then its pages enter the history. ``t_start`` / ``t_end``: engine
        times (s) its reload started and its publish ended; ``t_start`` None: not known on this machine's clock
        (a worker on another machine), taken from its submission (it may count requests it did not run beside
        as in flight); ``t_end`` None: ``t_start``. ``b""`` for a request :meth:`begin` did not see (or
        :meth:`forget` dropped). ``ValueError`` when ``states`` has fewer entries than the request has keys."""
        req = self._open.get(seq)
        if req is None:
            return b""
        fps, n = req.fps, len(req.fps)
        full = bytes(states[:n])
        if len(full) < n:
            raise ValueError(f"request {seq} has {n} full pages but {len(full)} page states")
        start = req.submitted if t_start is None else t_start
        end = start if t_end is None else t_end
        maybe = self._maybe_running(req, end)
        del self._open[seq]
        after = [d for d in self._recent if d.end > start]  # finished after req began: not its history
        beside = [d for d in after if d.start < end]  # of them, those that ran while it ran
        history = self._history(fps, after)
        reasons = classify(full, history, self._in_flight(req, full, beside, maybe))
        seen = self._seen
        changed: dict[int, int] = {}
        mine = []
        for fp, state in zip(fps, full):
            before = seen.get(fp, UNSEEN)
            now = STORED if state in _IN_STORE else max(before, COMPUTED)
            seen[fp] = now
            seen.move_to_end(fp)  # (the most recently touched: kept longest)
            if now != before:
                changed.setdefault(fp, before)
            if state not in HITS:
                mine.append(fp)
        while len(seen) > self.max_keys:  # the least recently touched go
            seen.popitem(last=False)
            self.forgotten += 1
        if self._open:  # requests not finished may have run beside it: keep what it did for them
            self._recent.append(_Done(seq, start, end, frozenset(mine), changed))
        self._prune()
        return reasons

    def _maybe_running(self, req: _Open, end: float) -> list[_Open]:
        """The other requests not finished that may have run while ``req`` ran (it ended at ``end``): rule 1.
        A decode worker starts its requests in submission order, at most :attr:`concurrency` at a time: of
        ``req``'s own, the earlier ones only above concurrency 1 (at 1 they ended before it began; their
        results are late) and the next ``concurrency - 1``; of another worker's, its first ``concurrency``
        ones, if submitted before ``end``."""
        c = self.concurrency
        lanes: dict[int, list[_Open]] = {}
        for other in self._open.values():
            lanes.setdefault(other.lane, []).append(other)
        out: list[_Open] = []
        for lane, reqs in lanes.items():
            if lane == req.lane:
                i = reqs.index(req)
                out += (reqs[:i] if c > 1 else []) + reqs[i + 1: i + c]
            else:
                out += [o for o in reqs[:c] if o.submitted < end]
        return out

    def _history(self, fps: list[int], after: list[_Done]) -> list[int]:
        """Per key: the run's history when the request began (the sets, less what ``after`` changed)."""
        seen = self._seen
        history = [seen.get(fp, UNSEEN) for fp in fps]
        if after:
            before: dict[int, int] = {}
            for done in after:  # (in the order they came: the first change of a key holds its earlier history)
                for fp, h in done.changed.items():
                    before.setdefault(fp, h)
            history = [before.get(fp, h) for fp, h in zip(fps, history)]
        return history

    def _in_flight(self, req: _Open, full: bytes, beside: list[_Done], maybe: list[_Open]) -> list[bool]:
        """Per page: whether a request that ran while ``req`` ran computed its key (rule 1): ``beside``,
        finished, and ``maybe``, not finished (taken to compute every key it has)."""
        flags = [False] * len(full)
        earlier: list[frozenset[int]] = []  # submitted before req: they were ahead of it
        later: list[frozenset[int]] = []  # submitted after it: only for PRESENT pages
        for other in maybe:
            (earlier if other.seq < req.seq else later).append(other.keys())
        for done in beside:
            (earlier if done.seq < req.seq else later).append(done.computed)
        if not earlier and not later:
            return flags
        for i, (fp, state) in enumerate(zip(req.fps, full)):
            if state in HITS:
                continue
            flags[i] = any(fp in keys for keys in earlier) or (
                state == PageState.PRESENT and any(fp in keys for keys in later))
        return flags

    def _prune(self) -> None:
        """Drop the finished requests that ended before every request not finished was submitted (none of
        those can have run beside them)."""
        first = min((o.submitted for o in self._open.values()), default=None)
        if first is None:
            self._recent.clear()
        elif self._recent and min(d.end for d in self._recent) <= first:
            self._recent = deque(d for d in self._recent if d.end > first)
