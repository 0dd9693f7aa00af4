"""``kvtui report FILE``: the summary of a recorded session's span (same fields as ``kvtui run --json``, over
what happened while it was recorded) and an SVG of its final dashboard, for sharing. No store is needed.

A capacity sweep's result (``kvtui sweep --json``, recognised by its ``kind``) is shown instead: its table,
and its hit-rate curve in a terminal screen (:mod:`kvtui.tui.sweep_app`; ``--svg`` saves that screen)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, cast

from kvtui.commands.output import format_summary, full_setup, open_session, store_counts, write_json_atomic
from kvtui.config.exports import check_requests_log
from kvtui.config.paths import check_outputs, path_arg
from kvtui.config.plan import CONTEXT_KEYS
from kvtui.core.errors import KvtuiError
from kvtui.core.layout import PageLayout

if TYPE_CHECKING:
    from kvtui.core.panels import FrameStatus
    from kvtui.core.sweep import SweepResult
    from kvtui.metrics.summary import RunInputs, RunSummary
    from kvtui.session.reader import SessionReader


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` subcommand."""
    p = subparsers.add_parser("report", help="summarise a recorded session, or show a capacity sweep's curve",
                              description="Print the summary of a session recorded with --record or Ctrl+R: the "
                                          "same figures as `kvtui run --json`, over what happened while it was "
                                          "recorded (a recording started with Ctrl+R after 30 s covers only what "
                                          "followed). Given a sweep result (`kvtui sweep --json`), print its table "
                                          "and, in a terminal, show its hit-rate curve (q quits). No Mooncake "
                                          "store is needed.")
    p.add_argument("file", metavar="FILE", help="session file (.kvtui) or sweep result (.json of `kvtui sweep`)")
    p.add_argument("--json", type=path_arg, metavar="PATH",
                   help="write the summary (a sweep: the sweep) as JSON to PATH")
    p.add_argument("--svg", type=path_arg, metavar="PATH",
                   help="write an SVG of the final dashboard (a sweep: of its curve's screen), 120x40 cells, "
                        "to PATH")
    p.add_argument("--requests-log", type=path_arg, metavar="PATH",
                   help="write the recorded requests, one CSV row each, to PATH (the columns of "
                        "`kvtui run --requests-log`; .parquet needs pyarrow): every request that finished while the "
                        "session was recorded")
    p.set_defaults(func=run)


