"""``kvtui run``: drive a workload through the prefill and decode workers headless, then summarise.

Same engine as ``kvtui watch``; shows a progress bar (traces) or a live status line (scenarios) on stderr,
prints the summary and, with ``--json``, writes it (fields of :meth:`kvtui.metrics.aggregate.Aggregator.summary`).
"""

from __future__ import annotations

import argparse
import sys

from kvtui.commands.common import (
    add_cluster_arguments,
    add_page_arguments,
    add_workload_arguments,
    engine_options,
    layout_name,
    layout_of,
    make_workload,
    start_engine,
    start_recording,
)
from kvtui.commands.output import (
    check_new_file,
    check_writable,
    format_summary,
    run_context,
    session_header,
    write_json_atomic,
)
from kvtui.core.errors import KvtuiError


def register(subparsers) -> None:
    """Add the ``run`` subcommand."""
    p = subparsers.add_parser(
        "run", help="drive a workload through the store headless and print a summary",
        description="Start (or attach to) a Mooncake cluster, a prefill and a decode worker, drive a synthetic "
                    "shared-prefix scenario or a FAST'25 trace through them, and print what was reused: page and "
                    "token hit rates, pages published, verification, errors by Mooncake code, latency "
                    "percentiles and throughput.")
    add_workload_arguments(p)
    g = p.add_argument_group("run bounds and output")
    g.add_argument("--duration", type=float, metavar="SECONDS", help="stop issuing after this many seconds "
                   "(default: 10 s for scenarios, the whole file for traces)")
    g.add_argument("--requests", type=int, metavar="N", help="stop after issuing N requests")
    g.add_argument("--concurrency", type=int, default=1, metavar="N",
                   help="requests in flight (default 1: strictly one after another, exact trace replay)")
    g.add_argument("--json", metavar="PATH", help="write the summary as JSON to PATH")
    g.add_argument("--quiet", action="store_true", help="no progress line")
    g.add_argument("--record", metavar="FILE", help="record the session (frames and events) to FILE for "
                   "`kvtui replay` and `kvtui report`")
    add_page_arguments(p)
    add_cluster_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the workload; exit 0, or 1 if any loaded page failed verification."""
    from kvtui.live import LiveSession
    from kvtui.metrics.aggregate import summary_from_frame
    from workload import skipped_rows_text

    layout = layout_of(args)
    if args.concurrency < 1:
        raise KvtuiError("--concurrency must be at least 1")
    if args.requests is not None and args.requests < 1:
        raise KvtuiError("--requests must be at least 1")
    if args.duration is not None and not args.duration > 0:
        raise KvtuiError("--duration must be positive seconds")
    if args.json and args.json != "-":
        check_writable(args.json, "--json")
    if args.record:
        check_new_file(args.record, "--record")
    workload, desc, problems = make_workload(args, layout)
    if problems:
        print(f"kvtui: {skipped_rows_text(problems)}", file=sys.stderr)
    duration = args.duration if (args.duration or args.trace or args.requests) else 10.0
    options, endpoints = engine_options(args, layout)
    engine = start_engine(options, endpoints)
    if options.cluster.isolation and not args.quiet:
        print(f"kvtui: network {options.cluster.isolation}", file=sys.stderr)
    total = desc.get("total") if args.trace else args.requests
    if args.requests and total:
        total = min(total, args.requests)
    session = LiveSession(engine, workload, desc, concurrency=args.concurrency, max_requests=args.requests,
                          duration_s=duration, layout_text=layout.describe(), layout_name=layout_name(args, layout),
                          header=session_header(args, layout, desc, endpoints))
    final = None
    try:
        start_recording(session, args.record)
        session.start()
        _progress(session.driver, session.agg, total, quiet=args.quiet or not sys.stderr.isatty())
        final = session.final_frame()
        if session.driver.error is not None:
            raise KvtuiError(f"run stopped: {session.driver.error}")
    finally:
        session.stop(final)
    summary = summary_from_frame(final)
    summary.update(run_context(args, layout, final.workload or desc, endpoints, len(problems)))
    if args.json != "-":
        print(format_summary(summary))
    if summary["workload"].get("kind") == "trace" and not summary["workload"]["complete"]:
        w = summary["workload"]
        print(f"kvtui: the run stopped after {w['done']:,} of {w['total']:,} trace rows", file=sys.stderr)
    if summary["requests"] and summary["pages_published"] == 0 and summary["pages_failed"]:
        print("kvtui: no page could be published (" + ", ".join(summary["errors"]) + "); does the store have a "
              "segment with free space?", file=sys.stderr)
    if args.json:
        write_json_atomic(args.json, summary)
    return 1 if summary["mismatches"] else 0


def _progress(driver, agg, total, quiet: bool) -> None:
    """Block until the driver is done, showing a rich progress bar or status line on stderr."""
    if quiet:
        while not driver.done.wait(0.2):
            pass
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    cols = [TextColumn("[bold]kvtui run"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*cols, console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task("run", total=total, status="")
        while not driver.done.wait(0.25):
            t = agg.totals()
            status = f"hit {t['token_hit_rate']:.1%} · published {t['pages_published']}"
            if driver.outage:
                status = "[bold red]master unreachable: dispatch held until it answers[/]"
            prog.update(task, completed=t["requests"], status=status)
