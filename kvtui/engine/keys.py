"""KV page keys: the SHA-256 hash chain of the Go paged-KV connector (Mooncake PR #2800).

Source: ``kvcache-ai/Mooncake`` ``mooncake-store/go/ollama/prefix`` and ``mooncake-store/go/pagedkv/prefix``::

    seed  = SHA256(domain || model)
    h[i]  = SHA256(h[i-1] || tokens of page i, each a big-endian uint32)     (h[-1] = seed)
    key_i = "<namespace>/<model>/" + hex(h[i][:16])

Token ids are ``int32`` in the Go code: every id in ``-2**31 .. 2**31 - 1`` is accepted, and a negative id
is hashed as its two's-complement ``uint32`` (``-1`` → ``ff ff ff ff``). The model may be any string, the
empty one included (the key path then has an empty segment: ``mc/ollama//<hex>``).

Only full pages are keyed; a trailing partial page has no key. A shared token prefix gives identical keys
(pages are reusable across requests); any earlier divergence changes every later key. Keys never depend on
``hash()``, ``PYTHONHASHSEED`` or dict/set order; model and namespace are encoded as UTF-8 exactly as given.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

TOKEN_MIN = -(2**31)
TOKEN_MAX = 2**31 - 1
"""The token ids the Go connector accepts: its token ids are ``int32``."""


@dataclass(frozen=True)
class KeyScheme:
    """One key scheme of the Go connector: the hash-chain domain string and the default key namespace."""

    name: str
    domain: bytes
    namespace: str


SCHEMES: dict[str, KeyScheme] = {
    "ollama": KeyScheme("ollama", b"mooncake-ollama-kv\x00", "mc/ollama"),
    "pagedkv": KeyScheme("pagedkv", b"mooncake-paged-kv\x00", "mc/pagedkv"),
}


def token_array(tokens: Sequence[int] | np.ndarray) -> np.ndarray:
    """Return ``tokens`` as the bytes the hash chain reads: a 1-D big-endian uint32 array (shape ``(n,)``),
    each negative id as its two's-complement ``uint32``.

    Raises ``ValueError`` if a token id is not an integer or lies outside ``int32`` (``TOKEN_MIN ..
    TOKEN_MAX``), as the Go connector's ``int32`` token ids do.
    """
    arr = np.asarray(tokens)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.size and arr.dtype.kind == "O" and all(isinstance(v, int) and not isinstance(v, bool) for v in arr):
        arr = np.array([max(TOKEN_MIN - 1, min(TOKEN_MAX + 1, v)) for v in arr], dtype=np.int64)  # ints beyond int64
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError("token ids must be integers")
    if arr.size and (int(arr.min()) < TOKEN_MIN or int(arr.max()) > TOKEN_MAX):
        raise ValueError(f"token ids must be in {TOKEN_MIN}..{TOKEN_MAX} (int32, as in the Go connector)")
    # big-endian int32 bytes are the two's-complement uint32 bytes; the view only renames the dtype
    return arr.astype(">i4", copy=False).view(">u4")


@dataclass(frozen=True)
class PageKeyer:
    """Computes page keys for one model, page size and scheme.

    ``page_tokens``: tokens per KV page (> 0). ``namespace``: overrides the scheme's default (``mc/ollama``
    or ``mc/pagedkv``); an empty string means the default, as in the Go connector's ``key_prefix``.
    """

    model: str
    page_tokens: int
    scheme: str = "ollama"
    namespace: str | None = None

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown key scheme {self.scheme!r} (choose from {', '.join(SCHEMES)})")
        if int(self.page_tokens) <= 0:
            raise ValueError(f"page tokens must be positive, got {self.page_tokens}")

    @property
    def prefix(self) -> str:
        """The key prefix ``"<namespace>/<model>/"`` shared by every page of this model."""
        ns = self.namespace or SCHEMES[self.scheme].namespace
        return f"{ns.rstrip('/')}/{self.model}/"

    def seed(self) -> bytes:
        """``SHA256(domain || model)``: the chain value before page 0 (32 bytes)."""
        return hashlib.sha256(SCHEMES[self.scheme].domain + self.model.encode("utf-8")).digest()

    def chain(self, tokens: Sequence[int] | np.ndarray) -> list[bytes]:
        """Return ``h[i]`` (32-byte digests) for every full page of ``tokens``."""
        be = token_array(tokens)
        n_pages = be.size // self.page_tokens
        data = be[: n_pages * self.page_tokens].tobytes()
        step = self.page_tokens * 4
        h = self.seed()
        out: list[bytes] = []
        sha = hashlib.sha256
        for i in range(n_pages):
            h = sha(h + data[i * step : (i + 1) * step]).digest()
            out.append(h)
        return out

    def keys(self, tokens: Sequence[int] | np.ndarray) -> list[str]:
        """Return one store key per full page of ``tokens`` (a trailing partial page has none)."""
        prefix = self.prefix
        return [prefix + h[:16].hex() for h in self.chain(tokens)]


def page_keys(
    tokens: Iterable[int] | np.ndarray,
    *,
    model: str,
    page_tokens: int,
    scheme: str = "ollama",
    namespace: str | None = None,
) -> list[str]:
    """Convenience wrapper: the page keys of ``tokens`` (see :class:`PageKeyer`)."""
    keyer = PageKeyer(model=model, page_tokens=page_tokens, scheme=scheme, namespace=namespace)
    return keyer.keys(tokens if isinstance(tokens, np.ndarray) else list(tokens))
