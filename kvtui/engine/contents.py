"""Deterministic page contents, so any reader verifies a loaded page byte-exact without asking the writer.

A page is a run of little-endian uint64 words, cut into chunks of :data:`CHUNK_WORDS` words (the last one
may be shorter). Word ``j`` of chunk ``c`` is ``h + j·K`` (mod 2^64) for ``j ≥ 1`` and the chunk's header
``h + c·K2`` for ``j = 0``, where ``h`` is the first 8 bytes of ``SHA256(key)`` (little-endian),
``K = 0x9E3779B97F4A7C15`` (2^64 divided by the golden ratio) and ``K2 = 0xD6E8FEB86659FD93``, both odd;
the ``page_bytes mod 8`` tail bytes are the first bytes of ``SHA256(key)``. A page of at most one chunk
(every page up to 256 KiB) is therefore word ``i`` = ``h + i·K``.

What a verify detects: any changed bit (every byte is compared with its expected value), a page of another
key (stale or swapped: another ``h``, equal by chance with probability 2^-64), a copy shifted by ``k``
words (within a chunk, word ``j`` then holds ``h + (j+k mod C)·K`` and a multiple of the odd ``K`` below
2^64 is never 0 mod 2^64; a shift by whole chunks moves the headers ``h + c·K2``), chunks swapped or
repeated within a page (the headers) and a truncated page (the size is checked).

Both directions run at memory speed with no temporary the size of a page: every chunk but its header is
the same, so the expected chunk is built once per page into a cache-resident buffer; a fill copies it into
each chunk of the page (a write pass), a verify compares each chunk with it by ``memcmp`` (libc, through
``ctypes``: a read pass that stops at the first chunk that differs). ``kvtui bench`` measures both against
a memcpy of the same bytes (``ratios.verify_vs_memcpy``, ``ratios.fill_vs_memcpy``).

A sampled check (:meth:`PageContent.leading_sampled`, ``--verify sampled``) reads every chunk header and
:data:`~kvtui.core.verify.SAMPLE_WORDS` random words per page instead, in a few vectorised gathers for a
whole batch of pages; :mod:`kvtui.core.verify` says what it catches and what it can miss.
"""

from __future__ import annotations

import ctypes
import hashlib
from typing import Sequence

import numpy as np

from kvtui.core.verify import CHUNK_WORDS, SAMPLE_WORDS, sampled_is_full

K = np.uint64(0x9E3779B97F4A7C15)
"""The odd word step of the content formula (see the module docstring)."""

K2 = np.uint64(0xD6E8FEB86659FD93)
"""The odd chunk-header step of the content formula (see the module docstring)."""

_MASK = (1 << 64) - 1
DIGEST_CACHE_KEYS = 1 << 16
"""Keys whose ``SHA256`` a :class:`PageContent` keeps (emptied when full): a prefix hit reloads the same pages
again and again, and on small pages hashing each key is a large share of a decode worker's CPU per request."""
_memcmp = ctypes.CDLL(None).memcmp  # libc's; ctypes releases the GIL for the call
_memcmp.restype = ctypes.c_int
_memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]


def _same_bytes(a: int, b: int, nbytes: int) -> bool:
    """True when the ``nbytes`` bytes at addresses ``a`` and ``b`` are equal (``memcmp``)."""
    return nbytes <= 0 or _memcmp(a, b, nbytes) == 0


