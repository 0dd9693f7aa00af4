"""``kvtui soak``: run a workload for hours (the engine and driver of ``kvtui run``), sample every process's
memory, file descriptors and TCP sockets, and with ``--chaos`` inject faults at seeded random moments,
timing each one's recovery; print a summary with the growth per hour of each resource (:mod:`kvtui.soak`).

This module parses and checks the flags; :class:`kvtui.soak.runner.Soak` does the rest. Exit codes: 0, 1
when a loaded page failed verification, a failover or a store fault lost acknowledged pages (a put that returned
0, gone afterwards) or the soak stopped early (a worker that could not be replaced),
2 on bad input, 130 / 143 on Ctrl-C / SIGTERM (after the summary of what ran, ``"interrupted": true``).
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
from dataclasses import replace

from kvtui.commands.output import write_json_atomic
from kvtui.config.cluster import add_cluster_arguments
from kvtui.config.layout import add_page_arguments
from kvtui.config.paths import check_new_file, check_outputs, path_arg
from kvtui.config.plan import RunPlan, plan_from_args
from kvtui.config.workload import add_workload_arguments, skipped_text
from kvtui.core.errors import KvtuiError, OutputError, bad_value
from kvtui.core.failover import loss_text
from kvtui.core.text import plural
from kvtui.core.topology import DEFAULT_ROUTE
from kvtui.core.units import parse_duration
from kvtui.launch import open_session, start_recording
from kvtui.runtime.procs import uninterrupted

MAX_PAUSE_S = 60.0  # a master-pause or link-cut longer than this is an outage, not a fault to recover from

def register(subparsers) -> None:
    """Add the ``soak`` subcommand."""
    from kvtui.soak.schedule import DISK_FULL, KINDS, LINK_CUT, WHAT

    p = subparsers.add_parser(
        "soak", help="hours of load with resources tracked and, with --chaos, random faults injected",
        description="Run a workload through the prefill and decode workers for --duration, sample every "
                    "process's RSS and open file descriptors, the TCP sockets of kvtui's process tree "
                    "(ESTABLISHED, TIME_WAIT), the master's keys and used bytes, request rate, hit rate and "
                    "errors by code; with --chaos, inject faults at seeded random moments ("
                    + ", ".join(f"{k}: {WHAT[k]}" for k in KINDS)
                    + ") and time each one's recovery. Prints a progress line, writes the series "
                    "(--series CSV) and a summary: growth per hour of each resource (least-squares slopes "
                    "after --warmup), faults injected and recovered, recovery times, requests lost or failed, "
                    "wrong bytes (must be 0), and with --ha the acknowledged pages each failover lost, by the "
                    "masters' own error codes, and after each store-kill and disk-full the acknowledged pages gone: "
                    "with the killed node's DRAM or evicted by the disk tier (expected), else lost (must be 0: "
                    "exit 1 otherwise). --seed also seeds the fault schedule.")
    add_workload_arguments(p)
    g = p.add_argument_group("soak")
    g.add_argument("--duration", default="2h", metavar="DURATION",
                   help="how long the soak runs, start-up included: 2h, 30m, 90s, 1h30m or seconds (default 2h)")
    g.add_argument("--chaos", type=float, default=0.0, metavar="RATE",
                   help="faults per minute, at seeded random moments (default 0: no faults). None in the first "
                        "min(20 s, 5 %%) and the last min(60 s, 20 %%) of the soak; the next fault waits until "
                        "the previous one recovered")
    g.add_argument("--faults", default="all", metavar="KINDS",
                   help=f"comma-separated fault kinds to draw from: {', '.join(KINDS)} (default all that apply: "
                        f"an attached cluster gets worker-kill only; {LINK_CUT} needs --hosts auto, {DISK_FULL} "
                        "--disk-size)")
    g.add_argument("--sample-s", type=float, default=5.0, metavar="SECONDS",
                   help="seconds between two samples (default 5)")
    g.add_argument("--warmup", default=None, metavar="DURATION",
                   help="samples before this are left out of the growth fits (default min(5 min, 20 %% of "
                        "--duration): kvtui's bounded buffers fill during the first minutes)")
    g.add_argument("--pause-s", type=float, default=3.0, metavar="SECONDS",
                   help="how long a master-pause fault keeps the master stopped (SIGSTOP … SIGCONT), a "
                        "link-cut keeps a host's link down, and, with --ha, a leader-hang keeps the leader stopped "
                        "and an etcd-outage etcd, at most 60 (default 3; Ctrl-C ends each at once). An HA leader "
                        "holds its lease in etcd for ~5 s: a shorter leader-hang or etcd-outage stalls clients "
                        "without a failover")
    g.add_argument("--recovery-timeout", type=float, default=120.0, metavar="SECONDS",
                   help="a fault not recovered this long after its injection counts as not recovered, and the "
                        "next one may come (default 120)")
    g.add_argument("--client-ttl", type=int, default=10, metavar="SECONDS",
                   help="embedded master's client TTL: a killed store node's pages stay listed (reads fail with "
                        "TRANSFER_FAIL) and a stopped client stays counted this long (default 10, Mooncake's); a "
                        "store-kill's loss check waits for it, plus 3 s")
    g.add_argument("--concurrency", type=int, default=1, metavar="N", help="requests in flight (default 1)")
    g.add_argument("--json", type=path_arg, metavar="PATH",
                   help="write the summary as JSON to PATH (- for standard output)")
    g.add_argument("--series", type=path_arg, metavar="PATH.csv",
                   help="write one CSV row per sample to PATH, as the soak goes")
    g.add_argument("--record", type=path_arg, metavar="FILE", help="record the session (frames and events, the faults "
                   "included) to FILE for `kvtui replay` and `kvtui report`")
    g.add_argument("--quiet", action="store_true", help="no progress line (fault lines are still printed)")
    add_page_arguments(p)
    add_cluster_arguments(p)
    p.set_defaults(func=run)


def _plan(args: argparse.Namespace):
    """The :class:`~kvtui.soak.runner.SoakPlan` of the flags; ``KvtuiError`` on a bad value."""
    from kvtui.soak.runner import SoakPlan, default_warmup
    from kvtui.soak.schedule import parse_kinds

    duration = parse_duration(args.duration, "--duration")
    if not duration > 0:
        raise bad_value("--duration", "positive seconds", duration)
    if not (math.isfinite(args.chaos) and args.chaos >= 0):
        raise KvtuiError(f"--chaos must be a non-negative number of faults per minute, got {args.chaos:g}")
    if not (math.isfinite(args.sample_s) and 0 < args.sample_s <= duration):
        raise KvtuiError(f"--sample-s must be positive seconds, at most --duration, got {args.sample_s:g}")
    warmup = default_warmup(duration) if args.warmup is None else parse_duration(args.warmup, "--warmup")
    if not warmup < duration:
        raise KvtuiError(f"--warmup must be shorter than --duration ({duration:g} s), got {warmup:g} s")
    if not (math.isfinite(args.pause_s) and 0 < args.pause_s <= MAX_PAUSE_S):
        raise KvtuiError(f"--pause-s must be within (0, {MAX_PAUSE_S:g}] seconds, got {args.pause_s:g}")
    if not (math.isfinite(args.recovery_timeout) and args.recovery_timeout > 0):
        raise KvtuiError(f"--recovery-timeout must be positive seconds, got {args.recovery_timeout:g}")
    if args.client_ttl < 1:
        raise KvtuiError(f"--client-ttl must be at least 1 second, got {args.client_ttl}")
    if args.concurrency < 1:
        raise bad_value("--concurrency", "at least 1", args.concurrency)
    if args.prefill_workers != 1 or args.decode_workers != 1 or args.store_nodes != 1 or args.route != DEFAULT_ROUTE:
        raise KvtuiError("kvtui soak runs one prefill worker, one decode worker and one store node (its series have "
                         "a column per process role); drop --prefill-workers/--decode-workers/--store-nodes/--route")
    try:
        kinds = parse_kinds(args.faults)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    return SoakPlan(duration_s=duration, sample_s=args.sample_s, warmup_s=warmup, chaos_per_min=args.chaos,
                    kinds=kinds, seed=args.seed, pause_s=args.pause_s, recovery_timeout_s=args.recovery_timeout,
                    series_path=args.series)


def _check_kinds(args: argparse.Namespace, plan):
    """The plan with the kinds that apply; ``KvtuiError`` for a kind named in ``--faults`` that cannot be
    injected here (before anything starts), or ``--chaos`` with none left."""
    from kvtui.soak.faults import why_unavailable

    attached = bool(args.master or args.metadata)
    why = {k: w for k in plan.kinds
           if (w := why_unavailable(k, embedded=not attached, store_node=not attached and args.segment_on == "store",
                                    hosts=args.hosts == "auto", ha=bool(args.ha),
                                    disk=not attached and bool(args.disk_size)))}
    if args.faults.strip().lower() != "all":
        for k in plan.kinds:
            if k in why:
                raise KvtuiError(f"--faults {k}: {why[k]}")
    kinds = tuple(k for k in plan.kinds if k not in why)
    if plan.chaos_per_min and not kinds:
        raise KvtuiError("--chaos: no fault kind applies here")
    return replace(plan, kinds=kinds)


class _Out:
    """Lines on stderr from two threads: fault lines (``say``) above the progress line, which a terminal
    redraws in place (elsewhere each progress line is a line of its own)."""

    def __init__(self, quiet: bool):
        self.quiet, self.tty = quiet, sys.stderr.isatty()
        self._lock = threading.Lock()
        self._last = ""

    def say(self, line: str) -> None:
        with self._lock:
            if self.tty and self._last:
                sys.stderr.write("\r\x1b[K")
            sys.stderr.write(f"kvtui: {line}\n")
            if self.tty and self._last:
                sys.stderr.write(self._last)
            sys.stderr.flush()

    def progress(self, line: str) -> None:
        with self._lock:
            if self.tty:
                import shutil

                self._last = line[: shutil.get_terminal_size((200, 20)).columns - 1]
                sys.stderr.write("\r\x1b[K" + self._last)
            else:
                sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def done(self) -> None:
        with self._lock:
            if self.tty and self._last:
                sys.stderr.write("\n")
                sys.stderr.flush()
            self._last = ""


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Soak; exit 0, or 1 if a loaded page failed verification, acknowledged pages were lost or the soak stopped
    early."""
    from kvtui.soak.schedule import MASTER_PAUSE

    soak_plan = _check_kinds(args, _plan(args))
    check_outputs(((args.json, "--json"), (args.series, "--series")))
    if args.json and args.json == args.series:
        raise KvtuiError("--json and --series name the same file")
    if args.record:
        check_new_file(args.record, "--record")
    plan = plan_from_args(args, started_at=started_at, run_for_s=soak_plan.duration_s,
                          duration_s=soak_plan.duration_s, quiet=args.quiet, estimate=False,
                          always_replace_workers=True, count_lost=True)
    plan = replace(plan, cluster=replace(plan.cluster, client_ttl_s=args.client_ttl),
                   ack_ledger=soak_plan.checks_pages)  # (the store faults' loss checks read the engine's ledger)
    if soak_plan.chaos_per_min and soak_plan.pause_s >= args.client_ttl and MASTER_PAUSE in soak_plan.kinds:
        print(f"kvtui: warning: --pause-s {soak_plan.pause_s:g} is not below --client-ttl {args.client_ttl}: the "
              "master may drop every client when it continues (its keys with them)", file=sys.stderr)
    return _soak(plan, soak_plan, args)


