"""The prefill time a reload saves, estimated: the one definition of the formula, the GPU table and its inputs.

Pure: no I/O, no engine; :class:`TtftEstimator` turns the tokens a request reloaded instead of computing
(``k``) into the time its prefill would have taken on a GPU.

**Prefill FLOPs of the skipped prefix** of ``k`` tokens (a causal decoder, forward pass only)::

    FLOPs(k) ≈ 2·P·k + 2·L·d_attn·k²

``P``: non-embedding parameters a token passes through (MoE: the active ones,
:meth:`kvtui.core.models.ModelSpec.non_embedding_params`); ``L``: layers; ``d_attn`` = attention heads ×
head dim. ``2·P`` per token is one multiply-add per weight (Kaplan et al. 2020, "Scaling Laws for Neural
Language Models", arXiv:2001.08361, §2.1 and Table 1: C_forward ≈ 2N + 2·n_layer·n_ctx·d_attn). Attention
scores and the weighted sum of values cost ``4·L·d_attn·n`` FLOPs for a token attending to ``n`` others
(PaLM, Chowdhery et al. 2022, arXiv:2204.02311, Appendix B: 6N + 12·L·H·Q·T per token for training, one third
of it forward); with a causal mask token ``i`` attends to ``i`` tokens, so the prefix costs
``Σ 4·L·d_attn·i ≈ 2·L·d_attn·k²``, the causal half of ``4·L·d_attn·k²``. Embedding look-ups, norms, softmax and
the LM head (a prefix needs no logits) are left out.

**Time** = FLOPs ÷ (peak × MFU): ``peak`` is the GPU's dense BF16 tensor rate from the vendor's datasheet
(:data:`GPUS`, each entry names its datasheet), ``MFU`` (model FLOPs utilisation, PaLM §4) the share of that
peak a prefill reaches. :data:`DEFAULT_MFU` 0.4: a long prefill is compute-bound, and well-tuned engines and
training runs report 40–50 % of dense peak (PaLM 540B: 46.2 %); short prompts reach less, so 0.4 errs low.
Or ``--prefill-tokens-per-s R``, the user's own measured prefill rate: time = ``k / R``. One GPU runs the
prefill: a model served over N GPUs (tensor parallel) prefills about N× faster at the same MFU (the TTFT
saved shrinks ~N×; the GPU-seconds stay).

Limits: MoE routing and expert imbalance are not modelled (P counts the active experts' weights only), the
attention term is approximate (MLA: d_attn uses the query-key head dim), and MFU is an assumption.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypedDict

from kvtui.metrics.summary import TtftInputs, TtftSaved

if TYPE_CHECKING:
    from kvtui.core.models import ModelSpec

FORMULA = "FLOPs ≈ 2·P·k + 2·L·d_attn·k² (causal prefill of k tokens); time = FLOPs ÷ (peak × MFU)"
RATE_FORMULA = "time = k ÷ R (measured prefill tokens/s)"
SAVED = ("TTFT saved = recompute time (estimate) − measured reload time (probe + read) of each request that "
         "reloaded at least one page; prefill GPU time saved = Σ recompute time")
NO_MODEL = "no model: TTFT estimate off"


@dataclass(frozen=True)
class GpuProfile:
    """One GPU: ``key`` (``--gpu``), ``name``, ``peak_tflops`` (dense BF16 tensor TFLOPS, 10^12 FLOP/s) and
    ``source`` (the vendor datasheet the figure comes from, and how)."""

    key: str
    name: str
    short: str
    peak_tflops: float
    source: str


GPUS: dict[str, GpuProfile] = {g.key: g for g in (
    GpuProfile("h100", "NVIDIA H100 SXM", "H100", 989.0,
               "NVIDIA H100 Tensor Core GPU datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity (H100 SXM) "
               "→ 989 dense"),
    GpuProfile("h100-pcie", "NVIDIA H100 PCIe", "H100 PCIe", 756.0,
               "NVIDIA H100 Tensor Core GPU datasheet: BF16 Tensor Core 1,513 TFLOPS with sparsity (H100 PCIe) "
               "→ 756 dense"),
    GpuProfile("h200", "NVIDIA H200 SXM", "H200", 989.0,
               "NVIDIA H200 Tensor Core GPU datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity (H200 SXM) "
               "→ 989 dense"),
    GpuProfile("a100", "NVIDIA A100 SXM", "A100", 312.0,
               "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS (624 with sparsity)"),
    GpuProfile("l40s", "NVIDIA L40S", "L40S", 362.05,
               "NVIDIA L40S GPU datasheet: BF16 Tensor Core 362.05 TFLOPS (733 with sparsity)"),
    GpuProfile("l4", "NVIDIA L4", "L4", 121.0,
               "NVIDIA L4 Tensor Core GPU datasheet: BF16 Tensor Core 242 TFLOPS with sparsity → 121 dense"),
    GpuProfile("b200", "NVIDIA B200 (HGX)", "B200", 2250.0,
               "NVIDIA HGX B200 datasheet: FP16/BF16 Tensor Core 4.5 PFLOPS per GPU with sparsity → 2,250 dense"),
    GpuProfile("mi300x", "AMD Instinct MI300X", "MI300X", 1307.4,
               "AMD Instinct MI300X accelerator datasheet: peak BF16 1,307.4 TFLOPS dense (2,614.9 with sparsity)"),
)}
"""GPU profiles by ``--gpu`` key: peak dense BF16 tensor TFLOPS, each from the named vendor datasheet."""

DEFAULT_GPU = "h100"
DEFAULT_MFU = 0.4
"""The MFU an estimate assumes without ``--mfu`` (see the module docstring for why 0.4)."""


def prefill_flops(k: int, params: float, layers: int, attn_dim: int) -> float:
    """FLOPs of a causal prefill of ``k`` tokens: ``2·params·k + 2·layers·attn_dim·k²`` (module docstring:
    Kaplan et al. 2020 Table 1, PaLM Appendix B). ``ValueError`` if ``k`` is negative."""
    if k < 0:
        raise ValueError(f"tokens must be ≥ 0, got {k}")
    return 2.0 * params * k + 2.0 * layers * attn_dim * float(k) * float(k)


@dataclass(frozen=True)
class PrefillModel:
    """What the FLOPs formula needs of a model: ``name``, ``params`` (P, non-embedding, MoE: active),
    ``layers`` (L), ``attn_dim`` (d_attn = attention heads × head dim), ``source`` (where they come from)."""

    name: str
    params: int
    layers: int
    attn_dim: int
    source: str = ""

    @classmethod
    def of(cls, spec: ModelSpec, name: str | None = None) -> "PrefillModel | None":
        """The figures of a :class:`~kvtui.core.models.ModelSpec` (None when its P is unknown: an MoE layout
        not modelled, or a config without ``intermediate_size``); ``name`` overrides the spec's."""
        params = spec.non_embedding_params()
        if params is None:
            return None
        return cls(name or spec.name, int(params), spec.layers, spec.attn_dim, spec.source)