class PageContent:
    """Expected bytes of a page, derived from its key (see the module docstring).

    One instance per page size keeps a cache-sized ``base`` and scratch buffer; it is not thread-safe (the
    connector verifies after its read streams have joined). Any ``page_bytes`` ≥ 1 works; pages passed in
    are uint8 arrays (a non-contiguous one is copied first).
    """

    def __init__(self, page_bytes: int):
        self.page_bytes = int(page_bytes)
        self._words = self.page_bytes // 8
        self._tail = self.page_bytes - self._words * 8
        self._chunk = max(1, min(CHUNK_WORDS, self._words))
        # small pages (tiny: 4 KiB) are built and checked many rows at once, about a chunk each time
        self._rows = CHUNK_WORDS // self._words if self._tail == 0 and 0 < self._words <= CHUNK_WORDS // 2 else 0
        scratch = self._rows * self._words if self._rows else self._chunk
        with np.errstate(over="ignore"):
            self._base = np.arange(self._chunk, dtype=np.uint64) * K  # base[j] = j·K mod 2^64
        self._expected = np.empty(scratch, dtype=np.uint64)
        self._expected_at = self._expected.ctypes.data
        self._digests: dict[str, bytes] = {}  # key → SHA256(key), at most DIGEST_CACHE_KEYS of them

    def _digest(self, key: str) -> bytes:
        """``SHA256(key)`` (32 bytes), from the cache when this instance computed it before."""
        digest = self._digests.get(key)
        if digest is None:
            if len(self._digests) >= DIGEST_CACHE_KEYS:
                self._digests.clear()
            digest = self._digests[key] = hashlib.sha256(key.encode("utf-8")).digest()
        return digest

    @staticmethod
    def _h(digest: bytes) -> int:
        return int.from_bytes(digest[:8], "little")

    def _expected_chunk(self, h: int) -> np.ndarray:
        """Chunk 0 of the page of ``h`` (its header is ``h``) in the scratch buffer."""
        e = self._expected[: self._chunk]
        np.add(self._base, np.uint64(h), out=e)
        return e

    def _chunks(self, h: int):
        """``(start, stop, header)`` per chunk of the page: words ``start:stop``, the first being ``header``."""
        for c, start in enumerate(range(0, self._words, CHUNK_WORDS)):
            yield start, min(self._words, start + CHUNK_WORDS), (h + c * int(K2)) & _MASK

    def fill(self, key: str, page: np.ndarray) -> None:
        """Write the expected contents of ``key`` into ``page`` (uint8, shape ``(page_bytes,)``), one pass."""
        digest = self._digest(key)
        h = self._h(digest)
        words = page[: self._words * 8].view(np.uint64)
        if self._words <= CHUNK_WORDS:  # one chunk: build it in place
            np.add(self._base[: self._words], np.uint64(h), out=words)
        else:
            e = self._expected_chunk(h)
            for start, stop, header in self._chunks(h):
                e[0] = header
                np.copyto(words[start:stop], e[: stop - start])
        if self._tail:
            page[self._words * 8:] = np.frombuffer(digest, np.uint8)[: self._tail]

    def matches(self, key: str, page: np.ndarray) -> bool:
        """True when ``page`` (uint8, ``page_bytes``) holds exactly the bytes :meth:`fill` writes for ``key``;
        the page is read once and the check stops at the first chunk that differs."""
        if page.size != self.page_bytes:
            return False
        page = np.ascontiguousarray(page)
        digest = self._digest(key)
        h = self._h(digest)
        at = page.ctypes.data
        if self._words:
            e = self._expected_chunk(h)
            for start, stop, header in self._chunks(h):
                e[0] = header
                if not _same_bytes(at + start * 8, self._expected_at, (stop - start) * 8):
                    return False
        if self._tail:
            return bool(np.array_equal(page[self._words * 8:], np.frombuffer(digest, np.uint8)[: self._tail]))
        return True

    def _row_groups(self, keys: Sequence[str]):
        """Small pages: ``(a, b, h)`` for groups of rows ``a:b`` of about a chunk, ``h`` shaped ``(b-a, 1)``."""
        digest = self._digest
        for a in range(0, len(keys), self._rows):
            b = min(len(keys), a + self._rows)
            h = np.frombuffer(b"".join([digest(k)[:8] for k in keys[a:b]]), dtype="<u8").astype(np.uint64)
            yield a, b, h.reshape(b - a, 1)

    def fill_many(self, keys: Sequence[str], pages: np.ndarray) -> None:
        """:meth:`fill` for each key into the rows of ``pages`` (uint8, shape ``(≥len(keys), page_bytes)``)."""
        if not self._rows:
            for key, page in zip(keys, pages):
                self.fill(key, page)
            return
        for a, b, h in self._row_groups(keys):
            np.add(self._base[None, :], h, out=pages[a:b].view(np.uint64))

    def leading_matches(self, keys: Sequence[str], pages: np.ndarray) -> int:
        """How many leading rows of ``pages`` (uint8, ``(≥len(keys), page_bytes)``) hold exactly what
        :meth:`fill` writes for the same-index key: the index of the first mismatch, or ``len(keys)``."""
        if not self._rows:
            for i, key in enumerate(keys):
                if not self.matches(key, pages[i]):
                    return i
            return len(keys)
        pages = np.ascontiguousarray(pages[: len(keys)])
        at, pb = pages.ctypes.data, self.page_bytes
        for a, b, h in self._row_groups(keys):
            expected = self._expected[: (b - a) * self._words].reshape(b - a, self._words)
            np.add(self._base[None, :], h, out=expected)
            if _same_bytes(at + a * pb, self._expected_at, (b - a) * pb):
                continue
            for r in range(b - a):  # the group differs: find its first row that does
                if not _same_bytes(at + (a + r) * pb, self._expected_at + r * pb, pb):
                    return a + r
        return len(keys)

    def leading_sampled(self, keys: Sequence[str], pages: np.ndarray, rng: np.random.Generator) -> int:
        """:meth:`leading_matches` by sample: for each row of ``pages`` (uint8, ``(≥len(keys), page_bytes)``)
        compare every chunk header, :data:`~kvtui.core.verify.SAMPLE_WORDS` words drawn from ``rng`` (anew per
        row, uniformly, with replacement) and the tail bytes with what :meth:`fill` writes for the same-index
        key; the index of the first row that differs, or ``len(keys)``. Pages of at most ``SAMPLE_WORDS`` words
        are checked whole."""
        n = len(keys)
        if n == 0 or sampled_is_full(self.page_bytes):
            return self.leading_matches(keys, pages)
        w, shift = self._words, CHUNK_WORDS.bit_length() - 1  # (a chunk is 2^shift words)
        rows = np.ascontiguousarray(pages[:n])
        digests = [self._digest(k) for k in keys]
        h = np.frombuffer(b"".join([d[:8] for d in digests]), dtype="<u8").astype(np.uint64)[:, None]
        pos = rng.integers(0, w, size=(n, SAMPLE_WORDS), dtype=np.int64)  # word indexes
        j = (pos & (CHUNK_WORDS - 1)).astype(np.uint64)  # the index within its chunk; 0: the chunk's header
        # word j of chunk c is h + j·K, its header (j = 0) h + c·K2 (uint64 arithmetic wraps)
        expected = h + np.where(j == 0, (pos >> shift).astype(np.uint64) * K2, j * K)
        headers = h + np.arange(-(-w // CHUNK_WORDS), dtype=np.uint64) * K2
        if self._tail == 0 and rows.ctypes.data % 8 == 0:
            words = rows.view(np.uint64)
            got, got_headers = np.take_along_axis(words, pos, axis=1), words[:, ::CHUNK_WORDS]
        else:  # 8 bytes per word, gathered: any alignment, any page size
            at = np.arange(n, dtype=np.int64)[:, None] * self.page_bytes
            flat, eight = rows.reshape(-1), np.arange(8)

            def gather(idx: np.ndarray) -> np.ndarray:
                return flat[(at + idx * 8)[:, :, None] + eight].view("<u8")[:, :, 0]

            got = gather(pos)
            got_headers = gather(np.broadcast_to(np.arange(0, w, CHUNK_WORDS, dtype=np.int64), headers.shape))
        ok = (got == expected).all(axis=1) & (got_headers == headers).all(axis=1)
        if self._tail:
            tails = np.frombuffer(b"".join([d[: self._tail] for d in digests]), np.uint8).reshape(n, self._tail)
            ok &= (rows[:, w * 8:] == tails).all(axis=1)
        bad = np.flatnonzero(~ok)
        return int(bad[0]) if bad.size else n
