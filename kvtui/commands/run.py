"""``kvtui run``: drive a workload through the prefill and decode workers headless, then summarise.

Same engine as ``kvtui watch``; shows a progress bar (traces) or a live status line (scenarios) on stderr,
prints the summary and, with ``--json``, writes it (fields of :meth:`kvtui.metrics.aggregate.Aggregator.summary`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

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


def check_writable(path: str, flag: str) -> None:
    """``KvtuiError`` now, before any work, if ``path`` cannot be written later (tries to open it for
    appending, and removes it again if that created it)."""
    target = Path(path)
    parent = target.resolve().parent
    if target.is_dir():
        raise KvtuiError(f"{flag}: {path} is a directory")
    if not parent.is_dir():
        raise KvtuiError(f"{flag}: folder {parent} does not exist")
    existed = target.exists()
    try:
        with open(target, "ab"):
            pass
    except OSError as exc:
        raise KvtuiError(f"{flag}: {path} is not writable ({exc.strerror})") from None
    if not existed:
        target.unlink()


def check_new_file(path: str, flag: str) -> None:
    """``KvtuiError`` if ``path`` exists (a recording never overwrites anything) or cannot be created."""
    if Path(path).exists():
        raise KvtuiError(f"{flag}: {path} exists already; choose another name (kvtui never overwrites a file)")
    check_writable(path, flag)


def write_json_atomic(path: str, data: dict) -> None:
    """Write ``data`` as JSON via a temporary file and rename (a reader never sees half a file);
    ``-`` writes to standard output."""
    if path == "-":
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=str(target.resolve().parent))
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, target)


def run(args: argparse.Namespace) -> int:
    """Run the workload; exit 0, or 1 if any loaded page failed verification."""
    from kvtui.live import LiveSession
    from kvtui.metrics.aggregate import summary_from_frame

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
        first = ", ".join(f"line {p.line_no}: {p.reason}" for p in problems[:3])
        print(f"kvtui: skipped {len(problems)} bad trace rows ({first})", file=sys.stderr)
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


def run_context(args, layout, desc: dict, endpoints, bad_rows: int) -> dict:
    """What a summary says about the run besides its figures (also kept in a recorded session's header)."""
    return {"layout": layout.as_dict(), "page_bytes": layout.page_bytes, "workload": desc,
            "bad_rows_skipped": bad_rows, "concurrency": args.concurrency,
            "store_mode": "attached" if endpoints else "embedded"}


def session_header(args, layout, desc: dict, endpoints) -> dict:
    """The header of a recorded session: layout, workload spec and seed, cluster mode, model, keys."""
    return {**run_context(args, layout, desc, endpoints, 0), "seed": getattr(args, "seed", None),
            "model": args.model, "scheme": args.scheme, "trace": getattr(args, "trace", None),
            "layout_text": layout.describe(), "command": getattr(args, "command", None)}


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


def _percentiles(d: dict) -> str:
    if not d.get("count"):
        return "n/a (no samples)"
    return f"p50 {d['p50']:.2f} ms · p90 {d['p90']:.2f} · p99 {d['p99']:.2f} · max {d['max']:.2f} ({d['count']:,} samples)"


def format_summary(s: dict) -> str:
    """The human summary table of a run."""
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
        f"reload latency        {_percentiles(rel)}",
        f"publish latency       {_percentiles(pub)}",
        f"throughput            reuse read {thr['reuse_read_MBps']:.0f} MB/s · publish write "
        f"{thr['publish_write_MBps']:.0f} MB/s · {thr['tokens_skipped_per_s']:,.0f} tokens skipped/s",
        f"store errors          {errors}",
    ]
    return "\n".join(lines)
