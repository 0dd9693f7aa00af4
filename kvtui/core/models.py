"""Model descriptions read from Hugging Face ``config.json`` data: the KV cache geometry of a model, and the
figures a prefill FLOPs estimate needs (layers, attention heads × head dim, non-embedding parameters).

Pure parsing: :func:`parse_model_config` takes the already-decoded JSON object (the command layer reads the
file) and raises :class:`ModelConfigError` (a ``ValueError``) whose message names the file and the field.

KV bytes per token, by attention kind (``attention``):

- ``MHA/GQA`` (also MQA): ``2 · num_hidden_layers · num_key_value_heads · head_dim · elem_bytes`` — a K and a V
  vector per KV head per layer. ``num_key_value_heads`` defaults to ``num_attention_heads`` (plain MHA),
  ``head_dim`` to ``hidden_size / num_attention_heads`` (Hugging Face ``LlamaConfig`` does the same).
- ``MLA`` (DeepSeek-V2/V3, a config with ``kv_lora_rank``): ``num_hidden_layers · (kv_lora_rank +
  qk_rope_head_dim) · elem_bytes`` — one compressed latent plus the decoupled RoPE key per layer, no separate K
  and V (DeepSeek-V2 paper, arXiv:2405.04434 §2.1; vLLM and SGLang cache exactly this latent).

``elem_bytes`` comes from ``torch_dtype`` (``dtype`` in newer files) unless a KV dtype overrides it (an fp8 KV
cache stores 1 byte per element whatever the weights are). Sliding-window and other per-layer attention
variants are not modelled: every layer counts as a full-attention layer. Configs of multimodal models whose
text model sits under ``text_config`` are read from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from types import MappingProxyType
from typing import Any

KV_DTYPES: dict[str, int] = {"fp8": 1, "fp16": 2, "bf16": 2, "fp32": 4}
"""KV element types a user can ask for (``--kv-dtype``) → bytes per element."""

TORCH_DTYPES: dict[str, str] = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32",
                                "float": "fp32", "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8",
                                "float8_e5m2": "fp8", "float8_e5m2fnuz": "fp8"}
"""``torch_dtype`` strings of config.json files → :data:`KV_DTYPES` names."""

MHA_RULE = "MHA/GQA: 2·layers·kv_heads·head_dim·bytes"
MLA_RULE = "MLA latent: layers·(kv_lora_rank+qk_rope_head_dim)·bytes"


class ModelConfigError(ValueError):
    """A config that cannot describe a model; the message is one line naming the file and the field."""


@dataclass(frozen=True)
class ModelSpec:
    """One model, as its config.json describes it. Integers are counts of layers, heads or elements.

    ``name``: hashed into page keys (a preset name, or derived from the file's path); ``source``: where the
    figures come from (the published config for presets, the path for files); ``attention``: ``MHA/GQA`` or
    ``MLA``; ``layers``: ``num_hidden_layers``; ``attention_heads``: ``num_attention_heads``; ``kv_heads``:
    ``num_key_value_heads`` (MLA: as published, unused for the KV bytes); ``head_dim``: elements per attention
    head (MLA: ``qk_nope_head_dim + qk_rope_head_dim``, the width queries and keys are dotted over);
    ``dtype``: a :data:`KV_DTYPES` name from ``torch_dtype``, or None when the file has none; ``kv_lora_rank``,
    ``qk_rope_head_dim``: the MLA latent (None for MHA/GQA); ``config``: the whole decoded object (read-only),
    for the fields a later estimate needs (``hidden_size``, ``intermediate_size``, ``vocab_size``, experts).
    """

    name: str
    source: str
    attention: str
    layers: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    dtype: str | None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    config: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_mla(self) -> bool:
        """True for a latent (MLA) KV cache."""
        return self.attention == "MLA"

    @property
    def rule(self) -> str:
        """The KV-bytes rule applied (:data:`MHA_RULE` or :data:`MLA_RULE`)."""
        return MLA_RULE if self.is_mla else MHA_RULE

    @property
    def kv_elems_per_layer(self) -> int:
        """KV elements one token stores per layer: ``2·kv_heads·head_dim`` or ``kv_lora_rank+qk_rope_head_dim``."""
        if self.is_mla:
            assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None  # set for every MLA model
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_heads * self.head_dim

    @property
    def attn_dim(self) -> int:
        """``attention_heads × head_dim`` (d_attn of the attention FLOPs ``2·L·d_attn·k²``)."""
        return self.attention_heads * self.head_dim

    @property
    def hidden_size(self) -> int | None:
        """``hidden_size`` of the config (None when absent)."""
        return _opt_int(self.config, "hidden_size")

    def kv_dtype(self, override: str | None = None) -> tuple[str, int]:
        """``(dtype name, bytes per element)`` of the KV cache: ``override`` (a :data:`KV_DTYPES` name) or the
        config's ``torch_dtype``; :class:`ModelConfigError` when neither is known."""
        name = override or self.dtype
        if name is None:
            raw = self.config.get("torch_dtype", self.config.get("dtype"))
            if raw is None:
                raise ModelConfigError(f"{self.source}: missing torch_dtype (or give --kv-dtype)")
            raise ModelConfigError(f"{self.source}: torch_dtype {raw!r} is not one of float16, bfloat16, float32, "
                                   "float8_* (give --kv-dtype)")
        if name not in KV_DTYPES:
            raise ModelConfigError(f"KV dtype {name!r} is not one of {', '.join(KV_DTYPES)}")
        return name, KV_DTYPES[name]

    def bytes_per_token(self, override: str | None = None) -> int:
        """KV bytes per token: ``layers · kv_elems_per_layer · elem_bytes``."""
        return self.layers * self.kv_elems_per_layer * self.kv_dtype(override)[1]

    def non_embedding_params(self) -> int | None:
        """Weights a token passes through outside the embedding and the LM head (for MoE models the *active*
        ones), or None when the config lacks a figure it needs or uses an MoE layout not modelled here.

        Per layer: attention projections (MHA/GQA: ``h·q + 2·h·kv + q·h`` with ``q = heads·head_dim``, ``kv =
        kv_heads·head_dim``; MLA: q (LoRA or not), ``kv_a``, ``kv_b`` and ``o`` projections of DeepSeek-V2) plus
        a gated MLP ``3·h·intermediate`` (MoE layers: ``(num_experts_per_tok + n_shared_experts)·3·h·
        moe_intermediate_size`` plus the router, DeepSeek style; Mixtral style ``num_local_experts``:
        ``num_experts_per_tok·3·h·intermediate_size``). Norms and biases are left out (< 0.1 %). Checks:
        Qwen2.5-7B 6.53 B (its model card), Llama-3.1-8B 6.98 B (+1.05 B embeddings = its 8.03 B),
        DeepSeek-V3 35.7 B (+1.85 B embeddings ≈ its 37 B activated).
        """
        c = self.config
        h, inter = _opt_int(c, "hidden_size"), _opt_int(c, "intermediate_size")
        if h is None:
            return None
        if self.is_mla:
            nope, v = _opt_int(c, "qk_nope_head_dim"), _opt_int(c, "v_head_dim")
            if nope is None or v is None:
                return None
            heads, rope, rank, q_rank = self.attention_heads, self.qk_rope_head_dim, self.kv_lora_rank, \
                _opt_int(c, "q_lora_rank")
            assert rope is not None and rank is not None  # set for every MLA model
            q = h * q_rank + q_rank * heads * (nope + rope) if q_rank else h * heads * (nope + rope)
            attn = q + h * (rank + rope) + rank * heads * (nope + v) + heads * v * h
        else:
            q, kv = self.attention_heads * self.head_dim, self.kv_heads * self.head_dim
            attn = 2 * h * q + 2 * h * kv
        experts = _opt_int(c, "n_routed_experts")
        if experts:  # DeepSeek MoE: the first first_k_dense_replace layers (and off-frequency ones) are dense
            moe_inter, top_k = _opt_int(c, "moe_intermediate_size"), _opt_int(c, "num_experts_per_tok")
            if moe_inter is None or top_k is None or inter is None:
                return None
            shared, first_dense = _opt_int(c, "n_shared_experts") or 0, _opt_int(c, "first_k_dense_replace") or 0
            freq = _opt_int(c, "moe_layer_freq") or 1
            moe_layers = sum(1 for i in range(self.layers) if i >= first_dense and i % freq == 0)
            moe_mlp = (top_k + shared) * 3 * h * moe_inter + h * experts
            return self.layers * attn + moe_layers * moe_mlp + (self.layers - moe_layers) * 3 * h * inter
        local_experts = _opt_int(c, "num_local_experts")
        if local_experts:  # Mixtral
            top_k = _opt_int(c, "num_experts_per_tok")
            if top_k is None or inter is None:
                return None
            return self.layers * (attn + top_k * 3 * h * inter + h * local_experts)
        if _opt_int(c, "num_experts") or inter is None:  # other MoE layouts (Qwen-MoE, …) are not modelled
            return None
        return self.layers * (attn + 3 * h * inter)


def parse_model_config(data: Any, name: str, source: str) -> ModelSpec:
    """A :class:`ModelSpec` from a decoded config.json object. ``source`` names the file in errors.

    Needs ``num_hidden_layers``, ``num_attention_heads``, and ``head_dim`` or ``hidden_size`` (MHA/GQA) or
    ``qk_rope_head_dim`` (MLA: a non-null ``kv_lora_rank``), each a positive integer, and for MHA/GQA a
    ``num_key_value_heads`` that divides ``num_attention_heads`` (each KV head serves an equal group of query
    heads, as grouped-query attention defines it: Ainslie et al., "GQA", 2023); ``ModelConfigError`` (e.g.
    ``llama.json: missing num_hidden_layers``) otherwise.
    """
    if not isinstance(data, Mapping):
        raise ModelConfigError(f"{source}: not a config.json object (the top level is a JSON {type(data).__name__})")
    if "num_hidden_layers" not in data and isinstance(data.get("text_config"), Mapping):
        top = {k: v for k, v in data.items() if k in ("torch_dtype", "dtype")}
        data = {**top, **data["text_config"]}
    layers = _req_int(data, "num_hidden_layers", source)
    heads = _req_int(data, "num_attention_heads", source)
    dtype = _dtype(data)
    config = MappingProxyType(dict(data))
    if data.get("kv_lora_rank") is not None:
        rank = _req_int(data, "kv_lora_rank", source)
        rope = _req_int(data, "qk_rope_head_dim", source)
        nope = _opt_pos_int(data, "qk_nope_head_dim", source)
        mla_head_dim = _opt_pos_int(data, "head_dim", source) or (nope + rope if nope else rope)
        kv_heads = _opt_pos_int(data, "num_key_value_heads", source) or heads
        return ModelSpec(name, source, "MLA", layers, heads, kv_heads, mla_head_dim, dtype, rank, rope, config)
    kv_heads = _opt_pos_int(data, "num_key_value_heads", source) or heads
    if kv_heads > heads or heads % kv_heads:  # GQA: each KV head serves a group of query heads
        raise ModelConfigError(f"{source}: num_key_value_heads {kv_heads} does not divide num_attention_heads "
                               f"{heads} (each KV head serves an equal group of attention heads)")
    head_dim = _opt_pos_int(data, "head_dim", source)
    if head_dim is None:
        if data.get("hidden_size") is None:
            raise ModelConfigError(f"{source}: missing head_dim (or hidden_size to derive it)")
        hidden = _req_int(data, "hidden_size", source)
        if hidden % heads:
            raise ModelConfigError(f"{source}: hidden_size {hidden} is not a multiple of num_attention_heads "
                                   f"{heads}; the config needs head_dim")
        head_dim = hidden // heads
    return ModelSpec(name, source, "MHA/GQA", layers, heads, kv_heads, head_dim, dtype, config=config)


def name_from_path(path: str) -> str:
    """The model name of a config file, hashed into page keys: the file's stem, or for ``…/config.json`` its
    folder's name; a Hugging Face cache snapshot ``models--ORG--NAME/snapshots/HASH/config.json`` → ``ORG/NAME``."""
    p = PurePath(path)
    if p.stem != "config":
        return p.stem
    folder = p.parent
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        return folder.parent.parent.name[len("models--"):].replace("--", "/")
    return folder.name or "model"


def _req_int(data: Mapping[str, Any], key: str, source: str) -> int:
    if data.get(key) is None:
        raise ModelConfigError(f"{source}: missing {key}")
    return _pos_int(data[key], key, source)


def _opt_pos_int(data: Mapping[str, Any], key: str, source: str) -> int | None:
    return None if data.get(key) is None else _pos_int(data[key], key, source)


def _pos_int(value: Any, key: str, source: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelConfigError(f"{source}: {key} must be a positive integer, got {value!r}")
    return value


def _opt_int(data: Mapping[str, Any], key: str) -> int | None:
    """A positive integer field of a parsed config, or None (absent, null, or not a positive integer)."""
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or int(value) != value:
        return None
    return int(value)


def _dtype(data: Mapping[str, Any]) -> str | None:
    """The :data:`KV_DTYPES` name of ``torch_dtype`` (``dtype``), or None when absent or not a known float type
    (:meth:`ModelSpec.kv_dtype` says which, unless ``--kv-dtype`` makes it moot)."""
    raw = data.get("torch_dtype", data.get("dtype"))
    return None if raw is None else TORCH_DTYPES.get(re.sub(r"^torch\.", "", str(raw).strip().lower()))