@dataclass(frozen=True)
class TtftEstimator:
    """Recompute time of ``k`` skipped tokens: FLOPs(k) ÷ (``gpu.peak_tflops``·10^12 × ``mfu``) on ``model``,
    or ``k / tokens_per_s`` when the user gave a measured prefill rate. ``off``: why there is no estimate
    (then :attr:`active` is False and :meth:`recompute_ms` raises ``ValueError``); ``layout``: the page layout
    name the model was chosen for (``seed`` → ``qwen2.5-7b``, its shape)."""

    gpu: GpuProfile
    mfu: float = DEFAULT_MFU
    model: PrefillModel | None = None
    tokens_per_s: float | None = None
    off: str = ""
    layout: str = ""

    def __post_init__(self) -> None:
        if not (0 < self.mfu <= 1):
            raise ValueError(f"mfu must be within (0, 1], got {self.mfu!r}")
        if self.tokens_per_s is not None and not (self.tokens_per_s > 0):
            raise ValueError(f"prefill tokens per second must be positive, got {self.tokens_per_s!r}")

    @property
    def active(self) -> bool:
        """True when :meth:`recompute_ms` has what it needs (a measured rate, or a model with known P)."""
        return self.tokens_per_s is not None or self.model is not None

    def recompute_ms(self, k: int) -> float:
        """Milliseconds the prefill of ``k`` tokens would take: ``k / R`` or FLOPs(k) ÷ (peak × MFU)."""
        if self.tokens_per_s is not None:
            return 1e3 * k / self.tokens_per_s
        if self.model is None:
            raise ValueError(self.off or NO_MODEL)
        m = self.model
        return 1e3 * prefill_flops(k, m.params, m.layers, m.attn_dim) / (self.gpu.peak_tflops * 1e12 * self.mfu)

    @property
    def short(self) -> str:
        """The basis in a few words, for a chip: ``H100 @ 40 % MFU`` or ``12,000 tok/s measured``."""
        if self.tokens_per_s is not None:
            return f"{self.tokens_per_s:,.0f} tok/s measured"
        return f"{self.gpu.short} @ {round(self.mfu * 100):g} % MFU"

    @property
    def basis(self) -> str:
        """The basis in one line: ``llama-3.1-8b on NVIDIA H100 SXM (989 TFLOPS bf16) @ 40 % MFU``, ``prefill
        at 12,000 tok/s (measured, --prefill-tokens-per-s)``, or :attr:`off`."""
        if self.tokens_per_s is not None:
            return f"prefill at {self.tokens_per_s:,.0f} tok/s (measured, --prefill-tokens-per-s)"
        if self.model is None:
            return self.off or NO_MODEL
        shape = f" ({self.layout}'s shape)" if self.layout and self.layout != self.model.name else ""
        return (f"{self.model.name}{shape} on {self.gpu.name} ({self.gpu.peak_tflops:g} TFLOPS dense bf16) "
                f"@ {round(self.mfu * 100):g} % MFU")

    def inputs(self) -> TtftInputs:
        """The inputs an output names (``ttft_estimate`` of the JSON outputs): model figures, GPU, MFU or
        the measured rate, the formula, and ``off`` when there is no estimate."""
        d: TtftInputs = {"basis": self.basis, "saved": SAVED}
        if not self.active:
            return {**d, "off": self.off or NO_MODEL}
        if self.tokens_per_s is not None:
            return {**d, "prefill_tokens_per_s": self.tokens_per_s, "formula": RATE_FORMULA,
                    "model": self.model.name if self.model else None}
        m = self.model
        assert m is not None  # active without a measured rate: a model
        return {**d, "formula": FORMULA, "model": m.name, "model_source": m.source, "params_non_embedding": m.params,
                "layers": m.layers, "attn_dim": m.attn_dim, "gpu": self.gpu.key, "gpu_name": self.gpu.name,
                "peak_tflops_bf16_dense": self.gpu.peak_tflops, "peak_source": self.gpu.source, "mfu": self.mfu}

    def for_layout(self, name: str, spec: ModelSpec | None = None) -> TtftEstimator:
        """The same GPU, MFU and measured rate for page layout ``name``: the model is ``spec`` (a
        :class:`~kvtui.core.models.ModelSpec`) or the model preset the layout is the shape of (``seed`` →
        ``qwen2.5-7b``; :func:`kvtui.core.layout.resolve_model`); none for ``tiny`` and ``custom``."""
        from kvtui.core.layout import resolve_model

        if name == "custom":  # a field flag changed the shape: it is no model's any more
            spec = None
        elif spec is None:
            spec = resolve_model(name)
        model = PrefillModel.of(spec) if spec is not None else None
        off = ""
        if model is None:
            off = NO_MODEL if spec is None else (f"{spec.name}: its non-embedding parameters are unknown (an MoE "
                                                 "layout not modelled, or no intermediate_size): TTFT estimate off")
        return replace(self, model=model, off=off, layout=name)


