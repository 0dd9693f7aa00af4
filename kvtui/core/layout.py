"""The KV page layout: the shape of one page, and the named presets.

``page_bytes = 2 · layers · kv_heads · head_dim · page_tokens · elem_bytes`` (K and V for every layer and
KV head), the formula of the demo card that the README quotes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kvtui.core.units import format_bytes

FIELDS = ("layers", "kv_heads", "head_dim", "page_tokens", "elem_bytes")


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
        for name in FIELDS:
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
