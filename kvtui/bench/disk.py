"""``kvtui bench --disk``: what a reload from Mooncake's disk tier costs, against a plain read of the same bytes
from the same disk, a reload of as many pages from DRAM, and recomputing them (the TTFT estimate).

Steps, on one embedded store with a small DRAM segment and a disk tier behind it (:mod:`kvtui.mooncake.tiers`):
the prefill worker publishes a prompt, then other prompts of :data:`FLOOD_DRAMS` × the DRAM in all (each published
again while the store refuses puts: DRAM full, its offload under way), so that eviction moves the first prompt's
pages to disk; then a twin prompt (other tokens, as many pages; another while DRAM does not hold one whole).
A reload of the request sharing
the first prompt's prefix must read every page from disk (``ReloadResult.disk_pages``) and one of the twin's none:
the bench stops with one line otherwise. The prefix's pages are found in the tier's files by their contents (the
bucket backend packs objects into bucket files behind a header) and checked byte for byte.

Then ``iterations`` rounds with the page cache warm (it holds the tier's files), then as many cold: before each
disk sample the tier's files leave the page cache (``POSIX_FADV_DONTNEED``, or, where that leaves pages and this
process may, ``/proc/sys/vm/drop_caches``; ``mincore`` checks that none is left). A round takes three
samples, in turn (ABC, then CBA): a reload of the prefix through the decode worker (probe + read; verified outside
its time), a raw read of the same bytes from the tier's files (``preadv`` into a buffer, each file opened once;
checked outside its time) and a reload of the twin from DRAM. MB/s are 10^6 bytes per second; each MB/s figure is
the median of its per-sample rates.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from kvtui.bench.engines import BenchEngines, BenchInputs, Environment, environment, first_workers, say
from kvtui.bench.reuse import ReloadFigures, Stats, _stats, reload_figures
from kvtui.core.errors import KvtuiError
from kvtui.core.text import plural
from kvtui.core.units import format_bytes, median
from kvtui.engine.contents import PageContent
from kvtui.engine.protocol import BenchReload, Keys, Publish
from kvtui.metrics.summary import TtftInputs

if TYPE_CHECKING:
    from kvtui.core.layout import PageLayout
    from kvtui.engine.connector import PublishResult, ReloadResult
    from kvtui.engine.workers import WorkerHandle
    from kvtui.metrics.ttft import TtftEstimator

DRAM_PROMPTS = 3
"""The default DRAM segment holds this many prompts' pages: room for the twin, and small, so that pushing the
prefix out to disk takes little writing."""
FLOOD_DRAMS = 2
"""Bytes of other prompts published after the prompt, in DRAM segments: eviction then reaches the prompt's pages."""
DISK_DRAMS = 4
"""The disk tier's size in DRAM segments: more than everything the bench offloads, so the tier never evicts."""
LEASE_MS = 1000
"""The embedded master's read lease: a page probed lately cannot be evicted for this long."""
PUT_WAIT_S = 60.0
"""How long a prompt's puts may stay refused (DRAM full while its offload writes) before the bench stops."""
SETTLE_S, SETTLE_MAX_S = 2.0, 30.0
"""The tier's files must stay unchanged for ``SETTLE_S`` (the offload done) before timing; waited up to
``SETTLE_MAX_S``."""
DISK_WAIT_S = 20.0
"""How long the bench waits for every page of the prefix to be on disk only (evicted pages leave DRAM once
written)."""
TWIN_ATTEMPTS = 5
"""Twins published at most before the bench stops: DRAM must hold one whole (see :func:`_twin_in_dram`)."""
DROP_CACHES = "/proc/sys/vm/drop_caches"
HEAD_BYTES = 64
"""A page is looked for in the tier's files by its first bytes (they hold its key's hash), then compared whole."""
SIDES = ("disk", "raw", "memory")
"""A round's three samples, in the order of even rounds (odd rounds: reversed)."""


