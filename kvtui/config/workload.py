"""What a run replays: a synthetic scenario (:mod:`kvtui.core.knobs` gives each knob's unit, range and
default) or a Mooncake FAST'25 trace, with the trace synthesis flags of :mod:`workload.synthesis`
(``--trace-speedup``, ``--prefix-scale``, ``--prompt-scale``, ``--prefix-roots``), applied to the rows wherever a
trace is read, so that ``kvtui trace-stats`` with the same flags gives the ideal hit rate of the very rows a
replay issues."""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kvtui.config.layout import flag_message
from kvtui.core.defaults import DEFAULT_PROMPT_PAGES
from kvtui.core.errors import KvtuiError
from kvtui.core.layout import PageLayout
from kvtui.core.units import fraction_arg

if TYPE_CHECKING:
    from workload import SyntheticWorkload, TraceProblem, TraceRow, TraceWorkload, WorkloadSpec
    from workload.synthesis import Synthesis
    from workload.working_set import WorkingSet

_SYNTHESIS_FLAGS = (("trace_speedup", "--trace-speedup", "speedup"),
                    ("prefix_scale", "--prefix-scale", "prefix_scale"),
                    ("prompt_scale", "--prompt-scale", "prompt_scale"),
                    ("prefix_roots", "--prefix-roots", "prefix_roots"))

FACTOR_MIN, FACTOR_MAX = 1e-3, 1e3
"""The range of the synthesis factors (``--trace-speedup``, ``--prefix-scale``, ``--prompt-scale``)."""

TRACE_ONLY = (("speed", "--speed"), ("strict", "--strict"), ("trace_block_tokens", "--trace-block-tokens"))
"""The flags that apply to a trace replay only."""


# -- flags ----------------------------------------------------------------------------------------------------
def add_workload_arguments(p: argparse.ArgumentParser, default_scenario: str | None = None) -> None:
    """Synthetic scenario knobs (``default_scenario`` None: :data:`~kvtui.core.knobs.DEFAULT_SCENARIO`) and
    trace replay flags. Knob values stay in the user's unit (``--overlap`` in %); :func:`workload_from_args`
    checks them."""
    from kvtui.core.knobs import DEFAULT_SCENARIO, KNOBS, SCENARIO
    from kvtui.core.traces import trace_arg, trace_names
    from workload.synthetic import MAX_OUTPUT_TOKENS, WorkloadSpec

    default_scenario = default_scenario or DEFAULT_SCENARIO
    g = p.add_argument_group("workload (synthetic scenario, or --trace FILE)")
    g.add_argument(SCENARIO.flag, default=default_scenario, choices=SCENARIO.choices,
                   help=f"{SCENARIO.help} (default {default_scenario})")
    for knob in KNOBS.values():  # (a knob in % also takes the sign: --overlap 50%)
        kind = fraction_arg(knob.scale) if knob.unit == "%" else int if knob.integer else float
        g.add_argument(knob.flag, type=kind, default=knob.user(knob.default),
                       metavar=knob.metavar, help=knob.help_text().replace("%", "%%"))
    g.add_argument("--prompt-tokens", type=int, default=None, metavar="TOKENS",
                   help="mean prompt length in tokens (default 8 pages of the layout)")
    g.add_argument("--output-tokens", type=int, default=None, metavar="TOKENS",
                   help="tokens each request would generate after its prompt (decode): kvtui computes no output, "
                        "but a --save-trace file gives it as output_length, which aiperf sends as max_tokens "
                        f"(1-{MAX_OUTPUT_TOKENS}; default {WorkloadSpec().output_tokens}; a trace row gives its own)")
    g.add_argument("--seed", type=int, default=0, metavar="N", help="workload random seed (default 0)")
    g.add_argument("--trace", type=trace_arg, metavar="NAME|FILE",
                   help="replay a Mooncake FAST'25 JSONL trace instead of a scenario: a "
                        f"shipped one by name ({trace_names()}; `kvtui traces` lists them) or a file (default: none, "
                        "the synthetic --scenario)")
    g.add_argument("--trace-block-tokens", type=int, default=None, metavar="TOKENS",
                   help="with --trace: tokens per trace hash id (default 512, the FAST'25 release)")
    g.add_argument("--speed", default=None, metavar="X",
                   help="with --trace: time scale, 2 = twice as fast, max = as fast as possible (default 1)")
    add_synthesis_arguments(g, with_speed=True)
    g.add_argument("--strict", action="store_true", help="stop at the first bad trace row (default: skip and count)")


