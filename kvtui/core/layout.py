"""The KV page layout: the shape of one page, the model presets and the named layout presets.

``page_bytes = kv_factor · layers · kv_heads · head_dim · page_tokens · elem_bytes``: ``kv_factor`` 2 is a K and
a V vector per KV head per layer (MHA/GQA, the formula of the demo card of Mooncake PR #2800); 1 is one MLA
latent per layer (``kv_heads`` 1, ``head_dim`` = ``kv_lora_rank + qk_rope_head_dim``). Model presets come from
:mod:`kvtui.core.model_presets` (published config.json files) through the same parser as a user's file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kvtui.core.model_presets import MODEL_ALIASES, MODEL_CONFIGS, SOURCE
from kvtui.core.models import ModelSpec, parse_model_config
from kvtui.core.units import format_bytes

FIELDS = ("layers", "kv_heads", "head_dim", "page_tokens", "elem_bytes")
"""The fields a command line can override (``--layers`` …); ``kv_factor`` follows the model."""

MODEL_PAGE_TOKENS = 256
"""Tokens per page of a model config without ``--page-tokens``: the seed layout's, and LMCache's default chunk."""


@dataclass(frozen=True)
class PageLayout:
    """Shape of one KV page. All fields are positive integers (``ValueError`` otherwise).

    ``layers``: transformer layers; ``kv_heads``: KV heads per layer; ``head_dim``: elements per head;
    ``page_tokens``: tokens per page; ``elem_bytes``: bytes per element (2 = fp16/bf16); ``kv_factor``: 2 (a K
    and a V per head, MHA/GQA) or 1 (one latent per layer, MLA: ``kv_heads`` 1, ``head_dim`` the latent width).
    """

    layers: int
    kv_heads: int
    head_dim: int
    page_tokens: int
    elem_bytes: int
    kv_factor: int = 2

    def __post_init__(self) -> None:
        for name in FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"layout field {name.replace('_', '-')} must be a positive integer, got {value!r}")
        if self.kv_factor not in (1, 2) or isinstance(self.kv_factor, bool):
            raise ValueError(f"layout field kv-factor must be 1 (MLA latent) or 2 (K and V), got {self.kv_factor!r}")

    @property
    def page_bytes(self) -> int:
        """Bytes of one KV page: ``kv_factor·layers·kv_heads·head_dim·page_tokens·elem_bytes``."""
        return self.kv_factor * self.layers * self.kv_heads * self.head_dim * self.page_tokens * self.elem_bytes

    @property
    def bytes_per_token(self) -> int:
        """KV bytes per token (``page_bytes / page_tokens``)."""
        return self.page_bytes // self.page_tokens

    @property
    def attention(self) -> str:
        """``MHA/GQA`` (``kv_factor`` 2) or ``MLA`` (1)."""
        return "MHA/GQA" if self.kv_factor == 2 else "MLA"

    def describe(self) -> str:
        """Human summary, e.g. ``28×4×128, 256 tok/page, 2 B/elem → 14.0 MiB/page`` (MLA: ``61×576 MLA latent, …``)."""
        shape = f"{self.layers}×{self.kv_heads}×{self.head_dim}" if self.kv_factor == 2 else \
            f"{self.layers}×{self.kv_heads * self.head_dim} MLA latent"
        return (f"{shape}, {self.page_tokens} tok/page, {self.elem_bytes} B/elem → "
                f"{format_bytes(self.page_bytes)}/page")

    def as_dict(self) -> dict[str, int]:
        """Plain-data form (for JSON and worker messages; ``PageLayout(**d)`` rebuilds it)."""
        return asdict(self)


def model_layout(model: ModelSpec, page_tokens: int = MODEL_PAGE_TOKENS, kv_dtype: str | None = None) -> PageLayout:
    """The page layout of ``model``: MHA/GQA ``(layers, kv_heads, head_dim)`` with K and V; MLA ``(layers, 1,
    kv_lora_rank + qk_rope_head_dim)`` with one latent. ``kv_dtype`` (a :data:`kvtui.core.models.KV_DTYPES`
    name) overrides the config's ``torch_dtype``; ``ModelConfigError`` when neither gives the element size,
    ``ValueError`` on non-positive ``page_tokens``."""
    elem = model.kv_dtype(kv_dtype)[1]
    if model.is_mla:
        return PageLayout(model.layers, 1, model.kv_elems_per_layer, page_tokens, elem, kv_factor=1)
    return PageLayout(model.layers, model.kv_heads, model.head_dim, page_tokens, elem)


MODEL_PRESETS: dict[str, ModelSpec] = {
    name: parse_model_config(cfg, name, SOURCE.format(repo=repo)) for name, (repo, cfg) in MODEL_CONFIGS.items()
}
"""Shipped models by preset name (``--model-config NAME``), parsed from :data:`MODEL_CONFIGS`."""

PRESETS: dict[str, PageLayout] = {
    # The demo card's layout: 28 layers × 4 KV heads × 128 head-dim, 256 tokens/page, fp16 → 14 MiB/page,
    # which is Qwen2.5-7B's KV shape (MODEL_ALIASES).
    "seed": model_layout(MODEL_PRESETS[MODEL_ALIASES["seed"]], 256, "fp16"),
    # The PR example's tiny layout: 4 × 2 × 16, 8 tokens/page, fp16 → 4 KiB/page.
    "tiny": PageLayout(4, 2, 16, 8, 2),
    # Every model preset at MODEL_PAGE_TOKENS tokens per page in its config's dtype.
    **{name: model_layout(model) for name, model in MODEL_PRESETS.items()},
}
"""Layout presets by name: ``--layout``, the monitor's palette and its layout switch read this one table."""


def preset_summaries() -> dict[str, str]:
    """Layout preset name → one-line summary for the palette, e.g. ``llama-3.1-8b`` → ``meta-llama/Llama-3.1-8B-
    Instruct: 32×8×128, 256 tok/page, 2 B/elem → 32.0 MiB/page``."""
    def origin(name: str) -> str:
        model = MODEL_ALIASES.get(name, name)
        repo = MODEL_CONFIGS[model][0] if model in MODEL_CONFIGS else None
        return f"{repo}{' shape' if name in MODEL_ALIASES else ''}: " if repo else ""

    return {name: origin(name) + layout.describe() for name, layout in PRESETS.items()}


def resolve_model(name: str) -> ModelSpec | None:
    """The model preset called ``name`` (or an alias of one, e.g. ``seed``), None if there is none."""
    return MODEL_PRESETS.get(MODEL_ALIASES.get(name, name))
