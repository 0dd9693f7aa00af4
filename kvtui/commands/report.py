"""``kvtui report FILE``: the summary of a recorded session (same fields as ``kvtui run --json``) and an SVG
of its final dashboard, for sharing. No store is needed."""

from __future__ import annotations

import argparse

from kvtui.commands.output import check_writable, format_summary, open_session, write_json_atomic
from kvtui.core.layout import PageLayout


def register(subparsers) -> None:
    """Add the ``report`` subcommand."""
    p = subparsers.add_parser("report", help="summarise a recorded session (JSON, SVG of the final dashboard)",
                              description="Print the summary of a session recorded with --record or Ctrl+R: the "
                                          "same figures as `kvtui run --json`, computed from the session's final "
                                          "frame. No Mooncake store is needed.")
    p.add_argument("file", metavar="FILE", help="session file (.kvtui)")
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON to PATH")
    p.add_argument("--svg", metavar="PATH", help="write an SVG of the final dashboard (120x40) to PATH")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print (and optionally write) the summary; exit 2 for a file that is not a readable session."""
    import sys

    from kvtui.metrics.aggregate import summary_from_frame

    for path, flag in ((args.json, "--json"), (args.svg, "--svg")):
        if path and path != "-":
            check_writable(path, flag)
    reader = open_session(args.file)
    if reader.damaged:
        print(f"kvtui: {args.file} is damaged after frame {len(reader)}; reporting up to there", file=sys.stderr)
    final = reader.final_frame()
    summary = summary_from_frame(final)
    ctx = {k: reader.header[k] for k in ("layout", "page_bytes", "workload", "bad_rows_skipped", "concurrency",
                                          "store_mode") if k in reader.header}
    summary.update(ctx)
    if final.workload:
        summary["workload"] = final.workload  # the knobs as they were at the end, not at start-up
    at_end = (final.status or {}).get("layout")
    if at_end and "layout" in summary and at_end != PageLayout(**summary["layout"]).describe():
        summary["layout_at_end"] = at_end  # switched from the command palette; the totals cover both layouts
    summary["session"] = {"file": args.file, "frames": len(reader), "duration_s": reader.duration,
                          "kvtui_version": reader.meta.get("kvtui_version"),
                          "mooncake_version": reader.meta.get("mooncake_version"),
                          "started_at": reader.meta.get("started_at"), "damaged": reader.damaged}
    if args.json != "-":
        print(format_summary(summary))
    if args.json:
        write_json_atomic(args.json, summary)
    if args.svg:
        from kvtui.testing.demo import StaticSource
        from kvtui.tui.app import run_app

        run_app(StaticSource(final), None, headless=True, duration_s=0.5, screenshot=args.svg, size=(120, 40))
    return 0
