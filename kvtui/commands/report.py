"""``kvtui report FILE``: the summary of a recorded session's span (same fields as ``kvtui run --json``, over
what happened while it was recorded) and an SVG of its final dashboard, for sharing. No store is needed."""

from __future__ import annotations

import argparse

from kvtui.commands.output import check_writable, format_summary, open_session, write_json_atomic
from kvtui.core.layout import PageLayout


def register(subparsers) -> None:
    """Add the ``report`` subcommand."""
    p = subparsers.add_parser("report", help="summarise a recorded session (JSON, SVG of the final dashboard)",
                              description="Print the summary of a session recorded with --record or Ctrl+R: the "
                                          "same figures as `kvtui run --json`, over what happened while it was "
                                          "recorded (a recording started with Ctrl+R after 30 s covers only what "
                                          "followed). No Mooncake store is needed.")
    p.add_argument("file", metavar="FILE", help="session file (.kvtui)")
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON to PATH")
    p.add_argument("--svg", metavar="PATH", help="write an SVG of the final dashboard (120x40) to PATH")
    p.set_defaults(func=run)


def _layout_dict(text: str | None) -> dict | None:
    """The ``PageLayout.as_dict()`` of the preset described by ``text`` (a frame's ``status["layout"]``), or
    None if no preset reads so (a switch from the command palette always goes to a preset)."""
    from kvtui.core.layout import PRESETS

    return next((p.as_dict() for p in PRESETS.values() if text and p.describe() == text), None)


def run(args: argparse.Namespace) -> int:
    """Print (and optionally write) the summary; exit 2 for a file that is not a readable session."""
    import dataclasses
    import sys

    from kvtui.metrics.aggregate import span_summary

    for path, flag in ((args.json, "--json"), (args.svg, "--svg")):
        if path and path != "-":
            check_writable(path, flag)
    reader = open_session(args.file)
    warning = reader.warning("reporting")
    if warning:
        print(f"kvtui: {warning}", file=sys.stderr)
    first, final = reader.frame_at(0), reader.final_frame()
    summary = span_summary(final, first)
    if summary["span"]["latency_covers"] == "session":
        print(f"kvtui: {args.file} does not mark where its recording began (an older kvtui): counters cover the "
              "recorded frames, latencies the whole session", file=sys.stderr)
    ctx = {k: reader.header[k] for k in ("layout", "page_bytes", "workload", "bad_rows_skipped", "concurrency",
                                          "store_mode") if k in reader.header}
    summary.update(ctx)
    if final.workload:
        summary["workload"] = final.workload  # the knobs as they were at the end, not at start-up
    # `layout`: the one the recording began with (the session's own, unless switched before Ctrl+R)
    start = _layout_dict((first.status or {}).get("layout"))
    if start and "layout" in summary and start != summary["layout"]:
        summary["layout"] = start
        summary["page_bytes"] = PageLayout(**start).page_bytes
    at_end = _layout_dict((final.status or {}).get("layout"))
    if at_end and "layout" in summary and at_end != summary["layout"]:
        summary["layout_at_end"] = at_end  # switched from the command palette; the totals cover both layouts
    summary["session"] = {"file": args.file, "frames": len(reader), "duration_s": reader.duration,
                          "kvtui_version": reader.meta.get("kvtui_version"),
                          "mooncake_version": reader.meta.get("mooncake_version"),
                          "started_at": reader.meta.get("started_at"), "damaged": reader.damaged,
                          "wal_missing": reader.wal_missing}
    if args.json != "-":
        print(format_summary(summary))
    if args.json:
        write_json_atomic(args.json, summary)
    if args.svg:
        from kvtui.testing.demo import StaticSource
        from kvtui.tui.app import run_app

        # the dashboard as it was at the end, without the REC badge: a report is not a recording
        status = {k: v for k, v in (final.status or {}).items() if k not in ("recording", "record_path")}
        run_app(StaticSource(dataclasses.replace(final, status=status)), None, headless=True, duration_s=0.5,
                screenshot=args.svg, size=(120, 40))
    return 0