def add_synthesis_arguments(p: Any, with_speed: bool = False, arrival_times: bool = True) -> None:
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


# -- trace synthesis and speed --------------------------------------------------------------------------------
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


def trace_synthesis(args: argparse.Namespace, has_trace: bool | None = None) -> Synthesis | None:
    """The :class:`workload.synthesis.Synthesis` of the synthesis flags, or None when none is given.

    ``has_trace``: whether the command reads a trace (default: ``--trace`` is set); ``KvtuiError`` for a
    synthesis flag without one (``--prefix-scale applies to --trace replays only``), a factor that is not a
    positive number, or ``--prefix-roots`` that is not an integer >= 1."""
    from workload.synthesis import Synthesis

    given = {flag: getattr(args, attr, None) for attr, flag, _ in _SYNTHESIS_FLAGS}
    if not any(v is not None for v in given.values()):
        return None
    if not (has_trace if has_trace is not None else getattr(args, "trace", None)):
        flag = next(f for f, v in given.items() if v is not None)
        raise KvtuiError(f"{flag} applies to --trace replays only")
    values: dict[str, float | int] = {}
    for _attr, flag, name in _SYNTHESIS_FLAGS:
        text = given[flag]
        if text is None:
            continue
        if name == "prefix_roots":
            try:
                roots = int(text)
            except ValueError:
                raise KvtuiError(f"{flag} must be an integer >= 1, got {text!r}") from None
            if roots < 1:
                raise KvtuiError(f"{flag} must be an integer >= 1, got {text!r}")
            values[name] = roots
        else:
            values[name] = _factor(text, flag)
    return Synthesis(**values)  # type: ignore[arg-type]


def synthesis_fields(synthesis: Synthesis | None) -> dict[str, Any]:
    """``{"synthesis": {"prefix_scale": 2.0, …}}`` (the flags given, by field of
    :class:`workload.synthesis.Synthesis`) for a workload description or a JSON output; ``{}`` for none."""
    return {"synthesis": synthesis.as_dict()} if synthesis is not None and not synthesis.identity else {}


def synthesis_description(args: argparse.Namespace, has_trace: bool | None = None) -> dict[str, Any]:
    """:func:`synthesis_fields` of the flags (``KvtuiError`` as :func:`trace_synthesis`)."""
    return synthesis_fields(trace_synthesis(args, has_trace))


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


def read_trace_rows(source: str, block_tokens: int, *, page_tokens: int | None = None, strict: bool = False,
                    synthesis: Synthesis | None = None) -> tuple[list[TraceRow], list[TraceProblem]]:
    """The rows of ``--trace`` ``source`` (a shipped trace's name or a file) with ``synthesis`` applied, and the
    problems :func:`workload.read_trace` found. ``KvtuiError`` (one line) when ``page_tokens`` does not divide
    ``block_tokens`` (a KV page must not straddle two trace blocks), when the file cannot be replayed (named in
    the message), or when the synthesis would make it too large."""
    from kvtui.core.traces import resolve_trace
    from workload import TraceError, check_page_divides_block, read_trace

    path = resolve_trace(source)
    if page_tokens is not None:
        try:
            check_page_divides_block(page_tokens, block_tokens)
        except ValueError:
            raise KvtuiError(f"--page-tokens {page_tokens} does not divide --trace-block-tokens {block_tokens}: "
                             "a KV page must not straddle two trace blocks") from None
    try:
        rows, problems = read_trace(path, block_tokens=block_tokens, strict=strict)
    except TraceError as exc:  # (the file is named in it: an empty, binary or all-bad trace)
        raise KvtuiError(f"--trace {exc}") from None
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    return apply_synthesis(rows, synthesis, block_tokens), problems


