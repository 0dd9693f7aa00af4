"""The KV page layout, the model hashed into the page keys and the key scheme: ``--layout`` or
``--model-config`` (with ``--kv-dtype``), the per-field overrides, ``--model``, ``--scheme``, ``--key-prefix``."""

from __future__ import annotations

import argparse
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from kvtui.core.defaults import DEFAULT_MODEL
from kvtui.core.errors import KvtuiError
from kvtui.core.layout import FIELDS, MODEL_PAGE_TOKENS, MODEL_PRESETS, PRESETS, PageLayout, model_layout, resolve_model
from kvtui.core.models import KV_DTYPES, ModelConfigError, ModelSpec, name_from_path, parse_model_config

SCHEMES = ("ollama", "pagedkv")
"""Page key schemes (:mod:`kvtui.engine.keys`)."""

FLAG_OF_FIELD = {"prompt_tokens": "--prompt-tokens", "output_tokens": "--output-tokens", "page_tokens": "--page-tokens",
                 "seed": "--seed", "overlap": "--overlap", "pool": "--pool", "rate": "--rate", "scenario": "--scenario"}
"""The flag that sets each ``workload.WorkloadSpec`` or layout field a user can reach."""


def flag_message(text: str) -> str:
    """A ``workload`` or layout ``ValueError`` text with the field it starts with named by its flag:
    ``prompt_tokens must be …`` → ``--prompt-tokens must be …``, ``layout field page-tokens must …`` →
    ``--page-tokens must …``, ``unknown scenario …`` → ``unknown --scenario …``."""
    text = re.sub(r"^layout field ([a-z][a-z-]*)", r"--\1", text)
    m = re.match(r"^(unknown )?([a-z_]+)\b", text)
    if m and m.group(2) in FLAG_OF_FIELD:
        return text[: m.start(2)] + FLAG_OF_FIELD[m.group(2)] + text[m.end(2):]
    return text


@dataclass(frozen=True)
class LayoutPlan:
    """The pages of a run. ``layout``: the KV page layout; ``name``: its preset name, the model's name
    (``--model-config``, whatever ``--page-tokens`` and ``--kv-dtype`` say) or ``custom`` when a field flag
    changed it; ``model``: the name hashed into every page key; ``model_spec``: the ``--model-config`` model
    (None otherwise); ``scheme`` and ``key_prefix``: the page key scheme and namespace (None: the scheme's)."""

    layout: PageLayout
    name: str
    model: str
    model_spec: ModelSpec | None = None
    scheme: str = "ollama"
    key_prefix: str | None = None


def add_layout_arguments(parser: argparse.ArgumentParser, default_preset: str | None = "seed",
                         layout_help: str | None = None, model_help: str | None = None) -> None:
    """Add ``--layout PRESET`` or ``--model-config NAME|PATH``, ``--kv-dtype``, the per-field overrides and
    ``--model`` to a command's parser (``default_preset`` None: the command has a layout of its own unless
    ``--layout`` is given; ``layout_help`` / ``model_help`` replace those flags' help)."""
    g = parser.add_argument_group("KV page layout")
    which = g.add_mutually_exclusive_group()
    which.add_argument("--layout", choices=list(PRESETS), default=default_preset,
                       help=layout_help or (
                           f"layout preset (default {default_preset}): seed = 28 layers × 4 KV heads × 128 head-dim, "
                           "256 tokens/page, fp16 (14 MiB/page, Qwen2.5-7B's shape); tiny = 4 × 2 × 16, 8 tokens/page, "
                           "fp16 (4 KiB/page); or a model preset's layout at 256 tokens/page (`kvtui layout NAME`)"))
    which.add_argument("--model-config", metavar="NAME|PATH",
                       help=f"the KV layout of a model: a preset ({', '.join(MODEL_PRESETS)}) or a Hugging Face "
                            f"config.json; {MODEL_PAGE_TOKENS} tokens/page unless --page-tokens, and its name is "
                            "hashed into the page keys unless --model")
    g.add_argument("--kv-dtype", choices=list(KV_DTYPES), metavar="|".join(KV_DTYPES),
                   help="KV cache element type (fp8 = 1 byte, fp16/bf16 = 2, fp32 = 4); default: the config's "
                        "torch_dtype, or the preset's")
    g.add_argument("--layers", type=int, metavar="N",
                   help="override: transformer layers per page (default: the --layout or --model-config one's)")
    g.add_argument("--kv-heads", type=int, metavar="N", help="override: KV heads per layer (default: the layout's)")
    g.add_argument("--head-dim", type=int, metavar="N", help="override: elements per head (default: the layout's)")
    g.add_argument("--page-tokens", type=int, metavar="TOKENS",
                   help="override: tokens per KV page (default: the layout's)")
    g.add_argument("--elem-bytes", type=int, metavar="BYTES",
                   help="override: bytes per element (2 = fp16; default: the layout's)")
    g.add_argument("--model", default=None, help=model_help or (
        f"model name hashed into every page key (default: the --model-config name, else {DEFAULT_MODEL})"))


