"""``kvtui layout NAME|PATH``: the KV page layout of a model preset, a layout preset or a config.json file, and
what a prompt of a given length takes in pages and bytes (``--json``: the same figures as one JSON object)."""

from __future__ import annotations

import argparse
import json

from kvtui.config.layout import read_model_config
from kvtui.core.defaults import DEFAULT_PROMPT_PAGES
from kvtui.core.errors import KvtuiError
from kvtui.core.text import plural
from kvtui.core.units import format_bytes

DTYPE_OF_BYTES = {1: "fp8", 2: "fp16", 4: "fp32"}
"""Element type named for a layout preset without a model (``tiny``) or an ``--elem-bytes``-like size."""


def register(subparsers) -> None:
    """Add the ``layout`` subcommand."""
    from kvtui.core.layout import MODEL_PAGE_TOKENS, PRESETS
    from kvtui.core.models import KV_DTYPES

    p = subparsers.add_parser(
        "layout", help="bytes per token and per page of a model's KV cache (preset or config.json)",
        description="Read a model preset, a layout preset or a Hugging Face config.json and print its KV cache "
                    "layout: layers, KV heads, head dim, dtype, attention kind and the rule applied (MHA/GQA: "
                    "K and V per KV head; MLA: one latent per layer), bytes per token, bytes per page, and the "
                    "full pages and bytes of a prompt.")
    p.add_argument("source", metavar="NAME|PATH", help=f"a preset ({', '.join(PRESETS)}) or a config.json file")
    p.add_argument("--page-tokens", type=int, metavar="TOKENS",
                   help=f"tokens per KV page (default {MODEL_PAGE_TOKENS} for a model, the preset's for seed/tiny)")
    p.add_argument("--kv-dtype", choices=list(KV_DTYPES), metavar="|".join(KV_DTYPES),
                   help="KV cache element type (fp8 = 1 byte); default: the config's torch_dtype")
    p.add_argument("--prompt-tokens", type=int, metavar="TOKENS",
                   help=f"prompt length to count pages and bytes for (default {DEFAULT_PROMPT_PAGES} pages)")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.set_defaults(func=run)


def describe_layout(source: str, page_tokens: int | None, kv_dtype: str | None, prompt_tokens: int | None) -> dict:
    """The figures ``kvtui layout`` prints, as plain data (bytes, tokens, element counts); ``KvtuiError`` on
    a bad flag or config."""
    from dataclasses import replace

    from kvtui.core.layout import MODEL_PAGE_TOKENS, MODEL_PRESETS, PRESETS, model_layout, resolve_model
    from kvtui.core.models import KV_DTYPES, MHA_RULE, MLA_RULE, ModelConfigError

    for flag, value in (("--page-tokens", page_tokens), ("--prompt-tokens", prompt_tokens)):
        if value is not None and value < 1:
            raise KvtuiError(f"{flag} must be a positive number of tokens, got {value}")
    if source in PRESETS and source not in MODEL_PRESETS:  # seed, tiny: a layout (seed: Qwen2.5-7B's shape)
        model, layout = resolve_model(source), PRESETS[source]
        layout = replace(layout, page_tokens=page_tokens or layout.page_tokens,
                         elem_bytes=KV_DTYPES[kv_dtype] if kv_dtype else layout.elem_bytes)
        dtype = kv_dtype or DTYPE_OF_BYTES.get(layout.elem_bytes, f"{layout.elem_bytes}-byte")
        name, origin = source, "kvtui layout preset" + (f" (the KV shape of {model.name})" if model else "")
    else:
        from pathlib import Path

        if resolve_model(source) is None and not Path(source).is_file() and not Path(source).is_dir():
            raise KvtuiError(f"{source} is neither a preset ({', '.join(PRESETS)}) nor a file")
        model = read_model_config(source, flag="")
        try:
            dtype = model.kv_dtype(kv_dtype)[0]
            layout = model_layout(model, page_tokens or MODEL_PAGE_TOKENS, kv_dtype)
        except ModelConfigError as exc:
            raise KvtuiError(str(exc)) from None
        name, origin = model.name, model.source
    mla = layout.kv_factor == 1
    prompt = prompt_tokens if prompt_tokens is not None else DEFAULT_PROMPT_PAGES * layout.page_tokens
    pages = prompt // layout.page_tokens
    return {
        "name": name, "source": origin, "attention": layout.attention, "rule": MLA_RULE if mla else MHA_RULE,
        "layers": layout.layers, "attention_heads": model.attention_heads if model else None,
        "kv_heads": None if mla else layout.kv_heads,
        "head_dim": model.head_dim if model else layout.head_dim,
        "kv_lora_rank": model.kv_lora_rank if model and mla else None,
        "qk_rope_head_dim": model.qk_rope_head_dim if model and mla else None,
        "kv_elems_per_token_per_layer": layout.kv_factor * layout.kv_heads * layout.head_dim,
        "kv_dtype": dtype, "elem_bytes": layout.elem_bytes, "bytes_per_token": layout.bytes_per_token,
        "page_tokens": layout.page_tokens, "page_bytes": layout.page_bytes,
        "prompt_tokens": prompt, "pages": pages, "bytes": pages * layout.page_bytes,
        "tail_tokens": prompt - pages * layout.page_tokens, "layout": layout.as_dict(),
    }


def format_layout(d: dict) -> str:
    """The human table of :func:`describe_layout`'s figures."""
    mla = d["attention"] == "MLA"
    heads = f" ({d['attention_heads']} attention heads)" if d["attention_heads"] else ""
    if mla:
        geometry = [f"KV latent        {d['kv_lora_rank']} + {d['qk_rope_head_dim']} = "
                    f"{d['kv_elems_per_token_per_layer']} elements per layer{heads}; no per-head K and V"]
        product = f"{d['layers']} × {d['kv_elems_per_token_per_layer']} × {d['elem_bytes']}"
    else:
        geometry = [f"KV heads         {d['kv_heads']}{heads}", f"head dim         {d['head_dim']}"]
        product = f"2 × {d['layers']} × {d['kv_heads']} × {d['head_dim']} × {d['elem_bytes']}"
    tail = f" (+{plural(d['tail_tokens'], 'token')} short of a full page, not stored)" if d["tail_tokens"] else ""
    lines = [
        f"{d['name']}  {d['source']}",
        f"attention        {d['rule']}",
        f"layers           {d['layers']}",
        *geometry,
        f"KV dtype         {d['kv_dtype']}, {d['elem_bytes']} B/element",
        f"bytes per token  {d['bytes_per_token']:,} B = {product}",
        f"page             {d['page_tokens']:,} tokens → {_bytes(d['page_bytes'])}",
        f"prompt           {d['prompt_tokens']:,} tokens → {plural(d['pages'], 'full page')}, "
        f"{_bytes(d['bytes'])}{tail}",
    ]
    return "\n".join(lines)


def _bytes(n: int) -> str:
    """``n`` bytes exactly, with the binary-unit form beside it when that says more (``4,096 B (4.0 KiB)``,
    ``0 B``)."""
    return f"{n:,} B" + (f" ({format_bytes(n)})" if n >= 1024 else "")


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Print the layout (``--json``: as JSON); exit 0, or 2 on a bad config or flag."""
    d = describe_layout(args.source, args.page_tokens, args.kv_dtype, args.prompt_tokens)
    print(json.dumps(d, indent=2, ensure_ascii=False) if args.json else format_layout(d))
    return 0
