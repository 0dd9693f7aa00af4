"""Deterministic page contents, so any reader verifies a loaded page byte-exact without asking the writer.

A page is the 32-byte ``SHA256(key)`` tiled over ``page_bytes`` with every 8-byte word XOR-ed with its word
index (a shifted or truncated copy never matches).
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np


class PageContent:
    """Expected bytes of a page, derived from its key (see module docstring).

    One instance per page size keeps the word-index array (``page_bytes/8`` uint64) so that filling and
    verifying a page are two vectorised passes over memory. ``page_bytes`` must be a multiple of 8 for the
    fast path; other sizes fall back to a byte-wise pattern.
    """

    def __init__(self, page_bytes: int):
        self.page_bytes = page_bytes
        self._words = page_bytes // 8
        self._index = np.arange(self._words, dtype=np.uint64)
        self._tail = page_bytes - self._words * 8
        self._scratch = np.empty(self._words, dtype=np.uint64)

    @staticmethod
    def _digest_words(key: str) -> np.ndarray:
        return np.frombuffer(hashlib.sha256(key.encode("utf-8")).digest(), dtype=np.uint64)

    def _pattern(self, key: str, out_words: np.ndarray) -> None:
        d = self._digest_words(key)
        q = self._words // 4 * 4
        np.bitwise_xor(self._index[:q].reshape(-1, 4), d, out=out_words[:q].reshape(-1, 4))
        if self._words > q:
            np.bitwise_xor(self._index[q:], d[: self._words - q], out=out_words[q:])

    def fill(self, key: str, page: np.ndarray) -> None:
        """Write the expected contents of ``key`` into ``page`` (uint8, shape ``(page_bytes,)``)."""
        words = page[: self._words * 8].view(np.uint64)
        self._pattern(key, words)
        if self._tail:
            page[self._words * 8 :] = np.frombuffer(hashlib.sha256(key.encode()).digest(), np.uint8)[: self._tail]

    BATCH_BYTES = 4 << 20  # expected bytes built at once by the batched calls (bounds their scratch memory)

    def _batched(self) -> bool:
        return self._tail == 0 and self._words % 4 == 0 and self._words > 0

    def _patterns(self, keys: Sequence[str]) -> np.ndarray:
        """Expected words of ``keys``: shape ``(len(keys), page_bytes/8)`` uint64 (batched path only)."""
        d = np.frombuffer(b"".join(hashlib.sha256(k.encode("utf-8")).digest() for k in keys), dtype=np.uint64)
        idx = self._index.reshape(-1, 4)
        return (idx[None, :, :] ^ d.reshape(-1, 1, 4)).reshape(len(keys), self._words)

    def fill_many(self, keys: Sequence[str], pages: np.ndarray) -> None:
        """:meth:`fill` for each key into the rows of ``pages`` (uint8, shape ``(len(keys), page_bytes)``),
        vectorised over pages in slices of about :attr:`BATCH_BYTES`."""
        if not self._batched():
            for key, page in zip(keys, pages):
                self.fill(key, page)
            return
        step = max(1, self.BATCH_BYTES // self.page_bytes)
        for a in range(0, len(keys), step):
            b = min(len(keys), a + step)
            pages[a:b].view(np.uint64)[:] = self._patterns(keys[a:b])

    def leading_matches(self, keys: Sequence[str], pages: np.ndarray) -> int:
        """How many leading rows of ``pages`` (uint8, ``(≥len(keys), page_bytes)``) hold exactly what
        :meth:`fill` writes for the same-index key: the index of the first mismatch, or ``len(keys)``."""
        if not self._batched():
            for i, key in enumerate(keys):
                if not self.matches(key, pages[i]):
                    return i
            return len(keys)
        step = max(1, self.BATCH_BYTES // self.page_bytes)
        for a in range(0, len(keys), step):
            b = min(len(keys), a + step)
            ok = (pages[a:b].view(np.uint64) == self._patterns(keys[a:b])).all(axis=1)
            if not ok.all():
                return a + int(np.argmin(ok))
        return len(keys)

    def matches(self, key: str, page: np.ndarray) -> bool:
        """True when ``page`` (uint8, ``page_bytes``) holds exactly the bytes :meth:`fill` writes for ``key``."""
        if page.size != self.page_bytes:
            return False
        expected = self._scratch
        self._pattern(key, expected)
        if not np.array_equal(page[: self._words * 8].view(np.uint64), expected):
            return False
        if self._tail:
            tail = np.frombuffer(hashlib.sha256(key.encode()).digest(), np.uint8)[: self._tail]
            return bool(np.array_equal(page[self._words * 8 :], tail))
        return True