def make_estimator(layout_name: str, spec: ModelSpec | None = None, gpu: str = DEFAULT_GPU, mfu: float = DEFAULT_MFU,
                   tokens_per_s: float | None = None) -> TtftEstimator:
    """The estimator of a run: page layout ``layout_name`` (``custom`` when a field flag changed it),
    ``spec`` the ``--model-config`` model (or None), ``gpu`` a :data:`GPUS` key, ``mfu`` in (0, 1],
    ``tokens_per_s`` > 0 or None. ``ValueError`` (one line) for an unknown GPU or a value out of range."""
    if gpu not in GPUS:
        raise ValueError(f"unknown GPU {gpu!r} (choose from {', '.join(GPUS)})")
    return TtftEstimator(GPUS[gpu], mfu, tokens_per_s=tokens_per_s).for_layout(layout_name, spec)


class ReloadEstimate(TypedDict):
    """:func:`reload_estimate`'s figures (``kvtui bench``): the TTFT estimate's ``ttft_estimate`` inputs,
    ``recompute_ms``, ``ttft_saved_ms``, ``prefill_gpu_s_saved`` (s) and ``reload_vs_recompute``; the figures are
    None when the estimate is off."""

    ttft_estimate: TtftInputs
    recompute_ms: float | None
    ttft_saved_ms: TtftSaved | None
    prefill_gpu_s_saved: float | None
    reload_vs_recompute: float | None


def reload_estimate(est: TtftEstimator, k: int, reload_ms: list[float]) -> ReloadEstimate:
    """The TTFT figures of ``len(reload_ms)`` reloads of the same ``k``-token prefix (``kvtui bench``), in the
    fields of the run summary: ``ttft_saved_ms`` {total, p50, p99, count} (recompute − each reload, ms),
    ``prefill_gpu_s_saved`` (s), ``reload_vs_recompute`` (mean reload ÷ recompute), ``recompute_ms`` and
    ``ttft_estimate`` (:meth:`TtftEstimator.inputs`). The figures are None when the estimate is off."""
    out: ReloadEstimate = {"ttft_estimate": est.inputs(), "recompute_ms": None, "ttft_saved_ms": None,
                           "prefill_gpu_s_saved": None, "reload_vs_recompute": None}
    if not est.active or not reload_ms:
        return out
    import numpy as np

    recompute = est.recompute_ms(k)
    saved = np.array([recompute - r for r in reload_ms], dtype=float)
    out.update({"recompute_ms": recompute, "prefill_gpu_s_saved": recompute * len(reload_ms) / 1e3,
                "reload_vs_recompute": float(np.mean(reload_ms)) / recompute if recompute > 0 else None,
                "ttft_saved_ms": {"total": float(saved.sum()),
                                  "p50": float(np.percentile(saved, 50, method="inverted_cdf")),
                                  "p99": float(np.percentile(saved, 99, method="inverted_cdf")),
                                  "count": len(reload_ms)}})
    return out
