"""What the commands write and read besides their flags: JSON outputs (written atomically), the run summary's
human table, and recorded session files. Shared by several commands, so no command imports another."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any, cast

from kvtui.core.errors import KvtuiError, OutputError
from kvtui.core.files import write_atomic
from kvtui.core.misses import MAX_KEYS
from kvtui.core.text import plural

if TYPE_CHECKING:
    from kvtui.metrics.summary import LatencySummary, MissFigures, RunSetup, RunSummary
    from kvtui.session.reader import SessionReader


def write_json_atomic(path: str, data: Mapping[str, Any]) -> None:
    """Write ``data`` as JSON whole or not at all (:func:`kvtui.core.files.write_atomic`: a temporary file and a
    rename, the umask's permissions, through a link to the file it names); ``-`` writes to standard output.
    ``OutputError`` (one line, exit 3) when it cannot be written."""
    if path == "-":
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return

    def dump(f: IO[str]) -> None:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")

    try:
        write_atomic(path, dump)
    except OSError as exc:
        raise OutputError(f"could not write {path}: {exc.strerror or exc}") from None


def open_session(path: str) -> SessionReader:
    """A :class:`~kvtui.session.reader.SessionReader`, or ``KvtuiError`` with the reader's one-line reason."""
    from kvtui.session import SessionError
    from kvtui.session.reader import SessionReader

    try:
        return SessionReader(path)
    except SessionError as exc:
        raise KvtuiError(str(exc)) from None


def full_setup(setup: Mapping[str, Any] | None, store: Mapping[str, Any] | None,
               meta: Mapping[str, Any] | None = None) -> RunSetup:
    """A run's ``setup`` (:meth:`kvtui.config.plan.RunPlan.setup`, or a recording's header's) as its ``--json``, its
    report and its recording all state it: the kvtui and Mooncake versions from a recording's ``meta`` where its
    header predates them, ``verify`` ``full`` where it predates ``--verify`` (every page was checked whole then),
    and, attached to a cluster (no ``store_bytes`` of its own), ``store_capacity_bytes``: the store's capacity the
    last frame scraped from the master (``store``: the frame's store block; bytes)."""
    out = cast("RunSetup", dict(setup or {}))  # (a recording's header: the setup its kvtui wrote)
    if meta and "kvtui_version" not in out:
        out["kvtui_version"] = meta.get("kvtui_version")
    if meta and "mooncake_version" not in out:
        out["mooncake_version"] = meta.get("mooncake_version")
    out.setdefault("verify", "full")
    capacity = (store or {}).get("capacity_bytes")
    if out.get("store_bytes") is None and capacity:
        out["store_capacity_bytes"] = int(capacity)
    return out


def store_counts(store: Mapping[str, Any] | None) -> dict[str, int]:
    """The summary's ``store_at_end``: the master's counts at the last scrape
    (:data:`kvtui.metrics.figures.STORE_COUNTS`: keys, keys evicted, allocation failures, bytes used and
    capacity; a disk tier's, :data:`~kvtui.metrics.figures.STORE_DISK`, and the hot-key copies,
    :data:`~kvtui.metrics.figures.STORE_HOT`, where the scrape has them); empty when nothing was scraped (no
    ``--metrics-url`` when attached)."""
    from kvtui.metrics.figures import STORE_COUNTS, STORE_DISK, STORE_HOT

    return {f.key: int(store[f.key]) for f in STORE_COUNTS + STORE_DISK + STORE_HOT
            if store and store.get(f.key) is not None}


def _percentiles(d: LatencySummary) -> str:
    """One latency line from a summary's ``{count, p50, p90, p99, max}`` (ms, HdrHistogram figures)."""
    from kvtui.metrics.figures import number

    if not d.get("count"):
        return "n/a (no samples)"
    return (f"p50 {number(d['p50'], 'ms')} ms · p90 {number(d['p90'], 'ms')} · p99 {number(d['p99'], 'ms')} · "
            f"max {number(d['max'], 'ms')} ({plural(d['count'], 'sample')})")


def format_summary(s: RunSummary) -> str:
    """The human summary table of a run (``s``: :meth:`kvtui.metrics.aggregate.Aggregator.summary` fields);
    figures are named, and their numbers written, as in :mod:`kvtui.metrics.figures` (thousands separators)."""
    from kvtui.core.text import rows
    from kvtui.core.verify import DEFAULT_VERIFY, checked
    from kvtui.metrics import figures as fig

    by_key: Mapping[str, Any] = s  # (the figures looked up by their key in kvtui.metrics.figures)
    thr: Mapping[str, float] = by_key["throughput"]
    verify = (s.get("setup") or {}).get("verify", DEFAULT_VERIFY)
    rel, pub = s["reload_ms"], s["publish_ms"]
    errors = ", ".join(f"{k} ×{v:,}" for k, v in s["errors"].items()) or "none"

    def of(part: fig.Figure, whole: fig.Figure, rate: fig.Figure) -> str:
        return f"{by_key[part.key]:,} of {by_key[whole.key]:,} {whole.label} ({fig.show(rate, by_key[rate.key])})"

    tiers = s.get("tiers") or {}
    pairs = [
        (fig.REQUESTS.label, f"{s['requests']:,} in {fig.show(fig.ELAPSED, s['elapsed_s'])} "
                             f"({fig.show(fig.REQUESTS_RUN, thr[fig.REQUESTS_RUN.key])})"),
        (fig.TOKENS_HIT.label, of(fig.TOKENS_HIT, fig.TOKENS_INPUT, fig.TOKENS_SKIPPED)),
        *([("", tier_text(tiers, fig.TIER_TOKENS_HIT))] if tiers else []),
        *([("", f"{fig.IDEAL_SO_FAR.name} {fig.show(fig.IDEAL_SO_FAR, by_key[fig.IDEAL_SO_FAR.key])} (what an "
                "unbounded cache would skip)")]
          if by_key.get(fig.IDEAL_SO_FAR.key) is not None else []),
        *([("", f"{fig.AIPERF_SO_FAR.name} {fig.show(fig.AIPERF_SO_FAR, by_key[fig.AIPERF_SO_FAR.key])} (aiperf "
                "analyze-trace's rule)")]
          if by_key.get(fig.AIPERF_SO_FAR.key) is not None else []),
        (fig.PAGES_HIT.label, of(fig.PAGES_HIT, fig.PAGES_TOTAL, fig.HIT_RATE_SESSION)),
        *([("", tier_text(tiers, fig.TIER_PAGES_HIT, fig.TIER_HIT_RATE))] if tiers else []),
        *([("", hot_text(by_key[fig.HOT_PAGES_HIT.key]))] if fig.HOT_PAGES_HIT.key in by_key else []),
        *([(fig.MISS_PAGES.label, miss_text(s["misses"] or {}))] if s.get("misses") else []),
        *([("", f"approximate: the history forgot {plural(s['misses_keys_forgotten'], 'key')} (it keeps "
                f"{MAX_KEYS:,})")] if s.get("misses_keys_forgotten") else []),
        (fig.PAGES_PUBLISHED.label, f"{plural(s['pages_published'], 'page')}; {fig.PAGES_PRESENT.label} "
                                    f"{s['pages_already_present']:,}; {fig.PAGES_FAILED.label} {s['pages_failed']:,}"),
        (fig.VERIFIED.label, f"{plural(s['verified_pages'], 'page')}, {checked(verify)}; {fig.MISMATCHES.label} "
                             f"{s['mismatches']:,}"),
        (fig.RELOAD_LATENCY.name, _percentiles(rel)),
        *((f"└ {tier}", _percentiles(tiers[tier][fig.tier_field(fig.TIER_RELOAD)])) for tier in tiers),
        ("", f"{fig.PROBE_ONLY.name} {by_key.get(fig.PROBE_ONLY.key, 0):,}; "
             f"{fig.UNUSABLE.name} {by_key.get(fig.UNUSABLE.key, 0):,} (no reload latency)"),
        (fig.PUBLISH_LATENCY.name, _percentiles(pub)),
        ("throughput", f"{fig.REUSE_BUSY.name} {fig.show(fig.REUSE_BUSY, thr[fig.REUSE_BUSY.key])} · "
                       f"{fig.PUBLISH_BUSY.name} {fig.show(fig.PUBLISH_BUSY, thr[fig.PUBLISH_BUSY.key])}"),
        ("", f"{fig.number(thr[fig.SKIPPED_RUN.key], fig.SKIPPED_RUN.unit)} {fig.SKIPPED_RUN.label}"),
        ("store errors", errors),
        *([("store (master)", _store_line(s["store_at_end"]))] if s.get("store_at_end") else []),
        *([("disk tier (master)", _disk_line(s["store_at_end"]))]
          if fig.STORE_DISK_USED.key in (s.get("store_at_end") or {}) else []),
        *([("hot copies (master)", fig.copies_text(s["store_at_end"]))]
          if fig.STORE_COPIES_STARTED.key in (s.get("store_at_end") or {}) else []),
        *ttft_lines(s),
    ]
    return "\n".join(rows(pairs, _LABEL - 1, indent="", gap=1))


_LABEL = 22  # the summary's label column, the space after it included


def miss_text(misses: Mapping[str, MissFigures]) -> str:
    """The summary's misses line: the missed full pages, then each reason that has any with its pages and
    share of the prompt tokens (:data:`kvtui.metrics.figures.MISS_SHARE`): ``1,310 full pages: first use
    1,204 (40.12% of tokens) · evicted 106 (3.50%)``."""
    from kvtui.core.misses import LABELS, NAMES, REASONS
    from kvtui.metrics import figures as fig

    parts: list[str] = []
    total = 0
    for r in REASONS:
        m: Mapping[str, Any] = misses.get(NAMES[r]) or {}
        pages = int(m.get("pages", 0))
        total += pages
        if pages:
            share = fig.show(fig.MISS_SHARE, m.get("share", 0.0)) + ("" if parts else " of tokens")
            parts.append(f"{LABELS[r]} {pages:,} ({share})")
    return f"{total:,} full pages" + (": " + " · ".join(parts) if parts else "")


def tier_text(tiers: Mapping[str, Mapping[str, Any]], count: Any, rate: Any = None) -> str:
    """``KV page hits by tier: memory 24,441 (63.65%) · disk 4,381 (11.41%)``: a :data:`kvtui.metrics.figures.TIER`
    count of each tier of the summary's ``tiers``, with its ``rate`` figure in brackets (None: none)."""
    from kvtui.metrics import figures as fig

    parts = []
    for tier, d in tiers.items():
        part = f"{tier} {d.get(fig.tier_field(count), 0):,}"
        if rate is not None:
            part += f" ({fig.show(rate, d.get(fig.tier_field(rate), 0.0))})"
        parts.append(part)
    return f"{count.name}: " + " · ".join(parts)


def hot_text(replicated: int) -> str:
    """``KV page hits with a hot replica: 4,120 (two memory replicas or more)``
    (:data:`kvtui.metrics.figures.HOT_PAGES_HIT`; the row under the KV page hits)."""
    from kvtui.metrics import figures as fig

    return f"{fig.HOT_PAGES_HIT.name}: {replicated:,} (two memory replicas or more)"


def _disk_line(store: Mapping[str, int]) -> str:
    """``disk 31.2 MiB of 64.0 MiB · offloaded 5,673 · disk evicted 0 · promoted 0`` (the Store panel's labels)."""
    from kvtui.core.units import format_bytes
    from kvtui.metrics import figures as fig

    cap = store.get(fig.STORE_DISK_CAPACITY.key)
    parts = [f"{fig.STORE_DISK_USED.label} {format_bytes(store[fig.STORE_DISK_USED.key])}"
             + (f" of {format_bytes(cap)}" if cap else "")]
    parts += [f"{f.label} {store[f.key]:,}" for f in (fig.STORE_OFFLOADED, fig.STORE_DISK_EVICTED, fig.STORE_PROMOTED)
              if f.key in store]
    return " · ".join(parts)


def _store_line(store: Mapping[str, int]) -> str:
    """``keys 1,234 · evicted 56 · alloc failures 0 · used 12.0 MiB of 64.0 MiB`` (the Store panel's labels)."""
    from kvtui.core.units import format_bytes
    from kvtui.metrics import figures as fig

    parts = [f"{f.label} {store[f.key]:,}" for f in (fig.STORE_KEYS, fig.STORE_EVICTED, fig.STORE_ALLOC_FAILS)
             if f.key in store]
    if fig.STORE_USED.key in store:
        cap = store.get(fig.STORE_CAPACITY.key)
        parts.append(f"{fig.STORE_USED.label} {format_bytes(store[fig.STORE_USED.key])}"
                     + (f" of {format_bytes(cap)}" if cap else ""))
    return " · ".join(parts)


def ttft_lines(s: RunSummary) -> list[tuple[str, str]]:
    """The summary's TTFT rows, ``(label, text)`` (estimates, with their basis;
    :func:`kvtui.metrics.ttft_saved.summary_fields`), the break-even marked when the reloads were slower than
    recomputing."""
    from kvtui.metrics import figures as fig

    est, t = s.get("ttft_estimate") or {}, s.get("ttft_saved_ms")
    if t is None:
        return [("TTFT saved", est.get("off", "no estimate"))] if est else []
    ratio, slower = s.get("reload_vs_recompute"), s.get("reloads_slower_than_recompute") or 0
    mark, marked = "", []
    if ratio is not None:
        mark = f" · {fig.RELOAD_VS_RECOMPUTE.label} {fig.show(fig.RELOAD_VS_RECOMPUTE, ratio)}" + (
            f" ({slower:,} of {plural(t['count'], 'request')} slower)" if slower and ratio <= 1 else "")
        if ratio > 1:
            marked = [("", f"RELOAD SLOWER THAN RECOMPUTE ({slower:,} of {plural(t['count'], 'request')})")]
    saved = fig.TTFT_SAVED
    return [(saved.name, f"p50 {fig.show(saved, t['p50'])} · p99 {fig.number(t['p99'], 'ms', saved.decimals)} · "
                         f"total {fig.number(t['total'] / 1e3, 's', 2)} s over {plural(t['count'], 'reload')}"),
            ("", f"{fig.GPU_SAVED_RUN.label} {fig.show(fig.GPU_SAVED_RUN, s['prefill_gpu_s_saved'] or 0.0)}{mark}"),
            *marked, *_tier_ttft_lines(s.get("tiers") or {}), ("", f"estimate: {est.get('basis', '?')}")]


def _tier_ttft_lines(tiers: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The summary's TTFT rows of each tier (:data:`kvtui.metrics.figures.TIER_TTFT_SAVED` and the tier's reload
    against recomputing its tokens), the disk tier marked when reading from it was slower than recomputing."""
    from kvtui.metrics import figures as fig

    out, marked = [], []
    for tier, d in tiers.items():
        t, ratio = d.get(fig.tier_field(fig.TIER_TTFT_SAVED)), d.get(fig.tier_field(fig.TIER_VS_RECOMPUTE))
        if not t or not t.get("count"):
            continue
        slower = d.get(fig.tier_field(fig.TIER_SLOWER)) or 0
        out.append(f"{tier} {fig.number(t['total'] / 1e3, 's', 2)} s over {plural(t['count'], 'reload')} "
                   f"({fig.TIER_VS_RECOMPUTE.label} {fig.show(fig.TIER_VS_RECOMPUTE, ratio or 0.0)}"
                   + (f", {slower:,} slower)" if slower else ")"))
        if ratio is not None and ratio > 1:
            marked.append(("", f"{tier.upper()} READS SLOWER THAN RECOMPUTE ({slower:,} of "
                               f"{plural(t['count'], 'reload')})"))
    return ([("", f"by tier: {' · '.join(out)}")] if out else []) + marked
