"""``kvtui watch``: the live monitor. With no flags: embedded store, both workers, the default scenario on the
``tiny`` layout (:data:`~kvtui.core.defaults.WATCH_LAYOUT`); ``--layout seed`` is the demo card's."""

from __future__ import annotations

import argparse
import sys

from kvtui.config.cluster import add_cluster_arguments, add_listen_arguments
from kvtui.config.estimate import add_estimate_arguments, estimator_from_args
from kvtui.config.exports import add_export_arguments, exports_from_args
from kvtui.config.layout import add_page_arguments, layout_from_args
from kvtui.config.paths import check_new_file, path_arg
from kvtui.config.plan import plan_from_args
from kvtui.config.screen import add_refresh_argument, add_screen_arguments, screen_from_args
from kvtui.config.workload import add_workload_arguments, skipped_text
from kvtui.core.defaults import WATCH_LAYOUT
from kvtui.core.failover import report_lines
from kvtui.launch import Outputs, open_session, start_recording


def register(subparsers) -> None:
    """Add the ``watch`` subcommand."""
    p = subparsers.add_parser(
        "watch", help="the live monitor (embedded store + workers + a scenario by default)",
        description="Start (or attach to) a Mooncake cluster, a prefill and a decode worker and a workload, and "
                    "show live what prefix reuse does: a page grid of hits and misses, throughput, latency "
                    "histograms, store and process health. Press ? in the app for every key. With no flags it "
                    f"runs the {WATCH_LAYOUT} layout (4 KiB pages: it starts on any laptop and its store never fills, "
                    "whatever key you press); --layout seed runs the demo card's 14 MiB pages (Qwen2.5-7B's KV "
                    "shape), with a store sized to its working set, several GiB, at most half the free memory.")
    add_workload_arguments(p)
    g = p.add_argument_group("monitor")
    g.add_argument("--concurrency", type=int, default=1, metavar="N", help="requests in flight (default 1)")
    add_refresh_argument(g)
    add_screen_arguments(g)
    g.add_argument("--screenshot-dir", type=path_arg, default=".", metavar="DIR",
                   help="where the screenshot key S saves SVGs (default: the current folder)")
    g.add_argument("--record", type=path_arg, metavar="FILE",
                   help="record the session to FILE from the start (Ctrl+R toggles recording while running)")
    g.add_argument("--observe", action="store_true", help="watch an existing cluster only (needs --metrics-url; "
                   "--master is shown): the master's metrics over time, no workload, no workers, nothing written to "
                   "the store)")
    add_page_arguments(p, WATCH_LAYOUT)
    add_estimate_arguments(p)
    add_cluster_arguments(p)
    add_listen_arguments(p)
    add_export_arguments(p, save_trace=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Start everything, run the app until it quits, tear everything down (``--observe``:
    :func:`kvtui.commands.observe_mode.run_observe`)."""
    if args.observe:
        from kvtui.commands.observe_mode import run_observe

        return run_observe(args)
    exports = exports_from_args(args)
    with Outputs(exports) as outputs:  # --prometheus binds now: a busy port fails before anything starts
        layout = layout_from_args(args)
        estimator_from_args(args, layout)  # (its flags are checked before the terminal is)
        if args.record:
            check_new_file(args.record, "--record")
        screen = screen_from_args(args, "watch")
        plan = plan_from_args(args, layout=layout, started_at=started_at, exports=exports, follow_layout=True,
                              duration_s=args.duration, knobs=True)
        return _run(plan, screen, args.record, outputs)


def _run(plan, screen, record: str | None, outputs: Outputs) -> int:
    from kvtui.core.layout import preset_summaries
    from kvtui.tui.app import run_app
    from workload import skipped_count

    if plan.cluster.store_note:
        print(f"kvtui: {plan.cluster.store_note}", file=sys.stderr, flush=True)
    print("kvtui: starting the store and workers…", file=sys.stderr, flush=True)
    session = open_session(plan, outputs=outputs)
    if outputs.url:
        session.log("info", f"Prometheus metrics on {outputs.url}")
    if session.network:
        session.log("info", f"network {session.network}")  # shown in the event log, not stderr
    problems = plan.workload.problems
    if problems:  # skipped rows are an error; rows replayed late only a warning
        session.log("error" if skipped_count(problems) else "info", skipped_text(problems))
    try:
        start_recording(session, record)
        session.start()
        return run_app(session, session, headless=screen.headless, duration_s=screen.duration_s,
                       screenshot=screen.screenshot, screenshot_dir=screen.screenshot_dir, size=screen.size,
                       refresh_hz=screen.refresh_hz, layouts=preset_summaries())
    finally:
        session.stop()
        for line in report_lines(session.failovers):  # (the monitor's event log had room for one line of each)
            print(line)