def _layout_dict(text: str | None) -> dict[str, int] | None:
    """The ``PageLayout.as_dict()`` of the preset described by ``text`` (a frame's ``status["layout"]``), or
    None if no preset reads so (a switch from the command palette always goes to a preset)."""
    from kvtui.core.layout import PRESETS

    return next((p.as_dict() for p in PRESETS.values() if text and p.describe() == text), None)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Print (and optionally write) the summary; exit 2 for a file that is not a readable session."""
    import dataclasses
    import sys

    from kvtui.metrics.aggregate import span_summary

    check_outputs(((args.json, "--json"), (args.svg, "--svg")))
    if args.requests_log:
        check_requests_log(args.requests_log)
    sweep = _sweep_of(args.file)
    if sweep is not None:
        return _report_sweep(args, sweep)
    reader = open_session(args.file)
    if args.requests_log:
        require_request_rows(reader, args.file)  # before any output
    warning = reader.warning("reporting")
    if warning:
        print(f"kvtui: {warning}", file=sys.stderr)
    first, final = reader.frame_at(0), reader.final_frame()
    summary = span_summary(final, first)
    if summary["span"]["latency_covers"] == "session":
        print(f"kvtui: {args.file} does not mark where its recording began (an older kvtui): counters cover the "
              "recorded frames, latencies the whole session", file=sys.stderr)
    # the header's context (RunContext's keys) and inputs as the recording's kvtui wrote them
    ctx = {k: reader.header[k] for k in ("layout", "page_bytes", "workload", "bad_rows_skipped", "concurrency",
                                          "store_mode") if k in reader.header}
    summary.update(cast("RunSummary", ctx))
    summary["setup"] = full_setup(reader.header.get("setup"), final.store, reader.meta)
    summary["store_at_end"] = store_counts(final.store)  # the store as the recording's last frame saw it
    summary["context"] = cast("RunInputs", {k: reader.header.get(k) for k in CONTEXT_KEYS if k in reader.header})
    if final.workload:
        summary["workload"] = final.workload  # the knobs as they were at the end, not at start-up
    inputs = reader.header.get("ttft_estimate")  # the TTFT estimate's inputs in full, as the run began
    if isinstance(inputs, dict) and inputs.get("basis") == summary["ttft_estimate"].get("basis"):
        summary["ttft_estimate"] = {**inputs, **summary["ttft_estimate"]}
    elif isinstance(inputs, dict):
        summary["ttft_estimate"]["at_start"] = inputs  # a layout switch changed the model since
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
                          "wal_missing": reader.wal_missing, "not_closed": reader.not_closed}
    if args.json != "-":
        print(format_summary(summary))
    if args.json:
        write_json_atomic(args.json, summary)
    if args.requests_log:
        rows = write_session_requests_log(reader, args.requests_log, args.file)
        print(f"kvtui: {rows:,} request rows → {args.requests_log}", file=sys.stderr)
    if args.svg:
        from kvtui.testing.demo import StaticSource
        from kvtui.tui.app import run_app

        # the dashboard as it was at the end, without the REC badge: a report is not a recording
        status: FrameStatus = {**(final.status or {})}
        status.pop("recording", None)
        status.pop("record_path", None)
        run_app(StaticSource(dataclasses.replace(final, status=status)), None, headless=True, duration_s=0.5,
                screenshot=args.svg, size=(120, 40))
    return 0


def _sweep_of(path: str) -> SweepResult | None:
    """The :class:`~kvtui.core.sweep.SweepResult` in ``path`` when it is a JSON file (its first character is
    ``{``), else None (a session, or anything else, for :func:`open_session` to judge). ``KvtuiError`` (one
    line) for JSON that is not valid or not a sweep result."""
    import json

    from kvtui.core.errors import KvtuiError
    from kvtui.core.sweep import sweep_from_dict

    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
            if not head.startswith(b"{"):
                return None
            f.seek(0)
            data = json.loads(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError):
        return None  # (open_session names the problem)
    except json.JSONDecodeError as exc:
        raise KvtuiError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                         "kvtui report reads sessions (.kvtui) and sweep results (kvtui sweep --json)") from None
    try:
        return sweep_from_dict(data, path)
    except ValueError as exc:
        hint = " (a run's --json is its summary already: kvtui compare reads it)" if "requests" in data else ""
        raise KvtuiError(f"{exc}; kvtui report reads sessions (.kvtui) and sweep results (kvtui sweep --json){hint}") \
            from None


def _report_sweep(args: argparse.Namespace, sweep: SweepResult) -> int:
    """A sweep result: its table (stdout), ``--json`` (the sweep again), ``--svg`` (its screen, headless), or,
    in a terminal without either, the screen itself until q."""
    import sys

    from kvtui.core.sweep import format_sweep_table
    from kvtui.tui.sweep_app import run_sweep_app

    if args.json != "-":
        print(format_sweep_table(sweep))
    if args.json:
        write_json_atomic(args.json, sweep.to_dict())
    if args.svg:
        return run_sweep_app(sweep, headless=True, screenshot=args.svg, size=(120, 40))
    if not args.json and sys.stdout.isatty() and sys.stdin.isatty():
        return run_sweep_app(sweep)
    return 0


def require_request_rows(reader: SessionReader, source: str) -> None:
    """``KvtuiError`` (one line) when session ``reader`` (from ``source``) holds no request rows."""
    if not reader.request_columns:
        raise KvtuiError(f"--requests-log: {source} holds no request rows (recorded in observe mode, or by a kvtui "
                         "from before sessions kept them); nothing written")


def write_session_requests_log(reader: SessionReader, path: str, source: str) -> int:
    """``--requests-log PATH``: the request rows recorded in session ``reader`` (from ``source``), written whole
    or not at all; returns the row count. ``KvtuiError`` when the session holds no request rows (recorded by an
    older kvtui that kept none, or in observe mode, which runs none)."""
    from kvtui.launch import open_requests_log

    require_request_rows(reader, source)
    log = open_requests_log(path, atomic=True)
    try:
        for row in reader.request_rows():
            log.write_row(row)
    except BaseException:
        log.discard()
        raise
    log.close()
    if log.error:
        raise KvtuiError(f"--requests-log: {log.error}")
    return int(log.rows)
