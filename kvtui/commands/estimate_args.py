"""The TTFT estimate's flags, shared by the commands that move pages (``run``, ``watch``, ``bench``):
``--gpu``, ``--mfu`` and ``--prefill-tokens-per-s`` (:mod:`kvtui.metrics.ttft` holds the formula, the GPU
table and the default MFU). :func:`estimator_from_args` checks them and raises
:class:`~kvtui.core.errors.KvtuiError` (one line, exit 2) on a bad value.
"""

from __future__ import annotations

import argparse
import math

from kvtui.core.errors import KvtuiError


def add_estimate_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the "TTFT estimate" argument group to a command's parser."""
    from kvtui.metrics.ttft import DEFAULT_GPU, DEFAULT_MFU, GPUS

    g = parser.add_argument_group(
        "TTFT estimate (the prefill time a reload saves: recompute ≈ (2·P·k + 2·L·d_attn·k²) FLOPs ÷ (peak × MFU) "
        "for k reloaded tokens, against the measured reload time; README \"TTFT and GPU time saved\")")
    g.add_argument("--gpu", type=str.lower, choices=list(GPUS), default=None, metavar="|".join(GPUS),
                   help=f"the GPU the prefill would run on: its dense BF16 peak TFLOPS from the vendor's datasheet "
                        f"({', '.join(f'{k} {g.peak_tflops:g}' for k, g in GPUS.items())}; default {DEFAULT_GPU})")
    g.add_argument("--mfu", type=float, default=None, metavar="FRACTION",
                   help=f"model FLOPs utilisation of the prefill, the share of the GPU's peak it reaches, within (0, 1] "
                        f"(default {DEFAULT_MFU:g}: long prefills are compute-bound and reach ~40-50 %% of dense peak)")
    g.add_argument("--prefill-tokens-per-s", type=float, default=None, metavar="TOKENS_PER_S",
                   help="your engine's measured prefill rate in tokens per second: replaces the FLOPs estimate (then "
                        "recompute time = k ÷ this), and works with any layout, tiny and custom ones too")


def estimator_from_args(args: argparse.Namespace, layout):
    """The :class:`~kvtui.metrics.ttft.TtftEstimator` of ``args`` for ``layout`` (after
    :func:`kvtui.commands.common.layout_of`, which sets ``args.model_spec``): the model is ``--model-config``'s,
    or the preset the layout is the shape of (``seed`` → Qwen2.5-7B); none for ``tiny`` or a changed layout
    (then the estimate is off, unless ``--prefill-tokens-per-s``). ``KvtuiError`` for ``--mfu`` outside
    (0, 1], ``--prefill-tokens-per-s`` ≤ 0, or ``--gpu`` / ``--mfu`` given with ``--prefill-tokens-per-s``
    (which replaces them)."""
    from kvtui.commands.common import layout_name
    from kvtui.metrics.ttft import DEFAULT_GPU, DEFAULT_MFU, make_estimator

    gpu, mfu, rate = getattr(args, "gpu", None), getattr(args, "mfu", None), getattr(args, "prefill_tokens_per_s", None)
    if mfu is not None and not (0 < mfu <= 1):
        raise KvtuiError(f"--mfu must be within (0, 1] (a fraction of the GPU's peak, 0.4 = 40 %), got {mfu:g}")
    if rate is not None and not (rate > 0 and math.isfinite(rate)):
        raise KvtuiError(f"--prefill-tokens-per-s must be a positive number of tokens per second, got {rate:g}")
    if rate is not None and (gpu is not None or mfu is not None):
        given = " and ".join(f for f, v in (("--gpu", gpu), ("--mfu", mfu)) if v is not None)
        raise KvtuiError(f"--prefill-tokens-per-s replaces the FLOPs estimate, so {given} would change nothing; "
                         "give one or the other")
    name = layout_name(args, layout)
    spec = getattr(args, "model_spec", None) if name != "custom" else None
    try:
        return make_estimator(name, spec, gpu or DEFAULT_GPU, DEFAULT_MFU if mfu is None else mfu, rate)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
