"""The shipped model presets: published Hugging Face ``config.json`` files (the fields that describe the
model; tokenizer ids, RoPE scaling and such are left out), each with the repository it was copied from.
:func:`kvtui.core.models.parse_model_config` reads these exactly as it reads a user's file.

KV bytes per token (:meth:`kvtui.core.models.ModelSpec.bytes_per_token`, at the file's bf16):
qwen2.5-7b 57,344 · llama-3.1-8b 131,072 · llama-3.1-70b 327,680 · mistral-7b 131,072 · deepseek-v3 70,272.
"""

from __future__ import annotations

from typing import Any

SOURCE = "{repo} config.json (https://huggingface.co/{repo})"

MODEL_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    # Qwen2.5-7B: 28 layers × 4 KV heads (GQA 7:1) × head_dim 3584/28 = 128 (the file has no head_dim).
    "qwen2.5-7b": ("Qwen/Qwen2.5-7B-Instruct", {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
        "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "max_position_embeddings": 32768, "max_window_layers": 28,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "use_sliding_window": False,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 152064}),
    # Llama-3.1-8B: 32 layers × 8 KV heads (GQA 4:1) × head_dim 4096/32 = 128.
    "llama-3.1-8b": ("meta-llama/Llama-3.1-8B-Instruct", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "attention_bias": False, "mlp_bias": False, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256}),
    # Llama-3.1-70B: 80 layers × 8 KV heads (GQA 8:1) × head_dim 8192/64 = 128.
    "llama-3.1-70b": ("meta-llama/Llama-3.1-70B-Instruct", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "attention_bias": False, "mlp_bias": False, "hidden_size": 8192, "intermediate_size": 28672,
        "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256}),
    # Mistral-7B v0.3: 32 layers × 8 KV heads × head_dim 4096/32 = 128 (the same KV shape as Llama-3.1-8B).
    "mistral-7b": ("mistralai/Mistral-7B-Instruct-v0.3", {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_act": "silu",
        "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 32768, "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 32768}),
    # DeepSeek-V3: MLA, 61 layers × one latent of kv_lora_rank 512 + qk_rope_head_dim 64 = 576 elements
    # (num_key_value_heads 128 is published but an MLA cache has no per-head K and V). Weights ship in fp8
    # (quantization_config), torch_dtype is bfloat16: the KV cache is bf16 unless --kv-dtype says otherwise.
    "deepseek-v3": ("deepseek-ai/DeepSeek-V3", {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_act": "silu",
        "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "v_head_dim": 128, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
        "first_k_dense_replace": 3, "moe_layer_freq": 1, "n_group": 8, "topk_group": 4,
        "num_nextn_predict_layers": 1, "max_position_embeddings": 163840, "rms_norm_eps": 1e-06,
        "rope_theta": 10000, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 129280}),
}
"""Preset name → (Hugging Face repository, its config.json fields)."""

MODEL_ALIASES: dict[str, str] = {"seed": "qwen2.5-7b"}
"""``seed``, the demo's layout (28 layers × 4 KV heads × 128, 2-byte elements), is Qwen2.5-7B's KV shape."""
