"""KV page layout and the deterministic page contents used for byte-exact verification.

``page_bytes = 2 · layers · kv_heads · head_dim · page_tokens · elem_bytes`` (K and V for every layer and
KV head; the demo card's layout). Page contents are derived from the page key, so any reader can check a
loaded page without talking to the writer: the page is the 32-byte ``SHA256(key)`` tiled over
``page_bytes`` with every 8-byte word XOR-ed with its word index (a shifted or truncated copy never matches).
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import asdict, dataclass, replace

from typing import Sequence

import numpy as np

_FIELDS = ("layers", "kv_heads", "head_dim", "page_tokens", "elem_bytes")


@dataclass(frozen=True)
class PageLayout:
    """Shape of one KV page. All fields are positive integers (``ValueError`` otherwise).

    ``layers``: transformer layers; ``kv_heads``: KV heads per layer; ``head_dim``: elements per head;
    ``page_tokens``: tokens per page; ``elem_bytes``: bytes per element (2 = fp16).
    """

    layers: int
    kv_heads: int
    head_dim: int
    page_tokens: int
    elem_bytes: int

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"layout field {name.replace('_', '-')} must be a positive integer, got {value!r}")

    @property
    def page_bytes(self) -> int:
        """Bytes of one KV page: ``2·layers·kv_heads·head_dim·page_tokens·elem_bytes``."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.page_tokens * self.elem_bytes

    @property
    def bytes_per_token(self) -> int:
        """KV bytes per token (``page_bytes / page_tokens``)."""
        return self.page_bytes // self.page_tokens

    def describe(self) -> str:
        """Human summary, e.g. ``28×4×128, 256 tok/page, 2 B/elem → 14.0 MiB/page``."""
        return (
            f"{self.layers}×{self.kv_heads}×{self.head_dim}, {self.page_tokens} tok/page, "
            f"{self.elem_bytes} B/elem → {format_bytes(self.page_bytes)}/page"
        )

    def as_dict(self) -> dict[str, int]:
        """Plain-data form (for JSON and worker messages)."""
        return asdict(self)


PRESETS: dict[str, PageLayout] = {
    # The demo card's layout: 28 layers × 4 KV heads × 128 head-dim, 256 tokens/page, fp16 → 14 MiB/page.
    "seed": PageLayout(28, 4, 128, 256, 2),
    # The PR example's tiny layout: 4 × 2 × 16, 8 tokens/page, fp16 → 4 KiB/page.
    "tiny": PageLayout(4, 2, 16, 8, 2),
}


def format_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'`` (binary units)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 1000**2, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1000**3, "gib": 1 << 30, "t": 1 << 40, "tb": 1000**4, "tib": 1 << 40}


def parse_bytes(text: str) -> int:
    """Parse a size such as ``1GiB``, ``512MB``, ``64m`` or ``4096`` into bytes (``ValueError`` if bad).

    ``K/M/G/T`` and ``KiB/MiB/GiB/TiB`` are powers of 1024; ``KB/MB/GB/TB`` are powers of 1000.
    """
    s = str(text).strip().replace(" ", "")
    i = len(s)
    while i and not s[i - 1].isdigit() and s[i - 1] != ".":
        i -= 1
    number, unit = s[:i], s[i:].lower()
    if unit not in _UNITS or not number:
        raise ValueError(f"not a size: {text!r} (use e.g. 1GiB, 512MiB, 4096)")
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"not a size: {text!r} (use e.g. 1GiB, 512MiB, 4096)") from None
    if value <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return int(value)


def add_layout_arguments(parser: argparse.ArgumentParser, default_preset: str = "seed") -> None:
    """Add ``--layout PRESET``, the per-field overrides and ``--model`` to a command's parser."""
    g = parser.add_argument_group("KV page layout")
    g.add_argument("--layout", choices=sorted(PRESETS), default=default_preset,
                   help=f"layout preset (default {default_preset}): seed = 28 layers × 4 KV heads × 128 head-dim, "
                        "256 tokens/page, fp16 (14 MiB/page); tiny = 4 × 2 × 16, 8 tokens/page, fp16 (4 KiB/page)")
    g.add_argument("--layers", type=int, metavar="N", help="override: transformer layers per page")
    g.add_argument("--kv-heads", type=int, metavar="N", help="override: KV heads per layer")
    g.add_argument("--head-dim", type=int, metavar="N", help="override: elements per head")
    g.add_argument("--page-tokens", type=int, metavar="TOKENS", help="override: tokens per KV page")
    g.add_argument("--elem-bytes", type=int, metavar="BYTES", help="override: bytes per element (2 = fp16)")
    g.add_argument("--model", default="demo-model", help="model name hashed into every page key (default demo-model)")


def layout_from_args(args: argparse.Namespace) -> PageLayout:
    """Build the layout from ``--layout`` plus overrides; ``ValueError`` on a non-positive field."""
    base = PRESETS[args.layout]
    overrides = {f: getattr(args, f) for f in _FIELDS if getattr(args, f, None) is not None}
    return replace(base, **overrides)


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
