"""The paged-KV connector: the Python twin of the Go connector of Mooncake PR #2800.

* :meth:`PagedKVConnector.load_cached_prefix` (Go ``LoadCachedPrefix``): probe the request's page keys with
  ``batch_is_exist`` (in growing chunks, stopping at the first absent page, because every probe grants a
  read lease that blocks eviction; or all at once with ``probe_all`` when the caller publishes the rest
  right after and would probe it anyway), take the longest leading run of present pages, read it with
  ``batch_get_into`` in bounded batches, and stop at the first read that is not exactly ``page_bytes`` (a
  page can vanish between probe and read) or whose bytes do not verify (every byte, or a sample:
  :mod:`kvtui.core.verify`).
* :meth:`PagedKVConnector.store_computed_prefix` (Go ``StoreComputedPrefix``): probe the pages from a start
  page on and put only the absent ones, put-if-absent (a peer's pages are never clobbered), with
  :meth:`~kvtui.mooncake.client.StoreClient.batch_put_if_absent`, which answers ``OBJECT_ALREADY_EXISTS`` for a
  page a peer stored (or is storing) after the probe. A plain ``batch_put_from`` of an existing key returns 0
  without writing: two writers racing on a page would both count it published.

Return codes are never treated as success unless they are (``0`` for puts, ``page_bytes`` for reads) and a
missing page is never counted as present. Codes are counted by value; :func:`kvtui.core.codes.code_name` names them.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from kvtui.core.codes import (
    CONTENT_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    OBJECT_ALREADY_EXISTS,
    OBJECT_NOT_FOUND,
    SIZE_MISMATCH,
)
from kvtui.core.layout import PageLayout
from kvtui.core.pages import PageState
from kvtui.core.verify import DEFAULT_VERIFY, VERIFY_MODES
from kvtui.engine.contents import PageContent
from kvtui.engine.keys import PageKeyer
from kvtui.mooncake.client import DISK, StoreClient, StoreError

MIN_STREAM_BYTES = 8 << 20  # a concurrent read stream is worth it from about this many bytes
MAX_BATCH_BYTES = 256 << 20  # default bytes per store batch: one ends well inside a read lease (10 s by default)


class RoleError(RuntimeError):
    """A worker tried something its role forbids (e.g. a decode worker publishing)."""


ROLES = ("prefill", "decode", "mixed")


@dataclass
class ReloadResult:
    """Outcome of :meth:`PagedKVConnector.load_cached_prefix`.

    ``pages_total``: full cacheable pages of the request; ``pages_probed``/``probed_present``: pages probed
    and the leading run the probe reported present; ``pages_hit``: pages loaded and verified (the usable
    run; tokens skipped = ``pages_hit · page_tokens``); ``stop_state``: why the run ended early (EVICTED,
    FAILED, MISMATCH) or ``None``, and ``stop_code`` the code behind it (the store's, or kvtui's
    SIZE_MISMATCH / CONTENT_MISMATCH); ``codes``: return codes other than success, counted by value, the
    stop code once among them; times in ms; ``bytes_loaded`` counts only the usable run. ``rest_probe``: the
    probe's answers (1, 0 or a negative code) for the pages after the reloaded run that the probe already
    covered — empty when the run ended early for another reason than absence — so publishing them needs no
    second probe.
    """

    pages_total: int
    pages_probed: int = 0
    probed_present: int = 0
    pages_hit: int = 0
    bytes_loaded: int = 0
    verified: int = 0
    mismatches: int = 0
    stop_state: PageState | None = None
    stop_code: int | None = None
    codes: Counter = field(default_factory=Counter)
    probe_ms: float = 0.0
    read_ms: float = 0.0
    verify_ms: float = 0.0
    rest_probe: list[int] = field(default_factory=list)
    bytes_local: int = 0  # of bytes_loaded, from the reader's own segment (set by the decode worker)
    disk_pages: list[int] = field(default_factory=list)  # of the hit run, the pages read from the disk tier
    replicated_pages: list[int] = field(default_factory=list)  # of the hit run, pages held in 2+ memory replicas
    read_ms_disk: float = 0.0  # of read_ms, reading the disk tier's pages


@dataclass
class PublishResult:
    """Outcome of :meth:`PagedKVConnector.store_computed_prefix` for pages ``start_page .. pages_total-1``.

    ``states``: one :class:`PageState` per page of that range (PUBLISHED, PRESENT or FAILED);
    ``stored + already_present + failed`` is the number of pages in the range. ``stored``: pages this call
    wrote (of writers racing on a page exactly one counts it); ``already_present``: pages a peer stored — at
    probe time, repeated keys of the range, and ``found_at_put`` of them that a peer stored (or was storing)
    between the probe and the put; ``codes``: failing return codes counted by value; ``bytes_written``:
    ``stored · page_bytes``, never a peer's pages; times in ms (``put_ms``: every store call of the put).
    """

    start_page: int
    pages_total: int
    stored: int = 0
    already_present: int = 0
    failed: int = 0
    found_at_put: int = 0
    bytes_written: int = 0
    states: list[int] = field(default_factory=list)
    codes: Counter = field(default_factory=Counter)
    probe_ms: float = 0.0
    compute_ms: float = 0.0
    put_ms: float = 0.0


def _classify(todo: Sequence[str], probe: Sequence[int], known: bool, states: list[int], codes: Counter) -> list[int]:
    """Sort the pages of a publish by their probe answers (1 present, 0 absent, negative: failed): set
    ``states[i]`` to PRESENT for a present page and a key repeated in the batch (the put stores its first
    copy), count a failed probe's code in ``codes`` except the first page's when the answers were ``known``
    from the reload (whose stop code counted it already), and return the indexes of the absent pages, to put."""
    seen: set[str] = set()
    absent: list[int] = []
    for i, (key, r) in enumerate(zip(todo, probe)):
        if r == 1 or key in seen:
            states[i] = int(PageState.PRESENT)
        elif r == 0:
            absent.append(i)
        elif i > 0 or not known:  # probe failed: do not guess, count it (the reload counted known[0])
            codes[int(r)] += 1
        seen.add(key)
    return absent


class PagedKVConnector:
    """Moves one model's KV pages between a worker and the store.

    ``store``: a set-up :class:`~kvtui.mooncake.client.StoreClient`; ``layout``: page shape; ``keyer``: page keys
    (its ``page_tokens`` must equal the layout's); ``role``: ``prefill``, ``decode`` (may not publish) or
    ``mixed``. ``max_batch_bytes`` bounds one store batch (so a batch finishes well inside the read lease);
    ``read_streams`` splits a reload of at least ``MIN_STREAM_BYTES`` per stream across that many concurrent
    ``batch_get_into`` calls (smaller reloads are one call: a thread hand-off costs more than it saves).
    ``first_probe_pages``: size of the first probe chunk; chunks then double. ``verify``: how loaded pages are
    checked, ``full`` (every byte) or ``sampled`` (:mod:`kvtui.core.verify`), the sample drawn from a random
    generator seeded with ``sample_seed``.
    """

    def __init__(self, store: StoreClient, layout: PageLayout, keyer: PageKeyer, role: str = "mixed", *,
                 max_batch_bytes: int = MAX_BATCH_BYTES, read_streams: int = 1, first_probe_pages: int = 32,
                 verify: str = DEFAULT_VERIFY, sample_seed: int = 0):
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        if keyer.page_tokens != layout.page_tokens:
            raise ValueError("key page size and layout page size differ")
        self.store, self.layout, self.keyer, self.role = store, layout, keyer, role
        self.page_bytes = layout.page_bytes
        self.max_batch_bytes = max_batch_bytes
        self.batch_pages = max(1, max_batch_bytes // self.page_bytes)
        config = getattr(store, "config", None)  # (test doubles of the store may have none: one tier)
        self.tiered = bool(config is not None and config.tiers)  # the store has a disk tier: reloads say which
        self.disk_read_bytes = int(config.disk_read_bytes) if config is not None else 0
        self.read_streams = max(1, int(read_streams))
        self.first_probe_pages = max(1, int(first_probe_pages))
        self.verify = DEFAULT_VERIFY
        self.sample_seed = int(sample_seed)
        self._rng = np.random.default_rng(self.sample_seed)
        self.set_verify(verify)
        self.content = PageContent(self.page_bytes)
        self._buf = np.empty(0, dtype=np.uint8)
        self._pool = ThreadPoolExecutor(self.read_streams) if self.read_streams > 1 else None

    # ---- buffers -------------------------------------------------------------------------------------
    def buffer(self, pages: int) -> np.ndarray:
        """A reusable page buffer of shape ``(pages, page_bytes)`` (uint8); grows, never shrinks."""
        need = pages * self.page_bytes
        if self._buf.size < need:  # (a dummy client's buffers are shared memory of its real client)
            self._buf = self.store.new_buffer(max(need, 2 * self._buf.size))
            self._buf[::4096] = 0  # touch pages once so first use is not first-touch
        return self._buf[:need].reshape(pages, self.page_bytes) if pages else self._buf[:0].reshape(0, self.page_bytes)

    def keys_for(self, tokens: Sequence[int] | np.ndarray, cacheable_tokens: int | None = None) -> list[str]:
        """Page keys of the cacheable full pages of ``tokens`` (all full pages when ``cacheable_tokens`` is None)."""
        toks = tokens if cacheable_tokens is None else tokens[: int(cacheable_tokens)]
        return self.keyer.keys(toks)

    # ---- probe ---------------------------------------------------------------------------------------
    def probe_leading_run(self, keys: Sequence[str], codes: Counter, first_chunk: int | None = None
                          ) -> tuple[int, int, list[int]]:
        """``(present_run, pages_probed, tail)``: leading run of present keys, probing in doubling chunks
        from ``first_chunk`` pages (default ``first_probe_pages``); ``tail`` holds the answers of the last
        chunk for keys ``present_run .. pages_probed-1``.

        A negative probe code is counted in ``codes`` and ends the run (never taken as present).
        """
        run = probed = 0
        chunk = max(1, first_chunk or self.first_probe_pages)
        while probed < len(keys):
            part = keys[probed : probed + chunk]
            res = [int(r) for r in self.store.batch_is_exist(part)]
            start = probed
            probed += len(part)
            for r in res:
                if r == 1:
                    run += 1
                    continue
                if r != 0:
                    codes[r] += 1
                return run, probed, res[run - start :]
            chunk *= 2
        return run, probed, []

    # ---- reload --------------------------------------------------------------------------------------
    def _read(self, keys: Sequence[str], buf: np.ndarray, rows: Sequence[int] | None = None,
              batch_pages: int | None = None) -> list[int]:
        """Read ``keys`` into rows of ``buf`` (key ``j`` into row ``rows[j]``, default row ``j``) in batches of
        at most ``batch_pages`` (default :attr:`batch_pages`), over ``read_streams`` concurrent calls; the codes
        in the order of ``keys``."""
        n = len(keys)
        rows = range(n) if rows is None else rows
        step = batch_pages or self.batch_pages
        streams = min(self.read_streams, (n * self.page_bytes) // MIN_STREAM_BYTES)
        if self._pool is not None and streams > 1:
            step = min(step, -(-n // streams))
        spans = [(i, min(n, i + step)) for i in range(0, n, step)]
        pb = self.page_bytes
        base = buf.ctypes.data  # rows are contiguous: row i starts at base + i·page_bytes

        def one(span):
            a, b = span
            return self.store.batch_get_into(list(keys[a:b]), [base + rows[i] * pb for i in range(a, b)],
                                             [pb] * (b - a))

        if self._pool is not None and len(spans) > 1:
            parts = list(self._pool.map(one, spans))
        else:
            parts = [one(s) for s in spans]
        return [r for part in parts for r in part]

    def load_cached_prefix(self, tokens: Sequence[int] | np.ndarray, cacheable_tokens: int | None = None,
                           keys: Sequence[str] | None = None,
                           probe_all: bool = False) -> tuple[ReloadResult, np.ndarray]:
        """Reload the longest cached leading run of the request's pages.

        Returns the result and a ``(pages_hit, page_bytes)`` uint8 view of the loaded, verified pages (valid
        until the next call). Allowed for every role. ``probe_all``: probe every page in one call instead of
        chunks that stop at the first absent page — for a caller that publishes the rest right after (the
        publish probe would lease the same pages), so :attr:`ReloadResult.rest_probe` covers all of them.
        """
        keys = list(keys) if keys is not None else self.keys_for(tokens, cacheable_tokens)
        res = ReloadResult(pages_total=len(keys))
        t0 = time.perf_counter()
        run, res.pages_probed, tail = self.probe_leading_run(keys, res.codes, len(keys) if probe_all else None)
        res.probed_present = run
        t1 = time.perf_counter()
        res.probe_ms = (t1 - t0) * 1e3
        try:
            buf = self.buffer(run)
        except StoreError:  # the dummy client's real client refused memory: it is gone, the store is broken
            res.codes[INTERNAL_ERROR] += run
            return res, self._buf[:0].reshape(0, self.page_bytes)
        if run == 0:
            res.rest_probe = tail
            return res, buf
        rcs = self._read_tiers(keys[:run], buf, res) if self.tiered else self._read(keys[:run], buf)
        t2 = time.perf_counter()
        res.read_ms = (t2 - t1) * 1e3
        good = 0
        for rc in rcs:
            if rc == self.page_bytes:
                good += 1
                continue
            if rc < 0:
                res.codes[rc] += 1  # the store's code, as it returned it
            # a size other than ours (rc >= 0), or an object larger than our page buffer (INVALID_PARAMS): a
            # writer with another layout under this model name
            if rc >= 0 or rc == INVALID_PARAMS:
                res.stop_state, res.stop_code = PageState.MISMATCH, SIZE_MISMATCH
                res.mismatches += 1
            else:
                res.stop_state = PageState.EVICTED if rc == OBJECT_NOT_FOUND else PageState.FAILED
                res.stop_code = rc
            break
        if good:
            ok = (self.content.leading_matches(keys[:good], buf) if self.verify == "full"
                  else self.content.leading_sampled(keys[:good], buf, self._rng))
            res.verified = ok
            if ok < good:
                res.mismatches += 1
                res.stop_state, res.stop_code = PageState.MISMATCH, CONTENT_MISMATCH
                good = ok
        if res.stop_code in (SIZE_MISMATCH, CONTENT_MISMATCH):  # kvtui's own: the store said success or a size
            res.codes[res.stop_code] += 1
        res.verify_ms = (time.perf_counter() - t2) * 1e3
        if good == run:  # the run ended where the probe said absent: its answers for what follows still hold
            res.rest_probe = tail
        res.pages_hit = good
        res.bytes_loaded = good * self.page_bytes
        if good < run:  # (only the usable run's pages count)
            res.disk_pages = [i for i in res.disk_pages if i < good]
            res.replicated_pages = [i for i in res.replicated_pages if i < good]
        return res, buf[:good]

    def _read_tiers(self, keys: Sequence[str], buf: np.ndarray, res: ReloadResult) -> list[int]:
        """Read ``keys`` (a present run) into rows of ``buf``, those the store holds in memory first, then those
        only its disk tier holds (``StoreClient.replica_tiers``, asked just before: a page that moves between the
        two meanwhile is read where it is and counted where it was), in batches no larger than an owner's disk
        staging buffer; records the disk pages and their read time in ``res``; the codes in page order."""
        tiers = self.store.replica_tiers(keys)
        res.replicated_pages = [i for i, (_tier, copies) in enumerate(tiers) if copies > 1]
        disk = [i for i, (t, _copies) in enumerate(tiers) if t == DISK]
        if not disk:
            return self._read(keys, buf)
        memory = [i for i, (t, _copies) in enumerate(tiers) if t != DISK]
        rcs = [0] * len(keys)
        for i, rc in zip(memory, self._read([keys[i] for i in memory], buf, memory) if memory else ()):
            rcs[i] = rc
        limit = self.disk_read_bytes
        t = time.perf_counter()
        step = max(1, min(self.batch_pages, limit // self.page_bytes)) if limit else None
        for i, rc in zip(disk, self._read([keys[i] for i in disk], buf, disk, step)):
            rcs[i] = rc
        res.read_ms_disk = (time.perf_counter() - t) * 1e3
        res.disk_pages = disk
        return rcs

    def reload_and_rest(self, tokens, cacheable_tokens: int | None = None,
                        keys: Sequence[str] | None = None, probe_all: bool = False) -> tuple[ReloadResult, list[str]]:
        """:meth:`load_cached_prefix`, plus the keys of the pages after the reloaded run (what prefill must
        compute and publish, with ``res.rest_probe`` as their known probe answers), so the request's hash
        chain is computed once. ``keys``: the request's page keys when already computed."""
        keys = list(keys) if keys is not None else self.keys_for(tokens, cacheable_tokens)
        res, _pages = self.load_cached_prefix(tokens, keys=keys, probe_all=probe_all)
        return res, keys[res.pages_hit:]

    # ---- publish -------------------------------------------------------------------------------------
    def store_computed_prefix(self, tokens: Sequence[int] | np.ndarray, start_page: int = 0,
                              cacheable_tokens: int | None = None,
                              keys: Sequence[str] | None = None, known: Sequence[int] = (),
                              segment: str = "") -> PublishResult:
        """Compute and publish the absent pages from ``start_page`` on (put-if-absent); ``segment``: into
        that segment when it has room (``StoreClient.batch_put_if_absent``), "" where Mooncake picks.

        Raises :class:`RoleError` for a decode worker. Pages present at probe time, a key repeated within
        the batch, and a page the put finds stored (or being stored) by a peer count as already present;
        a failed put counts as failed with its code. ``known``: probe answers already obtained for the first
        pages of the range (the decode worker's :attr:`ReloadResult.rest_probe`); only the pages after them
        are probed. A known negative answer makes its page FAILED; its code is counted here except for the
        first page (where the reload's run ended: the reload counted it).
        """
        if self.role == "decode":
            raise RoleError("a decode worker may not publish KV pages (role=decode); use prefill or mixed")
        keys = list(keys) if keys is not None else self.keys_for(tokens, cacheable_tokens)
        todo = keys[start_page:]
        res = PublishResult(start_page=start_page, pages_total=len(keys))
        if not todo:
            return res
        t0 = time.perf_counter()
        states = [int(PageState.FAILED)] * len(todo)
        known = [int(r) for r in known[: len(todo)]]
        probe: list[int] = list(known)
        for i in range(len(known), len(todo), self.batch_pages * 4):
            probe.extend(int(r) for r in self.store.batch_is_exist(todo[i : i + self.batch_pages * 4]))
        t1 = time.perf_counter()
        res.probe_ms = (t1 - t0) * 1e3
        absent = _classify(todo, probe, bool(known), states, res.codes)
        compute_s = put_s = 0.0
        for j in range(0, len(absent), self.batch_pages):
            idx = absent[j : j + self.batch_pages]
            t2 = time.perf_counter()
            try:
                buf = self.buffer(len(idx))
            except StoreError:  # (as in load_cached_prefix: the store is broken; these pages stay FAILED)
                res.codes[INTERNAL_ERROR] += len(absent) - j
                break
            self.content.fill_many([todo[i] for i in idx], buf)
            t3 = time.perf_counter()
            base, pb = buf.ctypes.data, self.page_bytes
            rcs = self.store.batch_put_if_absent([todo[i] for i in idx], [base + r * pb for r in range(len(idx))],
                                                 [pb] * len(idx), **({"segment": segment} if segment else {}))
            put_s += time.perf_counter() - t3
            compute_s += t3 - t2
            for i, rc in zip(idx, rcs):
                if rc == 0:
                    states[i] = int(PageState.PUBLISHED)
                elif rc == OBJECT_ALREADY_EXISTS:  # a peer stored it after the probe, or is storing it now
                    states[i] = int(PageState.PRESENT)
                    res.found_at_put += 1
                else:
                    res.codes[int(rc)] += 1
        res.compute_ms, res.put_ms = compute_s * 1e3, put_s * 1e3
        return self._tally(res, states)

    def _tally(self, res: PublishResult, states: list[int]) -> PublishResult:
        res.states = states
        res.stored = states.count(PageState.PUBLISHED)
        res.already_present = states.count(PageState.PRESENT)
        res.failed = states.count(PageState.FAILED)
        res.bytes_written = res.stored * self.page_bytes
        return res

    def settle_known(self, keys: Sequence[str], known: Sequence[int]) -> PublishResult | None:
        """What :meth:`store_computed_prefix` of ``keys`` with ``known`` probe answers returns when it needs no
        store call (every page answered, none absent: each present or failed), computed without one, for any
        role (nothing is published); None when some page would have to be probed or put. Lets a decode
        worker report such a request itself (:mod:`kvtui.engine.worker`)."""
        if len(known) < len(keys) or 0 in known:
            return None
        res = PublishResult(start_page=0, pages_total=len(keys))
        if not keys:
            return res
        states = [int(PageState.FAILED)] * len(keys)
        _classify(keys, [int(r) for r in known[: len(keys)]], True, states, res.codes)
        return self._tally(res, states)

    def with_layout(self, layout: PageLayout) -> "PagedKVConnector":
        """A connector like this one (same store, role, model, key scheme, read streams, batch bytes) for
        another page ``layout``; its keys follow ``layout.page_tokens``. Close this one afterwards."""
        return PagedKVConnector(self.store, layout, dataclasses.replace(self.keyer, page_tokens=layout.page_tokens),
                                self.role, max_batch_bytes=self.max_batch_bytes, read_streams=self.read_streams,
                                first_probe_pages=self.first_probe_pages, verify=self.verify,
                                sample_seed=self.sample_seed)

    def set_verify(self, mode: str) -> None:
        """Check later reloads' pages ``full`` or ``sampled`` (:data:`~kvtui.core.verify.VERIFY_MODES`);
        ``ValueError`` for another mode."""
        if mode not in VERIFY_MODES:
            raise ValueError(f"verify must be one of {', '.join(VERIFY_MODES)}, got {mode!r}")
        self.verify = mode

    def set_read_streams(self, n: int) -> None:
        """Split later reloads across ``n`` concurrent ``batch_get_into`` calls (1 = a single call)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self.read_streams = max(1, int(n))
        self._pool = ThreadPoolExecutor(self.read_streams) if self.read_streams > 1 else None

    def close(self) -> None:
        """Stop the read threads (the store client is closed by its owner)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