def _soak(plan: RunPlan, soak_plan, args: argparse.Namespace) -> int:
    from kvtui.soak.runner import Soak
    from kvtui.soak.summary import format_soak
    from workload import skipped_count

    problems = plan.workload.problems
    if problems:
        print(f"kvtui: {skipped_text(problems)}", file=sys.stderr)
    if plan.cluster.store_note and (not plan.quiet or plan.cluster.store_note.startswith("warning")):
        print(f"kvtui: {plan.cluster.store_note}", file=sys.stderr, flush=True)
    out = _Out(args.quiet)
    session = open_session(plan)
    try:  # until the session's own teardown takes over below
        if session.network:
            out.say(f"network {session.network}")
        soak = Soak(session, soak_plan, say=out.say, progress=None if args.quiet else out.progress)
    except BaseException:
        session.stop()
        raise
    if soak.faults:
        out.say(f"chaos: {plural(len(soak.faults), 'fault')} scheduled ({', '.join(soak_plan.kinds)}), seed "
                f"{soak_plan.seed}")
    interrupted: KeyboardInterrupt | None = None
    try:
        start_recording(session, args.record)
        session.start()
        soak.run()
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: summarise what ran, then re-raise (exit 130 / 143)
        interrupted = exc
    except BaseException:
        out.done()
        session.stop()
        raise
    out.done()
    with uninterrupted():
        session.halt()
        final = session.final_frame()
        session.stop(final)
        if session.recording.error:  # (the frames before it are in the file, readable)
            print(f"kvtui: {session.recording.error}", file=sys.stderr)
        summary = soak.summary(final, session.counts(), interrupted is not None)
        summary.update(plan.context(final.workload or dict(plan.workload.description), skipped_count(problems)))
        summary["network"] = session.network
        if args.json != "-":
            print(format_soak(summary))
        if args.json:
            write_json_atomic(args.json, summary)
    if summary["time_wait"]["flagged"]:
        print(f"kvtui: warning: {summary['time_wait']['why']}", file=sys.stderr)
    if summary["orphans"]:
        print(f"kvtui: warning: processes outlived the soak: {summary['orphans']}", file=sys.stderr)
    if interrupted is not None:
        raise interrupted
    if session.error is not None:
        print(f"kvtui: error: the soak stopped early: {session.error}", file=sys.stderr)
        return 1
    if summary["mismatches"]:
        return 1
    if summary.get("pages_lost", {}).get("pages_lost"):
        print(f"kvtui: error: {loss_text(summary['pages_lost'])}", file=sys.stderr)
        return 1
    return OutputError.exit_code if session.recording.error else 0  # (the recording stopped early: disk full)
