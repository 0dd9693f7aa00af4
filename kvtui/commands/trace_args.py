"""Trace replay flags shared by the commands that read a FAST'25 trace (``run``, ``watch`` and ``bench`` with
``--trace``, ``trace-stats``): ``--speed`` and the synthesis flags of :mod:`workload.synthesis`
(``--trace-speedup``, ``--prefix-scale``, ``--prompt-scale``, ``--prefix-roots``), applied to the rows
wherever a trace is read, so that ``kvtui trace-stats`` with the same flags gives the ideal hit rate of the
very rows a replay issues.

Parsers only collect the strings; :func:`trace_synthesis` and :func:`synthesize_rows` check them and raise
:class:`~kvtui.core.errors.KvtuiError` (one line naming the flag, exit 2).
"""

from __future__ import annotations

import argparse
import math

from kvtui.core.errors import KvtuiError

_FLAGS = (("trace_speedup", "--trace-speedup", "speedup"), ("prefix_scale", "--prefix-scale", "prefix_scale"),
          ("prompt_scale", "--prompt-scale", "prompt_scale"), ("prefix_roots", "--prefix-roots", "prefix_roots"))


FACTOR_MIN, FACTOR_MAX = 1e-3, 1e3
"""The range of the synthesis factors (``--trace-speedup``, ``--prefix-scale``, ``--prompt-scale``)."""


def add_synthesis_arguments(p, with_speed: bool = False, arrival_times: bool = True) -> None:
    """Add the four synthesis flags to a parser or argument group (strings; :func:`trace_synthesis` checks
    them); ``with_speed``: the command also has ``--speed`` (run, watch), which the help then names;
    ``arrival_times`` False: the command ignores arrival times (``bench --trace``), so ``--trace-speedup``
    is left out of its help (the command refuses it in one line)."""
    p.add_argument("--trace-speedup", metavar="X",
                   help=("trace synthesis: divide each row's arrival time after the first row by X (2 = twice the "
                         f"request rate; {FACTOR_MIN:g}–{FACTOR_MAX:g}; rounded to 1 ms; hit rates unchanged; default: "
                         "the trace's own times)"
                         + (". Combines with --speed" if with_speed else "")) if arrival_times else argparse.SUPPRESS)
    p.add_argument("--prefix-scale", metavar="X",
                   help="trace synthesis: make each row's shared block prefix (its leading blocks that other rows "
                        f"list too) X times as many blocks ({FACTOR_MIN:g}–{FACTOR_MAX:g}; rounded half up, at least "
                        "1); unique suffixes unchanged: more reuse for X > 1; default: the trace's own prefixes")
    p.add_argument("--prompt-scale", metavar="X",
                   help="trace synthesis: make each row's unique suffix (the tokens after its shared prefix) X times "
                        f"as many tokens ({FACTOR_MIN:g}–{FACTOR_MAX:g}; rounded half up, at least 1), shared prefixes "
                        "unchanged: less reuse for X > 1; default: the trace's own suffixes")
    p.add_argument("--prefix-roots", metavar="N",
                   help="trace synthesis: N disjoint copies of the trace's prefix trees, row i using copy i mod N "
                        "(N = 2 halves how often a prefix is met in its copy: lower reuse; at least 1; default: one, "
                        "the trace's own)")


def _factor(text: str, flag: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise KvtuiError(f"{flag} must be a positive number, got {text!r}") from None
    if not (v > 0) or math.isinf(v):
        raise KvtuiError(f"{flag} must be a positive number, got {text!r}")
    if not FACTOR_MIN <= v <= FACTOR_MAX:
        raise KvtuiError(f"{flag} must be within {FACTOR_MIN:g}–{FACTOR_MAX:g}, got {text!r}")
    return v


def trace_synthesis(args: argparse.Namespace, has_trace: bool | None = None):
    """The :class:`workload.synthesis.Synthesis` of ``args``'s synthesis flags, or None when none is given.

    ``has_trace``: whether the command reads a trace (default: ``args.trace`` is set); ``KvtuiError`` for a
    synthesis flag without one (``--prefix-scale applies to --trace replays only``), a factor that is not a
    positive number, or ``--prefix-roots`` that is not an integer >= 1."""
    from workload.synthesis import Synthesis

    given = {flag: getattr(args, attr, None) for attr, flag, _ in _FLAGS}
    if not any(v is not None for v in given.values()):
        return None
    if not (has_trace if has_trace is not None else getattr(args, "trace", None)):
        flag = next(f for f, v in given.items() if v is not None)
        raise KvtuiError(f"{flag} applies to --trace replays only")
    values = {}
    for attr, flag, field in _FLAGS:
        text = given[flag]
        if text is None:
            continue
        if field == "prefix_roots":
            try:
                values[field] = int(text)
            except ValueError:
                raise KvtuiError(f"{flag} must be an integer >= 1, got {text!r}") from None
            if values[field] < 1:
                raise KvtuiError(f"{flag} must be an integer >= 1, got {text!r}")
        else:
            values[field] = _factor(text, flag)
    return Synthesis(**values)


def synthesize_rows(args: argparse.Namespace, rows: list, block_tokens: int, has_trace: bool | None = None) -> list:
    """``rows`` (parsed :class:`workload.trace.TraceRow` s) with ``args``'s synthesis applied
    (:func:`workload.synthesis.synthesize`); the rows themselves when no synthesis flag is given.
    ``KvtuiError`` as :func:`trace_synthesis`, or when the result would be too large."""
    from workload.synthesis import synthesize

    synthesis = trace_synthesis(args, has_trace)
    if synthesis is None:
        return rows
    try:
        return synthesize(rows, synthesis, block_tokens)
    except ValueError as exc:
        raise KvtuiError(f"trace synthesis: {exc}") from None


def synthesis_description(args: argparse.Namespace, has_trace: bool | None = None) -> dict:
    """``{"synthesis": {"prefix_scale": 2.0, …}}`` (the flags given, by field of
    :class:`workload.synthesis.Synthesis`) for a workload description or a JSON output; ``{}`` for none."""
    synthesis = trace_synthesis(args, has_trace)
    return {"synthesis": synthesis.as_dict()} if synthesis is not None and not synthesis.identity else {}


def parse_speed(text: str) -> float | None:
    """``--speed``: a positive number or ``max`` (None = as fast as possible)."""
    if str(text).strip().lower() in ("max", "inf"):
        return None
    try:
        v = float(text)
    except ValueError:
        raise KvtuiError(f"--speed must be a positive number or 'max', got {text!r}") from None
    if not (v > 0) or math.isinf(v) or math.isnan(v):
        raise KvtuiError(f"--speed must be a positive number or 'max', got {text!r}")
    return v