def add_page_arguments(p: argparse.ArgumentParser, default_layout: str = "seed") -> None:
    """Layout preset + overrides + model + key scheme."""
    add_layout_arguments(p, default_layout)
    p.add_argument("--scheme", choices=SCHEMES, default="ollama", help="page key scheme (default ollama)")
    p.add_argument("--key-prefix", default=None, metavar="NAMESPACE",
                   help="key namespace (default mc/ollama or mc/pagedkv by scheme)")


def read_model_config(text: str, flag: str = "--model-config") -> ModelSpec:
    """The :class:`~kvtui.core.models.ModelSpec` of ``text``: a model preset name (or alias, e.g. ``seed``),
    else a config.json path, or a model folder holding one (as a Hugging Face download or snapshot).
    ``KvtuiError`` (one line, after ``flag: `` when ``flag``, naming the file, and the field when one is
    missing or bad) if it is neither, cannot be read, is not JSON or does not describe a model."""
    at = f"{flag}: " if flag else ""
    preset = resolve_model(text)
    if preset is not None:
        return preset
    path = Path(text)
    if path.is_dir() and (path / "config.json").is_file():  # a Hugging Face model folder: its config.json
        path = path / "config.json"
        text = str(path)
    if not path.is_file():
        if path.is_dir():
            raise KvtuiError(f"{at}{text} is a folder without a config.json; give a model's config.json")
        hint = f" (it is a layout preset: --layout {text})" if text in PRESETS and flag else ""
        raise KvtuiError(f"{at}{text} is neither a model preset ({', '.join(MODEL_PRESETS)}) nor a file{hint}")
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KvtuiError(f"{at}cannot read {text} ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise KvtuiError(f"{at}{text} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    try:
        # `layout .`: the folder's name; abspath, not resolve: a Hugging Face snapshot's config.json is a link
        # into blobs/
        return parse_model_config(data, name_from_path(os.path.abspath(path)), text)
    except ModelConfigError as exc:
        raise KvtuiError(f"{at}{exc}") from None


def layout_name(layout: PageLayout, preset: str | None, model: ModelSpec | None) -> str:
    """The preset name of ``layout`` (``preset``: the ``--layout`` given), the model's name (``model``:
    ``--model-config``'s, whatever the page size and element size), or ``custom`` when a field flag changed
    it."""
    if model is not None:
        shape = model_layout(model, layout.page_tokens, "fp16")  # the element size is the user's to choose
        return model.name if replace(shape, elem_bytes=layout.elem_bytes) == layout else "custom"
    return preset if preset is not None and PRESETS.get(preset) == layout else "custom"


def field_overrides(args: argparse.Namespace) -> dict[str, int]:
    """The per-field flags given (``--layers``, ``--page-tokens``…), by :data:`kvtui.core.layout.FIELDS` name."""
    return {f: getattr(args, f) for f in FIELDS if getattr(args, f, None) is not None}


def layout_from_args(args: argparse.Namespace, preset: str | None = None) -> LayoutPlan:
    """The :class:`LayoutPlan` of the flags: ``--layout`` (or ``preset`` when given) or ``--model-config``
    (and ``--kv-dtype``) plus the field overrides. ``KvtuiError`` (one line naming the flag) on a
    non-positive field or a config that cannot be used."""
    kv_dtype = getattr(args, "kv_dtype", None)
    preset = preset if preset is not None else getattr(args, "layout", None)
    model = None
    if kv_dtype and getattr(args, "elem_bytes", None) is not None:
        raise KvtuiError("--kv-dtype and --elem-bytes both set the element size; give one")
    if getattr(args, "model_config", None):
        model = read_model_config(args.model_config)
        try:
            # --page-tokens applies below; so does --elem-bytes (then any dtype gives the shape)
            shape_dtype = kv_dtype or ("fp16" if getattr(args, "elem_bytes", None) is not None else None)
            base = model_layout(model, MODEL_PAGE_TOKENS, shape_dtype)
        except ModelConfigError as exc:
            raise KvtuiError(f"--model-config: {exc}") from None
    else:
        base = PRESETS[preset or "seed"]
        if kv_dtype:
            base = replace(base, elem_bytes=KV_DTYPES[kv_dtype])
    try:
        layout = replace(base, **field_overrides(args))
    except ValueError as exc:
        raise KvtuiError(flag_message(str(exc))) from None
    given_model = getattr(args, "model", None)
    return LayoutPlan(layout=layout, name=layout_name(layout, preset, model),
                      model=given_model if given_model is not None else (model.name if model else DEFAULT_MODEL),
                      model_spec=model, scheme=getattr(args, "scheme", "ollama"),
                      key_prefix=getattr(args, "key_prefix", None))
