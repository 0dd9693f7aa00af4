"""The TTFT estimate's flags, shared by the commands that move pages (``run``, ``watch``, ``bench``, ``serve``):
``--gpu``, ``--mfu`` and ``--prefill-tokens-per-s`` (:mod:`kvtui.metrics.ttft` holds the formula, the GPU
table and the default MFU)."""

from __future__ import annotations

import argparse
import math

from kvtui.config.layout import LayoutPlan
from kvtui.core.errors import KvtuiError
from kvtui.core.units import fraction_arg
from kvtui.metrics.ttft import DEFAULT_GPU, DEFAULT_MFU, GPUS, TtftEstimator, make_estimator

ESTIMATE_FLAGS = (("--gpu", "gpu"), ("--mfu", "mfu"), ("--prefill-tokens-per-s", "prefill_tokens_per_s"))
"""The flags of the estimate and their ``argparse`` destinations."""


def add_estimate_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the "TTFT estimate" argument group to a command's parser."""
    g = parser.add_argument_group(
        "TTFT estimate (the prefill time a reload saves: recompute ≈ (2·P·k + 2·L·d_attn·k²) FLOPs ÷ (peak × MFU) "
        "for k reloaded tokens, against the measured reload time; see the docs: TTFT and GPU time saved)")
    g.add_argument("--gpu", type=str.lower, choices=list(GPUS), default=None, metavar="|".join(GPUS),
                   help=f"the GPU the prefill would run on: its dense BF16 peak TFLOPS from the vendor's datasheet "
                        f"({', '.join(f'{k} {g.peak_tflops:g}' for k, g in GPUS.items())}; default {DEFAULT_GPU})")
    g.add_argument("--mfu", type=fraction_arg(), default=None, metavar="FRACTION",
                   help="model FLOPs utilisation of the prefill, the share of the GPU's peak it reaches, "
                        f"within (0, 1] or as a percentage, 40%% (default {DEFAULT_MFU:g}: long prefills are "
                        "compute-bound and reach ~40-50 %% of dense peak)")
    g.add_argument("--prefill-tokens-per-s", type=float, default=None, metavar="TOKENS_PER_S",
                   help="your engine's measured prefill rate in tokens per second: replaces the FLOPs estimate (then "
                        "recompute time = k ÷ this), and works with any layout, tiny and custom ones too")


def estimate_flags_given(args: argparse.Namespace) -> list[str]:
    """The estimate flags given on the command line, in :data:`ESTIMATE_FLAGS` order."""
    return [flag for flag, dest in ESTIMATE_FLAGS if getattr(args, dest, None) is not None]


def estimator_from_args(args: argparse.Namespace, layout: LayoutPlan) -> TtftEstimator:
    """The :class:`~kvtui.metrics.ttft.TtftEstimator` of the flags for ``layout``: the model is
    ``--model-config``'s, or the preset the layout is the shape of (``seed`` → Qwen2.5-7B); none for ``tiny``
    or a changed layout (then the estimate is off, unless ``--prefill-tokens-per-s``). ``KvtuiError`` for
    ``--mfu`` outside (0, 1], ``--prefill-tokens-per-s`` ≤ 0, or ``--gpu`` / ``--mfu`` given with
    ``--prefill-tokens-per-s`` (which replaces them)."""
    gpu, mfu, rate = (getattr(args, dest, None) for _flag, dest in ESTIMATE_FLAGS)
    if mfu is not None and not (0 < mfu <= 1):
        raise KvtuiError(f"--mfu must be within (0, 1] (a fraction of the GPU's peak, 0.4 = 40 %), got {mfu:g}")
    if rate is not None and not (rate > 0 and math.isfinite(rate)):
        raise KvtuiError(f"--prefill-tokens-per-s must be a positive number of tokens per second, got {rate:g}")
    if rate is not None and (gpu is not None or mfu is not None):
        given = " and ".join(f for f, v in (("--gpu", gpu), ("--mfu", mfu)) if v is not None)
        raise KvtuiError(f"--prefill-tokens-per-s replaces the FLOPs estimate, so {given} would change nothing; "
                         "give one or the other")
    spec = layout.model_spec if layout.name != "custom" else None
    try:
        return make_estimator(layout.name, spec, gpu or DEFAULT_GPU, DEFAULT_MFU if mfu is None else mfu, rate)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
