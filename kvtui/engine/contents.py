"""Deterministic page contents, so any reader verifies a loaded page byte-exact without asking the writer.

A page's 8-byte word ``i`` (little-endian uint64) is ``h + i·K`` (mod 2^64), where ``h`` is the first
8 bytes of ``SHA256(key)`` (little-endian) and ``K = 0x9E3779B97F4A7C15`` (odd: 2^64 divided by the golden
ratio); the ``page_bytes mod 8`` tail bytes are the first bytes of ``SHA256(key)``. What a verify detects:
any changed bit (every byte is compared), a page of another key (stale or swapped: another ``h``, equal by
chance with probability 2^-64), a shifted copy (word ``i`` then holds ``h + (i+k)·K``, and ``k·K ≠ 0``
mod 2^64 for any shift ``k`` below 2^64 words since ``K`` is odd) and a truncated one (the size is checked).

Both directions run at memory speed: the page is written (fill) or read (verify) once, in chunks of
:data:`CHUNK_WORDS` words. A chunk starting at word ``s`` is ``base + (h + s·K)`` where ``base[j] = j·K``
is built once per page size, so each chunk costs one scalar add into a cache-resident scratch buffer (or,
for a fill, straight into the page) and one comparison; no temporary the size of a page is made.
``kvtui bench`` measures both against a memcpy of the same bytes (``ratios.verify_vs_memcpy``,
``ratios.fill_vs_memcpy``).
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

CHUNK_WORDS = 1 << 15
"""Words (8 bytes each) built and compared at once: 256 KiB, so a chunk's expected values, the base they come
from and the comparison's booleans (≈ 544 KiB together) stay in a 1 MiB L2 cache while the page streams past."""

K = np.uint64(0x9E3779B97F4A7C15)
"""The odd word step of the content formula (see the module docstring)."""


class PageContent:
    """Expected bytes of a page, derived from its key (see the module docstring).

    One instance per page size keeps a cache-sized ``base`` and scratch buffers; it is not thread-safe (the
    connector verifies after its read streams have joined). Any ``page_bytes`` ≥ 1 works.
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
        self._equal = np.empty(scratch, dtype=np.bool_)

    @staticmethod
    def _digest(key: str) -> bytes:
        return hashlib.sha256(key.encode("utf-8")).digest()

    @staticmethod
    def _h(digest: bytes) -> int:
        return int.from_bytes(digest[:8], "little")

    def _chunks(self, h: int):
        """``(start, stop, offset)`` per chunk of the page: words ``start:stop`` are ``base + offset``."""
        for start in range(0, self._words, self._chunk):
            yield start, min(self._words, start + self._chunk), np.uint64((h + start * int(K)) & (2**64 - 1))

    def fill(self, key: str, page: np.ndarray) -> None:
        """Write the expected contents of ``key`` into ``page`` (uint8, shape ``(page_bytes,)``), one pass."""
        digest = self._digest(key)
        words = page[: self._words * 8].view(np.uint64)
        for start, stop, offset in self._chunks(self._h(digest)):
            np.add(self._base[: stop - start], offset, out=words[start:stop])
        if self._tail:
            page[self._words * 8:] = np.frombuffer(digest, np.uint8)[: self._tail]

    def matches(self, key: str, page: np.ndarray) -> bool:
        """True when ``page`` (uint8, ``page_bytes``) holds exactly the bytes :meth:`fill` writes for ``key``;
        the page is read once and the check stops at the first chunk that differs."""
        if page.size != self.page_bytes:
            return False
        digest = self._digest(key)
        words = page[: self._words * 8].view(np.uint64)
        for start, stop, offset in self._chunks(self._h(digest)):
            n = stop - start
            np.add(self._base[:n], offset, out=self._expected[:n])
            np.equal(words[start:stop], self._expected[:n], out=self._equal[:n])
            if not self._equal[:n].all():
                return False
        if self._tail:
            return bool(np.array_equal(page[self._words * 8:], np.frombuffer(digest, np.uint8)[: self._tail]))
        return True

    def _row_groups(self, keys: Sequence[str]):
        """Small pages: ``(a, b, h)`` for groups of rows ``a:b`` of about a chunk, ``h`` shaped ``(b-a, 1)``."""
        for a in range(0, len(keys), self._rows):
            b = min(len(keys), a + self._rows)
            h = np.frombuffer(b"".join(self._digest(k)[:8] for k in keys[a:b]), dtype="<u8").astype(np.uint64)
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
        for a, b, h in self._row_groups(keys):
            shape = (b - a, self._words)
            expected = self._expected[: shape[0] * shape[1]].reshape(shape)
            np.add(self._base[None, :], h, out=expected)
            equal = self._equal[: expected.size].reshape(shape)
            np.equal(pages[a:b].view(np.uint64), expected, out=equal)
            ok = equal.all(axis=1)
            if not ok.all():
                return a + int(np.argmin(ok))
        return len(keys)
