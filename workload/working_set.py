"""Working set of a request source: the KV pages it keeps live, counted before a run starts (no store).

A store whose segment cannot keep these pages below its eviction watermark evicts pages the workload is
about to reuse (lost hits) and, when the pages it holds are leased by recent probes and reads, refuses
puts (``NO_AVAILABLE_HANDLE``). The counts here are pages of ``page_tokens`` tokens; the caller turns them
into bytes with its page layout (:mod:`kvtui.core.capacity`).

Synthetic scenarios (:mod:`workload.synthetic`), with ``P = page_tokens``, ``c = concurrency``, ``n`` the
longest prompt the spec draws (``round(prompt_tokens · (1 + length_spread))``) and
``s = shared_prefix_tokens(n, overlap, P) // P`` its shared pages:

* ``shared-system-prompt``, ``few-shot``: ``pool · s + c · (n // P − s)`` — every pool entry's shared
  prefix, plus the unique pages of the requests being published;
* ``multi-turn``: ``s + pool · (L − s)`` with ``L`` the pages of a conversation's longest turn: its system
  prompt (shared by all conversations) plus every conversation's own pages (each turn re-reads all of its
  earlier turns). Turns grow by ``2 · max(1, prompt_tokens // 4)`` tokens while they stay within
  ``4 · prompt_tokens``, so ``L = (t + k · g) // P`` with ``t = prompt_tokens``, ``g`` that growth and
  ``k = floor(3t / g)`` (with a length spread: ``L = 4t // P``, the bound). A restarted conversation's
  pages stay leased for one lease TTL after their last read, so a store sized exactly for this can still
  see a short burst of refused puts as conversations restart;
* ``random``: ``c · (n // P)`` — nothing is reused; only the pages being published must fit.

Traces (:mod:`workload.trace`): every distinct full block the trace publishes, ``D · (block_tokens // P)``
with ``D`` the distinct hash ids among the rows' full blocks, the cacheable blocks of the replay rule of
:mod:`workload.stats` (an unbounded cache reaches the ideal hit rate ``kvtui trace-stats`` prints).

``prompt_pages`` is the longest single request's pages: a store that cannot hold them cannot reuse that
request at all. ``burst_pages`` is what the requests in flight can publish at once, ``c · prompt_pages``: a
request whose prefix is not in the store (the first of its prefix, or one whose prefix was evicted) publishes
every page of its prompt. Eviction starts only after a put has taken the store past its watermark, and runs
in the background, so a store must have room for such a publish *above* its watermark too
(:func:`kvtui.core.capacity.segment_for`).

:func:`reachable_working_set` is the largest working set over knob settings a live monitor can switch to (every
scenario and overlap at the starting pool, prompt length and requests in flight): a store sized for it stays
right whichever of them the user picks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from workload.stats import _full_blocks
from workload.synthetic import SyntheticWorkload, WorkloadSpec, shared_prefix_tokens
from workload.text import plural
from workload.trace import TraceRow, TraceWorkload

__all__ = ["WorkingSet", "reachable_working_set", "synthetic_working_set", "trace_working_set", "working_set_of"]


@dataclass(frozen=True)
class WorkingSet:
    """What a workload keeps live, in KV pages.

    Attributes:
        source: the scenario name (``multi-turn`` …) or ``trace``.
        pages: distinct pages kept live (reused while the run goes on) plus those being published.
        prompt_pages: pages of the longest single request (cacheable full pages).
        formula: how ``pages`` was counted, in words, e.g. ``6 shared + 8 conversations × 26 pages``.
        burst_pages: pages the requests in flight can publish at once (each its whole prompt).
        setting: the scenario and overlap counted when they are not the ones the run starts with
            (``multi-turn at overlap 0 %``; :func:`reachable_working_set`), else ``""``.
    """

    source: str
    pages: int
    prompt_pages: int
    formula: str
    burst_pages: int = 0
    setting: str = ""


def _longest_prompt(spec: WorkloadSpec) -> int:
    """Tokens of the longest prompt the spec draws (``SyntheticWorkload`` rounds ``t ± spread · t``)."""
    return max(1, int(round(spec.prompt_tokens * (1.0 + spec.length_spread))))


def _longest_turn(spec: WorkloadSpec) -> int:
    """Tokens of a multi-turn conversation's longest turn (see the module docstring)."""
    t = spec.prompt_tokens
    if spec.length_spread:
        return 4 * t
    growth = 2 * max(1, t // 4)
    return t + (3 * t // growth) * growth


def synthetic_working_set(spec: WorkloadSpec, concurrency: int = 1) -> WorkingSet:
    """The working set of ``spec`` with ``concurrency`` requests in flight (formulas: module docstring).
    ``ValueError`` if the spec is invalid (:meth:`WorkloadSpec.validate`) or ``concurrency < 1``."""
    spec.validate()
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    p, c = spec.page_tokens, int(concurrency)
    n = _longest_prompt(spec)
    pages = n // p
    if spec.scenario == "random":
        return WorkingSet("random", c * pages, pages, f"{c} × {plural(pages, 'page')} in flight, none reused",
                          c * pages)
    s = shared_prefix_tokens(n, spec.overlap, p) // p
    if spec.scenario == "multi-turn":
        longest = _longest_turn(spec) // p
        own = longest - s
        return WorkingSet("multi-turn", s + spec.pool * own, longest,
                          f"{s} shared + {plural(spec.pool, 'conversation')} × {plural(own, 'page')}", c * longest)
    unique = pages - s
    what = "prompt" if spec.scenario == "shared-system-prompt" else "template"
    return WorkingSet(spec.scenario, spec.pool * s + c * unique, pages,
                      f"{plural(spec.pool, what)} × {plural(s, 'shared page')} + {c} × {plural(unique, 'unique page')} "
                      "in flight", c * pages)


def reachable_working_set(spec: WorkloadSpec, concurrency: int, scenarios: Iterable[str],
                          overlaps: Iterable[float], need: Callable[[WorkingSet], float]) -> WorkingSet:
    """The :func:`synthetic_working_set` with the largest ``need`` (e.g. the segment bytes it needs) over every
    scenario of ``scenarios`` and every overlap of ``overlaps`` (fractions), the other knobs of ``spec`` kept
    (pool, prompt length, page size) and ``concurrency`` requests in flight. Its :attr:`WorkingSet.setting`
    names its scenario and overlap (``multi-turn at overlap 0 %``) when they are not ``spec``'s (``""`` when
    ``spec``'s own is the largest)."""
    best = synthetic_working_set(spec, concurrency)
    for scenario in scenarios:
        for overlap in overlaps:
            other = replace(spec, scenario=scenario, overlap=overlap)
            ws = synthetic_working_set(other, concurrency)
            if need(ws) > need(best):
                best = replace(ws, setting=_setting(other))
    return best


def _setting(spec: WorkloadSpec) -> str:
    """``multi-turn at overlap 0 %`` (``random``: it shares no prefix)."""
    return spec.scenario if spec.scenario == "random" else f"{spec.scenario} at overlap {spec.overlap * 100:.0f} %"


def trace_working_set(rows: Sequence[TraceRow], block_tokens: int, page_tokens: int,
                      concurrency: int = 1) -> WorkingSet:
    """The distinct pages a replay of ``rows`` publishes (formula: module docstring), ``concurrency`` requests
    in flight. ``ValueError`` unless ``page_tokens`` divides ``block_tokens`` (both positive)."""
    if page_tokens < 1 or block_tokens < 1 or block_tokens % page_tokens:
        raise ValueError(f"page size {page_tokens} tokens does not divide the trace block size {block_tokens} tokens")
    per_block = block_tokens // page_tokens
    full = _full_blocks(rows, block_tokens)
    distinct = len({h for ids in full for h in ids})
    longest = max((len(ids) for ids in full), default=0)
    return WorkingSet("trace", distinct * per_block, longest * per_block,
                      f"{distinct:,} distinct full blocks × {plural(per_block, 'page')}",
                      max(1, concurrency) * longest * per_block)


def working_set_of(workload, page_tokens: int, concurrency: int = 1) -> WorkingSet | None:
    """:func:`synthetic_working_set` of a :class:`SyntheticWorkload`'s current spec, or
    :func:`trace_working_set` of a :class:`TraceWorkload`'s rows; ``None`` for another source."""
    if isinstance(workload, SyntheticWorkload):
        return synthetic_working_set(workload.spec, concurrency)
    if isinstance(workload, TraceWorkload):
        return trace_working_set(workload._rows, workload.block_tokens, page_tokens, concurrency)
    return None