@dataclass(frozen=True)
class DiskCase:
    """What ``kvtui bench --disk`` measures: a prompt of ``prompt_tokens`` tokens, its first ``shared_tokens``
    reloaded from disk ``iterations`` times in each phase; the DRAM segment ``dram_bytes`` (bytes), the disk tier
    ``disk_bytes`` under ``disk_path`` (an existing folder; None: the temporary folder)."""

    prompt_tokens: int
    shared_tokens: int
    iterations: int
    dram_bytes: int
    disk_bytes: int
    disk_path: str | None = None

    @property
    def where(self) -> str:
        """The folder the disk tier goes under: ``disk_path`` or the temporary folder."""
        import tempfile

        return self.disk_path or tempfile.gettempdir()


def default_dram_bytes(prompt_bytes: int, least: int) -> int:
    """The default DRAM segment: :data:`DRAM_PROMPTS` prompts of ``prompt_bytes``, at least ``least`` bytes (the
    smallest segment Mooncake takes), in whole MiB."""
    mib = 1 << 20
    return max(least, -(-DRAM_PROMPTS * prompt_bytes // mib) * mib)


@dataclass(frozen=True)
class PageSpan:
    """Where a page lies on disk: ``offset`` bytes into the file at ``path``."""

    path: str
    offset: int


def expected_pages(keys: Sequence[str], page_bytes: int) -> np.ndarray:
    """The bytes every page of ``keys`` holds (:class:`~kvtui.engine.contents.PageContent`), uint8
    ``(len(keys), page_bytes)``."""
    pages = np.empty((len(keys), page_bytes), dtype=np.uint8)
    PageContent(page_bytes).fill_many(keys, pages)
    return pages


def find_pages(folder: str | Path, keys: Sequence[str], page_bytes: int) -> list[PageSpan]:
    """Where each page of ``keys`` lies in the files under ``folder`` (a disk tier's: a bucket file holds objects
    behind a header), oldest files first: found by its first :data:`HEAD_BYTES` bytes and compared whole.
    ``LookupError`` (one line) naming how many pages are in none of them."""
    want = expected_pages(keys, page_bytes)
    head = min(HEAD_BYTES, page_bytes)
    found: dict[int, PageSpan] = {}
    files = []
    for p in Path(folder).rglob("*"):
        try:
            if p.is_file() and p.stat().st_size >= page_bytes:
                files.append((p.stat().st_mtime, str(p)))
        except OSError:  # (a file the store removed meanwhile)
            continue
    for _mtime, path in sorted(files):
        if len(found) == len(keys):
            break
        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                for i in range(len(keys)):
                    if i in found:
                        continue
                    page = want[i].tobytes()
                    at = mm.find(page[:head])
                    while at >= 0 and mm[at:at + page_bytes] != page:
                        at = mm.find(page[:head], at + 1)
                    if at >= 0:
                        found[i] = PageSpan(path, at)
        except (OSError, ValueError):  # (removed, or emptied, since listed)
            continue
    if len(found) < len(keys):
        raise LookupError(f"{len(keys) - len(found)} of {len(keys)} pages are in none of the {len(files)} files "
                          f"under {folder}")
    return [found[i] for i in range(len(keys))]


class RawReader:
    """Reads pages from their :class:`PageSpan` s into the rows of a buffer with plain file I/O: each file opened
    once per read, each page one ``preadv`` straight into its row (no copy in Python). The buffer (uint8,
    ``(len(spans), page_bytes)``) is touched when made, so no read pays its page faults."""

    def __init__(self, spans: Sequence[PageSpan], page_bytes: int) -> None:
        self.page_bytes = int(page_bytes)
        self.buf = np.zeros((len(spans), self.page_bytes), dtype=np.uint8)
        by_file: dict[str, list[tuple[int, int]]] = {}
        for row, s in enumerate(spans):
            by_file.setdefault(s.path, []).append((row, s.offset))
        self.files = list(by_file.items())
        self.paths = [path for path, _pages in self.files]

    def read(self) -> float:
        """Read every page once; the ms from the first open to the last close. ``OSError`` for a short read."""
        t0 = time.perf_counter()
        for path, pages in self.files:
            fd = os.open(path, os.O_RDONLY)
            try:
                for row, offset in pages:
                    view, done = memoryview(self.buf[row]), 0
                    while done < self.page_bytes:
                        n = os.preadv(fd, [view[done:]], offset + done)
                        if n <= 0:
                            raise OSError(f"{path}: {done} of {self.page_bytes} bytes at offset {offset}")
                        done += n
            finally:
                os.close(fd)
        return (time.perf_counter() - t0) * 1e3


def _libc() -> ctypes.CDLL:
    """libc, with the signatures of ``mmap``, ``munmap`` and ``mincore``."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    return libc


def resident_pages(paths: Sequence[str]) -> int:
    """Pages of the files at ``paths`` in the page cache now (``mincore`` of a mapping of each; the mapping
    touches none). ``OSError`` when a file cannot be mapped."""
    libc, page = _libc(), os.sysconf("SC_PAGE_SIZE")
    failed = ctypes.c_void_p(-1).value
    total = 0
    for path in paths:
        size = os.path.getsize(path)
        if size == 0:
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr is None or addr == failed:
                raise OSError(ctypes.get_errno(), f"mmap {path}")
            try:
                vec = (ctypes.c_ubyte * (-(-size // page)))()
                if libc.mincore(addr, size, vec):
                    raise OSError(ctypes.get_errno(), f"mincore {path}")
                total += sum(b & 1 for b in vec)
            finally:
                libc.munmap(addr, size)
        finally:
            os.close(fd)
    return total


def advise_out(paths: Sequence[str]) -> None:
    """Write each file's dirty pages back (``fdatasync``) and ask the kernel to drop its pages from the page
    cache (``POSIX_FADV_DONTNEED``): these files only, any user who may read them, nothing else of the machine's."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def drop_page_cache(path: str = DROP_CACHES) -> str | None:
    """Write dirty pages back (``sync``) and drop the machine's clean page cache (``1`` into ``path``: the file
    data, not the dentries and inodes). None when done; else why not, in one line (not root, a read-only
    ``/proc``)."""
    os.sync()
    try:
        with open(path, "w") as f:
            f.write("1")
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    return None


COLD_METHODS = {
    "fadvise": "the tier's files evicted from the page cache (fdatasync, POSIX_FADV_DONTNEED; mincore: none of "
               "their pages left) before each disk sample",
    "drop_caches": f"the page cache dropped (sync, then 1 > {DROP_CACHES}; mincore: none of the tier's files' "
                   "pages left) before each disk sample",
}
"""How the cold phase empties the page cache of the tier's files, in the words of the table."""


def cold_method(paths: Sequence[str], drop_path: str = DROP_CACHES) -> tuple[str | None, str]:
    """How to evict the files at ``paths`` from the page cache here: ``("fadvise", text)`` when
    :func:`advise_out` leaves none of their pages in it; else ``("drop_caches", text)`` when dropping the
    machine's page cache (``drop_path``) does; else ``(None, "not measured: why")``. Evicts them once."""
    advise_out(paths)
    if resident_pages(paths) == 0:
        return "fadvise", COLD_METHODS["fadvise"]
    why = drop_page_cache(drop_path)
    if why is None:
        left = resident_pages(paths)
        if left == 0:
            return "drop_caches", COLD_METHODS["drop_caches"]
        why = f"{plural(left, 'page')} of the tier's files stay in memory when the page cache is dropped (tmpfs?)"
    return None, f"not measured: {why}"


def evict(method: str, paths: Sequence[str], drop_path: str = DROP_CACHES) -> None:
    """Evict the files at ``paths`` from the page cache by ``method`` (:data:`COLD_METHODS`); ``KvtuiError``
    when some of their pages stay (a cold sample would not be one)."""
    why = None
    if method == "drop_caches":
        why = drop_page_cache(drop_path)
    else:
        advise_out(paths)
    left = resident_pages(paths)
    if why is not None or left:
        raise KvtuiError(f"bench --disk: the tier's files could not be evicted from the page cache again ("
                         f"{why or plural(left, 'page') + ' left'})")


class RawRead(TypedDict):
    """The raw reads of one phase: ``read_ms`` (open to close, ms), ``MBps_p50`` (the median per-read rate),
    ``files`` read and whether every read returned the pages' bytes (``verified``)."""

    read_ms: Stats
    MBps_p50: float
    files: int
    verified: bool


class DiskPhase(TypedDict):
    """One phase (warm or cold): ``disk_reload`` (:func:`~kvtui.bench.reuse.reload_figures` of the prefix's
    reloads), ``disk_read_MBps_p50`` (the reload's disk part alone: its bytes ÷ ``read_ms_disk``, median),
    ``raw_read``, ``memory_reload`` (the twin's reloads), and the pages the reloads read from disk, all samples:
    ``pages_from_disk`` (the prefix's: every page of every sample) and ``memory_pages_from_disk`` (the twin's: 0)."""

    disk_reload: ReloadFigures
    disk_read_MBps_p50: float
    raw_read: RawRead
    memory_reload: ReloadFigures
    pages_from_disk: int
    memory_pages_from_disk: int


class _DiskRatios(TypedDict):
    """The warm ratios (see :class:`DiskRatios`)."""

    disk_reload_vs_raw_read: float
    disk_vs_memory_reload: float


class DiskRatios(_DiskRatios, total=False):
    """MB/s ÷ MB/s: ``disk_reload_vs_raw_read`` (the disk reload ÷ a raw read of the same bytes) and
    ``disk_vs_memory_reload`` (÷ a reload of as many pages from DRAM), warm; ``cold_…`` the same after dropping
    the page cache (where permitted). ms ÷ ms, with an estimate: ``…_vs_recompute``, the mean reload ÷ the
    estimated recompute of its tokens (below 1: the reload is faster)."""

    cold_disk_reload_vs_raw_read: float
    cold_disk_vs_memory_reload: float
    disk_reload_vs_recompute: float
    cold_disk_reload_vs_recompute: float
    memory_reload_vs_recompute: float


class DiskSizes(TypedDict):
    """The store the bench made: ``dram_bytes`` (its DRAM segment), ``disk_bytes`` (its disk tier), ``disk_path``
    (where the tier's folder went: ``--disk-path`` or the temporary folder) and ``flood_bytes`` (the other prompts
    published to push the prefix out)."""

    dram_bytes: int
    disk_bytes: int
    disk_path: str
    flood_bytes: int


class _Disk(TypedDict):
    """The figures every disk bench has (see :class:`DiskFigures`)."""

    layout: dict[str, int]
    page_bytes: int
    iterations: int
    tokens_reloaded: int
    pages_reloaded: int
    bytes_reloaded: int
    tiers: DiskSizes
    worker_client: str
    flood_s: float
    disk_files: int
    warm: DiskPhase
    cold: DiskPhase | None
    cold_method: str
    ratios: DiskRatios
    verified: bool
    environment: Environment


class DiskFigures(_Disk, BenchInputs, total=False):
    """Every figure of ``kvtui bench --disk --json`` (:func:`measure_disk`): the case, the store (``tiers``), the
    seconds from the flood's first put until a twin was in DRAM (``flood_s``), the files the prefix lies in, the
    ``warm`` and ``cold`` phases (cold None where the tier's files could not be evicted from the page cache:
    ``cold_method`` says why, else how), the ``ratios``, ``verified`` and the ``environment``; with an active
    estimate also ``ttft_estimate`` and ``recompute_ms`` (the prefix's tokens)."""

    ttft_estimate: TtftInputs
    recompute_ms: float | None


def _mbps(nbytes: int, ms: Sequence[float]) -> float:
    """The median of the per-sample rates of ``nbytes`` in each of ``ms`` (MB/s; samples of 0 ms left out)."""
    return median([nbytes / (m / 1e3) / 1e6 for m in ms if m > 0])


def phase_figures(disk: Sequence[ReloadResult], raw_ms: Sequence[float], raw_ok: Sequence[bool], files: int,
                  memory: Sequence[ReloadResult]) -> DiskPhase:
    """A phase's :class:`DiskPhase` from its samples: the prefix's reloads ``disk``, the raw reads' ms and checks
    (``raw_ms``, ``raw_ok``) from ``files`` files, the twin's reloads ``memory``."""
    nbytes = disk[0].bytes_loaded
    return {"disk_reload": reload_figures(list(disk)),
            "disk_read_MBps_p50": _mbps(nbytes, [r.read_ms_disk for r in disk]),
            "raw_read": {"read_ms": _stats(list(raw_ms)), "MBps_p50": _mbps(nbytes, raw_ms), "files": files,
                         "verified": all(raw_ok)},
            "memory_reload": reload_figures(list(memory)), "pages_from_disk": sum(len(r.disk_pages) for r in disk),
            "memory_pages_from_disk": sum(len(r.disk_pages) for r in memory)}


@dataclass
class _Samples:
    """One phase's samples as they come: the prefix's reloads, the raw reads' ms and checks, the twin's reloads
    (one writer: the bench's thread)."""

    disk: list[ReloadResult] = field(default_factory=list)
    raw_ms: list[float] = field(default_factory=list)
    raw_ok: list[bool] = field(default_factory=list)
    memory: list[ReloadResult] = field(default_factory=list)

    def figures(self, files: int) -> DiskPhase:
        return phase_figures(self.disk, self.raw_ms, self.raw_ok, files, self.memory)


def disk_ratios(warm: DiskPhase, cold: DiskPhase | None, recompute_ms: float | None = None) -> DiskRatios:
    """The :class:`DiskRatios` of the phases; those against recomputing when ``recompute_ms`` (the estimated
    recompute of the reloaded tokens) is given and positive."""
    def of(p: DiskPhase) -> tuple[float, float]:
        d = p["disk_reload"]["MBps_p50"]
        return d / p["raw_read"]["MBps_p50"], d / p["memory_reload"]["MBps_p50"]

    vs_raw, vs_memory = of(warm)
    out: DiskRatios = {"disk_reload_vs_raw_read": vs_raw, "disk_vs_memory_reload": vs_memory}
    if cold is not None:
        out["cold_disk_reload_vs_raw_read"], out["cold_disk_vs_memory_reload"] = of(cold)
    if recompute_ms:
        out["disk_reload_vs_recompute"] = warm["disk_reload"]["reload_ms"]["mean"] / recompute_ms
        out["memory_reload_vs_recompute"] = warm["memory_reload"]["reload_ms"]["mean"] / recompute_ms
        if cold is not None:
            out["cold_disk_reload_vs_recompute"] = cold["disk_reload"]["reload_ms"]["mean"] / recompute_ms
    return out


def _publish_all(prefill: WorkerHandle, tokens: np.ndarray, what: str) -> PublishResult:
    """Publish ``tokens`` again until no put fails (the store refuses puts while DRAM is full and its offload
    writes); ``KvtuiError`` after :data:`PUT_WAIT_S` of refusals."""
    from kvtui.core.codes import code_name

    deadline = time.monotonic() + PUT_WAIT_S
    while True:
        pub: PublishResult = prefill.call(Publish(tokens))
        if not pub.failed:
            return pub
        if time.monotonic() > deadline:
            codes = ", ".join(f"{n} {code_name(c)}" for c, n in pub.codes.most_common())
            raise KvtuiError(f"bench --disk: the store refused {what}'s puts for {PUT_WAIT_S:g} s ({codes}): its "
                             "offload to disk did not free DRAM")
        time.sleep(0.2)


def _settle(folder: str) -> None:
    """Wait until the bytes in ``folder`` stay the same for :data:`SETTLE_S` (the offload has written what
    eviction picked), at most :data:`SETTLE_MAX_S`."""
    def used() -> int:
        total = 0
        for f in Path(folder).rglob("*"):
            try:
                total += f.stat().st_size if f.is_file() else 0
            except OSError:  # (a file the store removed meanwhile)
                continue
        return total

    end = time.monotonic() + SETTLE_MAX_S
    last, since = used(), time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.25)
        now = used()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLE_S:
            return


def _check_disk(r: ReloadResult, pages: int) -> ReloadResult:
    """``r`` when every one of the prefix's ``pages`` was reloaded from disk; else ``KvtuiError``."""
    if r.pages_hit != pages or len(r.disk_pages) != pages:
        raise KvtuiError(f"bench --disk: a reload of the prefix read {len(r.disk_pages)} of {pages} pages from disk "
                         f"({r.pages_hit} hit): its figures would not be a disk tier's")
    return r


def _check_memory(r: ReloadResult, pages: int) -> ReloadResult:
    """``r`` when every one of the twin's ``pages`` was reloaded from DRAM; else ``KvtuiError``."""
    if r.pages_hit != pages or r.disk_pages:
        raise KvtuiError(f"bench --disk: a reload of the twin prompt found {r.pages_hit} of {pages} pages, "
                         f"{len(r.disk_pages)} of them on disk, where DRAM should hold them all: raise --store-size")
    return r


def _prefix_on_disk(decode: WorkerHandle, second: np.ndarray, pages: int) -> None:
    """Wait up to :data:`DISK_WAIT_S` until a reload of ``second`` reads all ``pages`` of its prefix from disk
    (an evicted page leaves DRAM once the offload wrote it); ``KvtuiError`` if it never does."""
    end = time.monotonic() + DISK_WAIT_S
    while True:
        r = decode.call(BenchReload(second, 1))[0].result
        if r.pages_hit == pages and len(r.disk_pages) == pages:
            return
        if time.monotonic() > end:
            _check_disk(r, pages)
        time.sleep(0.5)


def _twin_in_dram(prefill: WorkerHandle, decode: WorkerHandle, prompt: np.ndarray, second: np.ndarray, pages: int,
                  folder: str) -> np.ndarray:
    """Publish a twin of ``prompt`` (other tokens, as many pages) until DRAM holds every one of the ``pages`` its
    request (the twin of ``second``) reloads, a new twin each time, at most :data:`TWIN_ATTEMPTS`; that request.
    (A twin whose puts were refused for a while is put in parts, and a later part's eviction may take an earlier
    one's page to disk.) ``KvtuiError`` when none stays."""
    for attempt in range(1, TWIN_ATTEMPTS + 1):
        shift = 2_000_000 * attempt
        _publish_all(prefill, prompt + shift, "the twin prompt")
        _settle(folder)
        r = decode.call(BenchReload(second + shift, 1))[0].result
        if r.pages_hit == pages and not r.disk_pages:
            return second + shift
    _check_memory(r, pages)
    raise AssertionError("unreachable: _check_memory raises for a twin not all in DRAM")


def _rounds(n: int, samples: dict[str, Callable[[], None]], before: Callable[[str], None] | None = None) -> None:
    """``n`` rounds of the ``samples`` (by side), in :data:`SIDES` order in even rounds, reversed in odd ones;
    ``before(side)`` runs untimed before each sample."""
    for i in range(n):
        for side in (SIDES if i % 2 == 0 else SIDES[::-1]):
            if before is not None:
                before(side)
            samples[side]()


def measure_disk(engines: BenchEngines, layout: PageLayout, case: DiskCase,
                 estimator: TtftEstimator | None = None) -> DiskFigures:
    """Run the disk bench (see the module docstring) and return every figure of ``kvtui bench --disk --json``;
    with ``estimator`` also the reloads against recomputing the prefix. ``KvtuiError`` (one line) when the prefix
    does not end up on disk only, the twin not in DRAM, or the store refuses puts for too long."""
    from kvtui.mooncake.cluster import ClusterOptions

    pages = case.shared_tokens // layout.page_tokens
    prompt_pages = case.prompt_tokens // layout.page_tokens
    prompt = np.arange(case.prompt_tokens, dtype=np.uint32) + 5000
    second = prompt.copy()
    second[case.shared_tokens:] += 1_000_000  # diverges after the shared prefix
    prompt_bytes = prompt_pages * layout.page_bytes
    floods = math.ceil(FLOOD_DRAMS * case.dram_bytes / prompt_bytes)
    where = case.where
    say(f"starting an embedded store: a DRAM segment of {format_bytes(case.dram_bytes)}, a disk tier of "
        f"{format_bytes(case.disk_bytes)} under {where}…")
    stack = engines.engine(layout, cluster=ClusterOptions(disk_bytes=case.disk_bytes, disk_path=case.disk_path,
                                                          worker_client="dummy", lease_ttl_ms=LEASE_MS))
    phases: dict[str, _Samples] = {}
    try:
        prefill, decode = first_workers(stack.engine)
        folder = stack.cluster.disk_folder
        assert folder is not None  # (a cluster started with disk_bytes has a disk tier)
        env = environment(stack.engine.endpoints)
        say(f"publishing a {case.prompt_tokens}-token prompt, then {floods} others "
            f"({format_bytes(floods * prompt_bytes)}) so that eviction moves its pages to disk, then a twin…")
        _publish_all(prefill, prompt, "the prompt")
        t0 = time.monotonic()
        for k in range(floods):
            _publish_all(prefill, prompt + 10_000_000 * (k + 1), "a flood prompt")
        _settle(folder)
        twin_second = _twin_in_dram(prefill, decode, prompt, second, pages, folder)
        flood_s = time.monotonic() - t0
        _prefix_on_disk(decode, second, pages)
        keys = decode.call(Keys(second))[:pages]
        try:
            spans = find_pages(folder, keys, layout.page_bytes)
        except LookupError as exc:
            raise KvtuiError(f"bench --disk: the prefix's pages are on disk, but {exc}") from None
        reader = RawReader(spans, layout.page_bytes)
        content = PageContent(layout.page_bytes)

        def samples(s: _Samples) -> dict[str, Callable[[], None]]:
            def raw() -> None:
                s.raw_ms.append(reader.read())
                s.raw_ok.append(content.leading_matches(keys, reader.buf) == pages)

            return {"disk": lambda: s.disk.append(_check_disk(decode.call(BenchReload(second, 1))[0].result, pages)),
                    "raw": raw,
                    "memory": lambda: s.memory.append(
                        _check_memory(decode.call(BenchReload(twin_second, 1))[0].result, pages))}

        reader.read()  # untimed: the files into the page cache, the buffer touched
        say(f"warm: {case.iterations} rounds of a disk reload of the prefix, a raw read of the same bytes from "
            f"{plural(len(reader.files), 'file')}, a reload of as many pages from DRAM…")
        _rounds(case.iterations, samples(phases.setdefault("warm", _Samples())))
        method, cold_text = cold_method(reader.paths)
        if method is not None:
            say(f"cold: {case.iterations} rounds again, {cold_text}…")

            def out_of_cache(side: str) -> None:
                if side != "memory":
                    evict(method, reader.paths)

            _rounds(case.iterations, samples(phases.setdefault("cold", _Samples())), out_of_cache)
        else:
            say(f"cold: {cold_text}")
    finally:
        stack.stop()
    files = len(reader.files)
    warm = phases["warm"].figures(files)
    cold = phases["cold"].figures(files) if "cold" in phases else None
    recompute = None
    est = None
    if estimator is not None:
        from kvtui.metrics.ttft import reload_estimate

        est = reload_estimate(estimator, pages * layout.page_tokens,
                              [r.probe_ms + r.read_ms for r in phases["warm"].disk])
        recompute = est["recompute_ms"]
    verified = all(p["disk_reload"]["verified"] and p["memory_reload"]["verified"] and p["raw_read"]["verified"]
                   for p in (warm, cold) if p is not None)
    out: DiskFigures = {
        "layout": layout.as_dict(), "page_bytes": layout.page_bytes, "iterations": case.iterations,
        "tokens_reloaded": pages * layout.page_tokens, "pages_reloaded": pages,
        "bytes_reloaded": pages * layout.page_bytes,
        "tiers": {"dram_bytes": case.dram_bytes, "disk_bytes": case.disk_bytes, "disk_path": where,
                  "flood_bytes": floods * prompt_bytes},
        "worker_client": "dummy", "flood_s": flood_s, "disk_files": files, "warm": warm, "cold": cold,
        "cold_method": cold_text,
        "ratios": disk_ratios(warm, cold, recompute), "verified": verified, "environment": env,
    }
    if est is not None:
        out["ttft_estimate"] = est["ttft_estimate"]
        out["recompute_ms"] = recompute
    return out


RATIO_ORDER = ("disk_reload_vs_raw_read", "cold_disk_reload_vs_raw_read", "disk_vs_memory_reload",
               "cold_disk_vs_memory_reload", "disk_reload_vs_recompute", "cold_disk_reload_vs_recompute",
               "memory_reload_vs_recompute")
"""The order of the table's Ratios section."""


def _phase_rows(p: DiskPhase, pages: int, files: int) -> list[tuple[str, str]]:
    """A phase's rows: the disk reload, the raw read of the same bytes, the reload from DRAM."""
    from kvtui.metrics import figures as fig

    def reload(r: ReloadFigures) -> str:
        return (f"p50 {fig.show(fig.RELOAD_LATENCY, r['reload_ms']['p50'])} · "
                f"{fig.show(fig.RELOAD_P50, r['MBps_p50'])}")

    d, raw, m = p["disk_reload"], p["raw_read"], p["memory_reload"]
    return [
        ("disk reload", f"{reload(d)} (probe + read; the disk part {fig.show(fig.RELOAD_P50, p['disk_read_MBps_p50'])}"
                        f"), every page from disk, {'verified' if d['verified'] else 'MISMATCH'}"),
        ("raw file read", f"p50 {fig.show(fig.RELOAD_LATENCY, raw['read_ms']['p50'])} · "
                          f"{fig.show(fig.RELOAD_P50, raw['MBps_p50'])}: the same bytes from "
                          f"{plural(files, 'file')} of the tier, preadv into a buffer, "
                          f"{'verified' if raw['verified'] else 'MISMATCH'}"),
        ("memory reload", f"{reload(m)}: {plural(pages, 'page')} of another prompt, held in DRAM, "
                          f"{'verified' if m['verified'] else 'MISMATCH'}"),
    ]


def format_disk(o: DiskFigures) -> str:
    """The human table of :func:`measure_disk`'s figures, at most :data:`~kvtui.core.text.WIDTH` columns."""
    from kvtui.bench.targets import LEGEND, ratio_section
    from kvtui.core.text import legend, rows, section, wrap
    from kvtui.metrics import figures as fig

    t = o["tiers"]
    pages, files = o["pages_reloaded"], o["disk_files"]
    lines = wrap(f"kvtui bench --disk: {plural(pages, 'page')} of {o['page_bytes']:,} bytes "
                 f"({fig.number(o['bytes_reloaded'] / 1e6, 'MB', 1)} MB, {o['tokens_reloaded']:,} tokens) held "
                 f"only by the disk tier, reloaded {plural(o['iterations'], 'time')} a phase; a DRAM segment of "
                 f"{format_bytes(t['dram_bytes'])}, a disk tier of {format_bytes(t['disk_bytes'])} "
                 f"({format_bytes(t['flood_bytes'])} of other prompts pushed the prefix out in "
                 f"{fig.number(o['flood_s'], 's')} s)")
    lines += section("Warm (the page cache holds the tier's files)", rows(_phase_rows(o["warm"], pages, files), 14))
    cold = o["cold"]
    how = wrap(o["cold_method"], first="  ", rest="  ")
    lines += section("Cold (the tier's files out of the page cache)",
                     how + (rows(_phase_rows(cold, pages, files), 14) if cold is not None else []))
    est, rc = o.get("ttft_estimate"), o.get("recompute_ms")
    if est is not None:
        text = (f"recompute ~{fig.show(fig.TTFT_SAVED, rc)} for {o['tokens_reloaded']:,} tokens; estimate: "
                f"{est.get('basis', '')}" if rc is not None else est.get("off", "no estimate"))
        lines += section("Recompute (estimate)", wrap(text, first="  ", rest="  "))
    lines += ratio_section(o["ratios"], RATIO_ORDER)
    lines += legend([
        LEGEND,
        ("disk ÷ raw", "MB/s ÷ MB/s: a reload of the prefix through kvtui's connector and Mooncake's disk tier "
                       "(the segment owner reads its bucket files and sends the pages) against reading the same "
                       "bytes from those files in this process, in the same rounds"),
        ("disk ÷ memory", "MB/s ÷ MB/s: a disk hit against a memory hit of as many pages (another prompt's: a page "
                          "is on disk or in DRAM, not both)"),
        ("÷ recompute", "ms ÷ ms: the mean reload against the estimated prefill of its tokens; below 1 the reload "
                        "is the faster"),
        ("MB/s", "10^6 bytes per second; MiB = 2^20 bytes"),
    ])
    return "\n".join(lines)
