"""``kvtui run``: drive a workload through the prefill and decode workers headless, then summarise.

Same engine as ``kvtui watch``; shows a progress bar (traces) or a live status line (scenarios) on stderr,
prints the summary and, with ``--json``, writes it (fields of :meth:`kvtui.metrics.aggregate.Aggregator.summary`
and ``interrupted``). ``--duration`` bounds the whole command: start-up counts, and the run is abandoned when
it is reached (the command ends ~1 s later). Ctrl-C or SIGTERM abandon the run the same way, then print the
summary of the requests that finished and write ``--json`` with ``"interrupted": true`` before exiting 130 / 143;
during start-up, before any request, ``--json`` says so too (``"interrupted_during": "start-up"``, no figures).
``--prometheus`` serves the figures while the run goes on and, pinned to the summary's frame,
``--prometheus-linger`` seconds after it; ``--requests-log`` writes one row per request
(:mod:`kvtui.config.exports`, :class:`kvtui.launch.Outputs`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kvtui.commands.output import format_summary, full_setup, store_counts, write_json_atomic
from kvtui.config.cluster import add_cluster_arguments, add_listen_arguments
from kvtui.config.estimate import add_estimate_arguments
from kvtui.config.exports import add_export_arguments, exports_from_args
from kvtui.config.layout import add_page_arguments
from kvtui.config.paths import check_new_file, check_outputs, path_arg
from kvtui.config.plan import RunPlan, plan_from_args
from kvtui.config.workload import add_workload_arguments, skipped_text
from kvtui.core.errors import KvtuiError, OutputError, bad_value
from kvtui.core.failover import loss_summary, loss_text, report_lines
from kvtui.core.text import plural
from kvtui.core.units import duration_arg
from kvtui.launch import Outputs, open_session, start_recording
from kvtui.metrics.figures import failover_lines, failover_ranges
from kvtui.metrics.summary import RunSummary, add_context
from kvtui.runtime.procs import uninterrupted

if TYPE_CHECKING:
    from kvtui.live import LiveSession


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``run`` subcommand."""
    p = subparsers.add_parser(
        "run", help="drive a workload through the store headless and print a summary",
        description="Start (or attach to) a Mooncake cluster, a prefill and a decode worker, drive a synthetic "
                    "shared-prefix scenario or a FAST'25 trace through them, and print what was reused: page and "
                    "token hit rates, pages published, verification, errors by Mooncake code, latency "
                    "percentiles and throughput.")
    add_workload_arguments(p)
    g = p.add_argument_group("run bounds and output")
    g.add_argument("--duration", type=duration_arg, metavar="SECONDS",
                   help="end the run this many seconds (or 90s, 2m: with a unit) after the command started, "
                        "start-up included (requests under way are abandoned; the command ends within ~1.5 s "
                        "after). Default: 10 s for scenarios, the whole file for traces")
    g.add_argument("--requests", type=int, metavar="N", help="stop after issuing N requests (default: no limit)")
    g.add_argument("--concurrency", type=int, default=1, metavar="N",
                   help="requests in flight (default 1: strictly one after another, exact trace replay)")
    g.add_argument("--json", type=path_arg, metavar="PATH",
                   help="write the summary as JSON to PATH (- for standard output)")
    g.add_argument("--quiet", action="store_true", help="no progress line and no notes (warnings stay)")
    g.add_argument("--record", type=path_arg, metavar="FILE", help="record the session (frames and events) to FILE for "
                   "`kvtui replay` and `kvtui report`")
    add_page_arguments(p)
    add_estimate_arguments(p)
    add_cluster_arguments(p)
    add_listen_arguments(p)
    add_export_arguments(p, linger=True, save_trace=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Run the workload; exit 0, or 1 if any loaded page failed verification, or 2 when a process of its
    embedded cluster died (the summary and ``--json`` cover the requests that finished). ``started_at``:
    ``time.monotonic()`` when the command was called (``--duration`` counts from it)."""
    exports = exports_from_args(args)
    with Outputs(exports) as outputs:  # --prometheus binds now: a busy port fails before anything starts
        if args.requests is not None and args.requests < 1:
            raise bad_value("--requests", "at least 1", args.requests)
        if args.duration is not None and not args.duration > 0:
            raise bad_value("--duration", "positive seconds", args.duration)
        check_outputs(((args.json, "--json"),))
        if args.record:
            check_new_file(args.record, "--record")
        bounded = args.duration or args.trace or args.requests
        try:
            plan = plan_from_args(args, started_at=started_at, exports=exports, max_requests=args.requests,
                                  run_for_s=args.duration if bounded else 10.0, duration_s=args.duration,
                                  quiet=args.quiet)
        except KeyboardInterrupt:
            _interrupted_at_start(args, None, started_at)
            raise
        return _run(plan, args, outputs)


def _interrupted_at_start(args: argparse.Namespace, plan: RunPlan | None, started_at: float | None) -> None:
    """Ctrl-C or SIGTERM before the first request could start: ``--json`` (when given) is written all the same,
    with ``"interrupted": true``, ``"interrupted_during": "start-up"``, no figures, and what the plan says about
    the run (its workload, layout and setup; nothing when it was interrupted while it was being made)."""
    import time

    from kvtui.metrics.aggregate import Aggregator

    if not args.json:
        return
    with uninterrupted():  # a second Ctrl-C must not cost the file
        summary = Aggregator(estimator=plan.estimator if plan is not None else None).summary()
        summary["elapsed_s"] = time.monotonic() - started_at if started_at is not None else 0.0
        if plan is not None:
            add_context(summary, plan.context())
            summary["setup"] = full_setup(summary["setup"], None)
            summary["context"] = plan.inputs()
        summary.update({"interrupted": True, "interrupted_during": "start-up", "requests_lost": 0,
                        "requests_rerun": 0})
        write_json_atomic(args.json, summary)
        if args.json != "-":
            print(f"kvtui: interrupted during start-up, before any request: {args.json} says so", file=sys.stderr)


def _run(plan: RunPlan, args: argparse.Namespace, outputs: Outputs) -> int:
    from kvtui.metrics.aggregate import summary_from_frame
    from workload import skipped_count

    problems = plan.workload.problems
    if problems:
        print(f"kvtui: {skipped_text(problems)}", file=sys.stderr)
    _say_note(plan.cluster.store_note, plan.quiet)
    try:
        session = open_session(plan, outputs=outputs,
                               echo=lambda text: print(f"kvtui: {text}", file=sys.stderr, flush=True))
    except KeyboardInterrupt:  # (open_session stopped what had started)
        _interrupted_at_start(args, plan, plan.started_at)
        raise
    if session.network and not plan.quiet:
        print(f"kvtui: network {session.network}", file=sys.stderr)
    if plan.cluster.listen is not None:
        print(f"kvtui: listening for remote workers on {plan.cluster.listen.host}:{plan.cluster.listen.port}",
              file=sys.stderr, flush=True)
    total = plan.workload.description.get("total") if plan.workload.is_trace else plan.max_requests
    if plan.max_requests and total:
        total = min(total, plan.max_requests)
    if outputs.url:
        print(f"kvtui: Prometheus metrics on {outputs.url}", file=sys.stderr)
    interrupted: KeyboardInterrupt | None = None
    stopped_by: str | None = None  # a process died that nothing restarts: summarised, then one line, exit 2
    shown = 0
    try:
        start_recording(session, args.record)
        session.start()
        shown = _progress(session, total, quiet=plan.quiet or not sys.stderr.isatty(), lost=lambda: _lost(session))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (kvtui.cli): summarise what finished, then re-raise
        interrupted = exc  # (kvtui.cli exits 130 / 143)
        shown = len(session.store_full.lines)
    except ClusterLost as exc:  # summarised as an interrupted run, then one line and exit 2
        stopped_by, shown = str(exc), len(session.store_full.lines)
    except BaseException:
        session.stop()
        raise
    with uninterrupted():  # a second Ctrl-C must not cost the summary of the first
        session.halt()  # (an interrupted run: abandon what is under way; a finished one: nothing to do)
        final = session.final_frame()
        for line in outputs.finish(final, notes=not plan.quiet):  # later scrapes show exactly the summary's
            print(f"kvtui: {line}", file=sys.stderr)
        for _t, text in session.store_full.lines[shown:]:  # a burst the run ended in
            print(f"kvtui: {text}", file=sys.stderr)
        session.stop(final)
        if session.recording.error:  # (the frames before it are in the file, readable)
            print(f"kvtui: {session.recording.error}", file=sys.stderr)
        if session.error is not None and interrupted is None and stopped_by is None:
            stopped_by = str(session.error)  # (a worker died: what finished is summarised as well)
        summary = summary_from_frame(final)  # + the TTFT estimate's inputs in full
        if session.estimator is not None:
            summary["ttft_estimate"] = {**summary["ttft_estimate"], **session.estimator.inputs()}
        rc = _report(plan, args, summary, final.workload or dict(plan.workload.description), skipped_count(problems),
                     session, interrupted, final.store, stopped_by)
    if interrupted is not None:
        raise interrupted
    if stopped_by is not None:
        raise KvtuiError(f"run stopped: {stopped_by}")
    outputs.linger()
    if session.recording.error and rc == 0:  # an output that could not be written: exit 3, as any other
        return OutputError.exit_code
    return rc


def _say_note(line: str, quiet: bool) -> None:
    """The plan's line on the store's size (``--quiet`` keeps only a warning)."""
    if line and (not quiet or line.startswith("warning")):
        print(f"kvtui: {line}", file=sys.stderr, flush=True)


def _report(plan: RunPlan, args: argparse.Namespace, summary: RunSummary, desc: Mapping[str, Any], bad_rows: int,
            session: LiveSession, interrupted: KeyboardInterrupt | None, store: Mapping[str, Any] | None = None,
            stopped_by: str | None = None) -> int:
    """Print the summary and its notes, write ``--json``; the exit code (1 if a page failed verification or a
    failover lost acknowledged pages: every report is printed, and the loss said by cause).
    ``store``: the last frame's store block (the capacity of an attached cluster, :func:`full_setup`);
    ``stopped_by``: why the run was stopped, a process that died and that nothing restarts (a worker, or one of
    its embedded cluster's): ``stopped_by`` in the JSON, which says ``interrupted``."""
    counts = session.counts()
    add_context(summary, plan.context(desc, bad_rows))
    summary["setup"] = full_setup(summary["setup"], store)
    summary["store_at_end"] = store_counts(store)
    summary["context"] = plan.inputs()
    summary["interrupted"] = interrupted is not None or stopped_by is not None
    if stopped_by is not None:
        summary["stopped_by"] = stopped_by
    if summary["interrupted"]:
        gone = counts.dropped + counts.abandoned
        print(f"kvtui: {'stopped' if stopped_by else 'interrupted'}: the summary covers the requests that finished "
              f"({counts.completed:,}); {gone:,} submitted were abandoned, queued or under way", file=sys.stderr)
    elif summary["requests"] == 0 and plan.duration_s is not None and counts.issued == 0:
        print(f"kvtui: --duration {plan.duration_s:g} s ended before the first request: it counts the whole "
              "command, start-up included", file=sys.stderr)
    summary["requests_lost"], summary["requests_rerun"] = counts.lost, counts.rerun
    for rep in session.replacements:
        codes = ", ".join(f"{n} exit code {c}" for n, c in zip(rep.dead, rep.exit_codes)) or rep.reason
        print(f"kvtui: at {rep.t:.1f} s a worker died ({codes}): every worker restarted in {rep.took_s:.1f} s; "
              f"{plural(rep.lost, 'request')} {'submitted again' if counts.rerun_lost else 'lost'}", file=sys.stderr)
    if counts.lost:
        print(f"kvtui: lost when a worker died: {plural(counts.lost, 'request')} (the summary covers the requests "
              "that finished)", file=sys.stderr)
    ha = session.cluster.endpoints.ha
    if session.failovers or ha:  # (kvtui's HA cluster: K in the monitor, or a fault of another's; or none)
        reports = [r.as_dict() for r in session.failovers]
        summary["failovers"] = {"n": len(reports), "ranges": failover_ranges(reports), "reports": reports,
                                "pages_lost": loss_summary(reports)}
    if args.json != "-":
        print(format_summary(summary))
        if session.failovers:
            print(failover_lines(len(session.failovers), summary["failovers"]["ranges"]))
            for line in report_lines(session.failovers):
                print(line)
        elif ha:
            of = (plural(len(session.cluster.master_names()), "master") if session.cluster.embedded
                  else "masters kvtui attached to")
            print(f"failovers             none (an HA cluster of {of})")
    failovers = summary.get("failovers")
    lost = failovers["pages_lost"] if failovers else {}
    if lost.get("pages_lost"):  # (a put that returned 0, gone afterwards: a failure, as a wrong byte is)
        print(f"kvtui: error: {loss_text(lost)}", file=sys.stderr)
    if summary["workload"].get("kind") == "trace" and not summary["workload"]["complete"] and not plan.quiet:
        w = summary["workload"]
        print(f"kvtui: the run stopped after {w['done']:,} of {w['total']:,} trace rows", file=sys.stderr)
    if summary["requests"] and summary["pages_published"] == 0 and summary["pages_failed"]:
        print("kvtui: no page could be published (" + ", ".join(summary["errors"]) + "); does the store have a "
              "segment with free space?", file=sys.stderr)
    if args.json:
        write_json_atomic(args.json, summary)
    return 1 if summary["mismatches"] or lost.get("pages_lost") else 0


class ClusterLost(Exception):
    """A process of the run's embedded cluster died (the message says which, with its exit code, and when):
    nothing will start it again, so a run that waited for it would wait for ever."""


def _lost(session: LiveSession) -> str | None:
    """The message of :class:`ClusterLost` when a process of the session's embedded cluster has exited, else None."""
    proc = session.dead_cluster_process()
    if proc is None:
        return None
    hint = " (kvtui watch offers M to restart its master)" if proc.name == "master" else ""
    return (f"{proc.title} kvtui started died (exit code {proc.popen.returncode}) at {session.now():.1f} s; "
            f"nothing restarts it in a kvtui run{hint}")


def _outage_text(session: LiveSession) -> str:
    """What an outage that holds dispatch is, in a few words."""
    if session.outage_of() == "leader":
        return "no master serves (the leader is gone or hung; the others elect a new one): dispatch held"
    return "store unreachable (RPC_FAIL: the master, or the store node of dummy workers): dispatch held"


def _progress(session: LiveSession, total: int | None, quiet: bool, lost: Callable[[], str | None] | None = None
              ) -> int:
    """Block until the session's workload is done, showing a rich progress bar or status line on stderr, and
    each line of its store-full alarm (:class:`~kvtui.metrics.store_full.StoreFullAlarm`: a burst of refused
    puts) as it comes, also when ``quiet`` (then also a line when an outage holds dispatch and one when it
    ends); returns how many of the alarm's lines were shown. ``lost()``: checked at each poll; the text it
    returns, if any, is raised as :class:`ClusterLost`."""
    alarm = session.store_full
    shown = 0

    def check_lost() -> None:
        if lost is not None and (text := lost()):
            raise ClusterLost(text)

    def new_lines() -> list[str]:
        nonlocal shown
        lines = [text for _t, text in (alarm.lines[shown:] if alarm is not None else [])]
        shown += len(lines)
        return lines

    if quiet:  # (stderr not a terminal: an outage's start and end are a line each, as the alarm's lines)
        held = False
        while not session.wait(0.2):
            check_lost()
            for text in new_lines():
                print(f"kvtui: {text}", file=sys.stderr, flush=True)
            if session.outage != held:
                held = session.outage
                print(f"kvtui: {_outage_text(session)}" if held else "kvtui: the store answers again: dispatch resumed",
                      file=sys.stderr, flush=True)
        return shown
    import time

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
        burst_until = 0.0
        while not session.wait(0.25):
            check_lost()
            t = session.totals()
            status = f"hit {t['token_hit_rate']:.1%} · published {t['pages_published']}"
            for text in new_lines():
                prog.console.print(f"kvtui: {text}", markup=False, highlight=False)  # above the bar
                burst_until = time.monotonic() + 10.0
            if time.monotonic() < burst_until:
                status += " · [bold red]store full: puts refused (see above)[/]"
            if session.outage:
                status = f"[bold red]{_outage_text(session)} until it answers[/]"
            prog.update(task, completed=t["requests"], status=status)
    return shown
