"""What the commands write and read besides their flags: JSON outputs (written atomically), the run summary's
human table, and recorded session files. Shared by several commands, so no command imports another."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from kvtui.core.errors import KvtuiError, OutputError
from kvtui.core.files import write_atomic


def write_json_atomic(path: str, data: dict) -> None:
    """Write ``data`` as JSON whole or not at all (:func:`kvtui.core.files.write_atomic`: a temporary file and a
    rename, the umask's permissions, through a link to the file it names); ``-`` writes to standard output.
    ``OutputError`` (one line, exit 3) when it cannot be written."""
    if path == "-":
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return

    def dump(f) -> None:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")

    try:
        write_atomic(path, dump)
    except OSError as exc:
        raise OutputError(f"could not write {path}: {exc.strerror or exc}") from None


def open_session(path: str):
    """A :class:`~kvtui.session.reader.SessionReader`, or ``KvtuiError`` with the reader's one-line reason."""
    from kvtui.session import SessionError
    from kvtui.session.reader import SessionReader

    try:
        return SessionReader(path)
    except SessionError as exc:
        raise KvtuiError(str(exc)) from None


def full_setup(setup: dict | None, store: Mapping[str, Any] | None, meta: dict | None = None) -> dict:
    """A run's ``setup`` (:func:`run_context`) as its ``--json``, its report and its recording all state it:
    the kvtui and Mooncake versions from a recording's ``meta`` where its header predates them, and, attached
    to a cluster (no ``store_bytes`` of its own), ``store_capacity_bytes``: the store's capacity the last frame
    scraped from the master (``store``: the frame's store block; bytes)."""
    out = dict(setup or {})
    for key in ("kvtui_version", "mooncake_version"):
        if meta and key not in out:
            out[key] = meta.get(key)
    capacity = (store or {}).get("capacity_bytes")
    if out.get("store_bytes") is None and capacity:
        out["store_capacity_bytes"] = int(capacity)
    return out


def _percentiles(d: dict) -> str:
    """One latency line from a summary's ``{count, p50, p90, p99, max}`` (ms, HdrHistogram figures)."""
    if not d.get("count"):
        return "n/a (no samples)"
    return (f"p50 {d['p50']:.2f} ms · p90 {d['p90']:.2f} · p99 {d['p99']:.2f} · max {d['max']:.2f} "
            f"({d['count']:,} samples)")


def format_summary(s: dict) -> str:
    """The human summary table of a run (``s``: :meth:`kvtui.metrics.aggregate.Aggregator.summary` fields);
    figures are named as in :mod:`kvtui.metrics.figures`."""
    from kvtui.metrics import figures as fig

    thr = s["throughput"]
    rel, pub = s["reload_ms"], s["publish_ms"]
    errors = ", ".join(f"{k} ×{v}" for k, v in s["errors"].items()) or "none"
    lines = [
        f"requests              {s['requests']:,} in {s['elapsed_s']:.1f} s ({thr['requests_per_s']:.1f} req/s)",
        f"prefill skipped       {s['tokens_hit']:,} of {s['tokens_input']:,} tokens ({s['token_hit_rate']:.2%})",
        f"KV page hits          {s['pages_hit']:,} of {s['pages_total']:,} full pages ({s['page_hit_rate']:.2%})",
        f"published             {s['pages_published']:,} pages; already present {s['pages_already_present']:,}; "
        f"failed {s['pages_failed']:,}",
        f"verified              {s['verified_pages']:,} pages byte-exact; mismatches {s['mismatches']:,}",
        f"{fig.RELOAD_LATENCY.name:<22}{_percentiles(rel)}",
        f"{'':<22}{fig.PROBE_ONLY.name} {s.get(fig.PROBE_ONLY.key, 0):,}; "
        f"{fig.UNUSABLE.name} {s.get(fig.UNUSABLE.key, 0):,} (no reload latency)",
        f"{fig.PUBLISH_LATENCY.name:<22}{_percentiles(pub)}",
        f"{'throughput':<22}{fig.REUSE_BUSY.name} {thr[fig.REUSE_BUSY.key]:.0f} {fig.REUSE_BUSY.unit} · "
        f"{fig.PUBLISH_BUSY.name} {thr[fig.PUBLISH_BUSY.key]:.0f} {fig.PUBLISH_BUSY.unit} · "
        f"{thr[fig.SKIPPED_RUN.key]:,.0f} {fig.SKIPPED_RUN.label}",
        f"store errors          {errors}",
        *ttft_lines(s),
    ]
    return "\n".join(lines)


def ttft_lines(s: dict) -> list[str]:
    """The summary's TTFT lines (estimates, with their basis; :func:`kvtui.metrics.ttft_saved.summary_fields`),
    the break-even marked when the reloads were slower than recomputing."""
    from kvtui.metrics import figures as fig

    est, t = s.get("ttft_estimate") or {}, s.get("ttft_saved_ms")
    if t is None:
        return [f"{'TTFT saved':<22}{est.get('off', 'no estimate')}"] if est else []
    ratio, slower = s.get("reload_vs_recompute"), s.get("reloads_slower_than_recompute") or 0
    mark = ""
    if ratio is not None:
        mark = f" · {fig.RELOAD_VS_RECOMPUTE.label} {ratio:.2f}×" + (
            f" — RELOAD SLOWER THAN RECOMPUTE ({slower:,} of {t['count']:,} requests)" if ratio > 1 else
            (f" ({slower:,} of {t['count']:,} requests slower)" if slower else ""))
    return [f"{fig.TTFT_SAVED.name:<22}p50 {t['p50']:.1f} ms · p99 {t['p99']:.1f} · "
            f"total {t['total'] / 1e3:.2f} s over {t['count']:,} reloads · "
            f"{fig.GPU_SAVED_RUN.label} {s['prefill_gpu_s_saved']:.2f} s{mark}",
            f"{'':<22}estimate: {est.get('basis', '?')}"]