def apply_synthesis(rows: list[TraceRow], synthesis: Synthesis | None, block_tokens: int) -> list[TraceRow]:
    """``rows`` with ``synthesis`` applied (:func:`workload.synthesis.synthesize`; the rows themselves for
    None). ``KvtuiError`` when the result would be too large."""
    from workload.synthesis import synthesize

    if synthesis is None:
        return rows
    try:
        return synthesize(rows, synthesis, block_tokens)
    except ValueError as exc:
        raise KvtuiError(f"trace synthesis: {exc}") from None


# -- the plan -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TracePlan:
    """A trace replay: ``source`` as given (a shipped name or a file), ``label`` (its name in outputs),
    ``rows`` (synthesis applied), ``block_tokens`` per hash id, ``speed`` (None: as fast as possible)."""

    source: str
    label: str
    rows: tuple[TraceRow, ...]
    block_tokens: int
    speed: float | None


@dataclass(frozen=True)
class WorkloadPlan:
    """What a run replays: a synthetic ``spec`` or a ``trace`` (exactly one of them), the ``description``
    of ``Frame.workload`` at the start, the trace rows skipped or replayed late (``problems``), and
    ``prompt_pages``: prompts of that many pages of the layout, after a layout switch too (None: the prompt
    length in tokens stays as given)."""

    description: Mapping[str, Any]
    spec: WorkloadSpec | None = None
    trace: TracePlan | None = None
    problems: tuple[TraceProblem, ...] = ()
    prompt_pages: int | None = None
    seed: int = 0
    synthesis: Synthesis | None = field(default=None, compare=False)

    @property
    def is_trace(self) -> bool:
        """A trace replay (else a synthetic scenario)."""
        return self.trace is not None

    def build(self) -> SyntheticWorkload | TraceWorkload:
        """A fresh request source of this plan (a workload keeps its position: one per run)."""
        from workload import SyntheticWorkload, TraceWorkload

        if self.trace is not None:
            t = self.trace
            return TraceWorkload(list(t.rows), block_tokens=t.block_tokens, speed=t.speed, name=t.label)
        assert self.spec is not None
        return SyntheticWorkload(self.spec)

    def working_set(self, page_tokens: int, in_flight: int) -> WorkingSet:
        """The KV pages this workload keeps live with ``in_flight`` requests under way
        (:mod:`workload.working_set`: a trace's distinct full blocks, a scenario's shared prefixes plus the
        pages being published)."""
        from workload.working_set import synthetic_working_set, trace_working_set

        if self.trace is not None:
            return trace_working_set(self.trace.rows, self.trace.block_tokens, page_tokens)
        assert self.spec is not None
        return synthetic_working_set(self.spec, in_flight)


def synthetic_description(spec: WorkloadSpec) -> dict[str, Any]:
    """The ``frame.workload`` dict of a ``workload.WorkloadSpec``: its knobs (:mod:`kvtui.core.knobs`, the
    monitor shows them), prompt and output length."""
    from kvtui.core.knobs import WORKLOAD_KNOBS

    return {"kind": "synthetic", **{name: getattr(spec, name) for name in WORKLOAD_KNOBS},
            "prompt_tokens": spec.prompt_tokens, "output_tokens": spec.output_tokens}


def _check_flags(args: argparse.Namespace, layout: PageLayout) -> None:
    """``KvtuiError`` for flags that would change nothing: ``--speed``, ``--strict`` or
    ``--trace-block-tokens`` without ``--trace``, ``--prompt-tokens`` or ``--output-tokens`` with it; and for
    ``--trace-block-tokens`` below 1 and ``--prompt-tokens`` below one KV page of ``layout`` (such a request has
    no page to reuse or publish)."""
    if not getattr(args, "trace", None):
        for name, flag in TRACE_ONLY:
            if getattr(args, name, None) not in (None, False):
                raise KvtuiError(f"{flag} applies to --trace replays only")
        prompt = getattr(args, "prompt_tokens", None)
        if prompt is not None and 0 < prompt < layout.page_tokens:
            raise KvtuiError(f"--prompt-tokens {prompt} is less than one KV page (--page-tokens "
                             f"{layout.page_tokens}): its requests would have no page to reuse or publish")
        return
    if getattr(args, "prompt_tokens", None) is not None:
        raise KvtuiError("--prompt-tokens applies to synthetic scenarios only (each trace row gives its prompt's "
                         "length)")
    if getattr(args, "output_tokens", None) is not None:
        raise KvtuiError("--output-tokens applies to synthetic scenarios only (each trace row gives its output "
                         "length)")
    if getattr(args, "trace_block_tokens", None) is not None and args.trace_block_tokens < 1:
        raise KvtuiError(f"--trace-block-tokens must be at least 1, got {args.trace_block_tokens}")


def workload_from_args(args: argparse.Namespace, layout: PageLayout, *, follow_layout: bool = False) -> WorkloadPlan:
    """The :class:`WorkloadPlan` of the flags for pages of ``layout``: a trace is read (and synthesized) now,
    a scenario's knobs are checked against their :mod:`kvtui.core.knobs` specs (``--overlap must be within
    0-100 %, got 120``), then the whole spec (its errors name flags). ``follow_layout``: without
    ``--prompt-tokens``, prompts stay :data:`~kvtui.core.defaults.DEFAULT_PROMPT_PAGES` pages long when the
    layout changes (the monitor's layout switch). ``KvtuiError`` (one line) on any bad value."""
    from kvtui.core.knobs import KNOBS
    from workload import DEFAULT_BLOCK_TOKENS, TraceWorkload, WorkloadSpec

    _check_flags(args, layout)
    seed = getattr(args, "seed", 0)
    if args.trace:
        from kvtui.core.traces import trace_label

        block = args.trace_block_tokens or DEFAULT_BLOCK_TOKENS
        synthesis = trace_synthesis(args)
        rows, problems = read_trace_rows(args.trace, block, page_tokens=layout.page_tokens, strict=args.strict,
                                         synthesis=synthesis)
        speed = parse_speed(args.speed or "1")
        label = trace_label(args.trace)
        try:
            replay = TraceWorkload(rows, block_tokens=block, speed=speed, name=label)  # (checks every row)
        except ValueError as exc:
            raise KvtuiError(str(exc)) from None
        description = {"kind": "trace", "name": label, "done": 0, "total": replay.rows_total, "complete": False,
                       **synthesis_fields(synthesis)}
        return WorkloadPlan(description=description, trace=TracePlan(args.trace, label, tuple(rows), block, speed),
                            problems=tuple(problems), seed=seed, synthesis=synthesis)
    trace_synthesis(args)  # refuses a synthesis flag without --trace
    knobs: dict[str, Any] = {}  # (WorkloadSpec's fields by name)
    for knob in KNOBS.values():
        try:
            knobs[knob.name] = knob.check(getattr(args, knob.name) / knob.scale)
        except ValueError as exc:  # "overlap must be …" → "--overlap must be …"
            raise KvtuiError(f"{knob.flag}{str(exc).removeprefix(knob.name)}") from None
    given = args.prompt_tokens
    prompt = given if given is not None else DEFAULT_PROMPT_PAGES * layout.page_tokens
    try:
        # (an integer knob's check gives an int)
        output = getattr(args, "output_tokens", None)
        spec = replace(WorkloadSpec(scenario=args.scenario, prompt_tokens=prompt, page_tokens=layout.page_tokens,
                                    seed=seed, **({} if output is None else {"output_tokens": output})), **knobs)
        spec.validate()
    except ValueError as exc:
        raise KvtuiError(flag_message(str(exc))) from None
    return WorkloadPlan(description=synthetic_description(spec), spec=spec, seed=seed,
                        prompt_pages=DEFAULT_PROMPT_PAGES if follow_layout and given is None else None)


def skipped_text(problems: Sequence[TraceProblem]) -> str:
    """What kvtui says about a trace's bad or late rows (:func:`workload.skipped_rows_text`)."""
    from workload import skipped_rows_text

    return skipped_rows_text(problems)
