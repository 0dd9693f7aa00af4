"""``kvtui watch``: the live monitor. With no flags: embedded store, both workers, the default scenario."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kvtui.commands.common import (
    add_cluster_arguments,
    add_page_arguments,
    add_screen_arguments,
    add_workload_arguments,
    check_refresh_hz,
    engine_options,
    layout_name,
    layout_of,
    make_workload,
    screen_arguments,
    start_recording,
)
from kvtui.commands.engine_start import engine_guard, start_engine
from kvtui.commands.estimate_args import add_estimate_arguments, estimator_from_args
from kvtui.commands.export_args import Outputs, add_export_arguments
from kvtui.commands.output import check_new_file, path_arg, session_header
from kvtui.core.defaults import DEFAULT_HZ, DEFAULT_PROMPT_PAGES, MAX_HZ
from kvtui.commands.listen_args import add_listen_arguments, bind_listener
from kvtui.core.errors import KvtuiError


def register(subparsers) -> None:
    """Add the ``watch`` subcommand."""
    p = subparsers.add_parser(
        "watch", help="the live monitor (embedded store + workers + a scenario by default)",
        description="Start (or attach to) a Mooncake cluster, a prefill and a decode worker and a workload, and "
                    "show live what prefix reuse does: a page grid of hits and misses, throughput, latency "
                    "histograms, store and process health. Press ? in the app for every key.")
    add_workload_arguments(p)
    g = p.add_argument_group("monitor")
    g.add_argument("--concurrency", type=int, default=1, metavar="N", help="requests in flight (default 1)")
    g.add_argument("--refresh-hz", type=float, default=DEFAULT_HZ, metavar="HZ",
                   help=f"screen updates per second, ≤ {MAX_HZ:g} (default {DEFAULT_HZ:g}: every repaint costs CPU the "
                        "workload could use; key presses show at once whatever the rate)")
    add_screen_arguments(g)
    g.add_argument("--screenshot-dir", type=path_arg, default=".", metavar="DIR", help="where the screenshot key S saves SVGs (default: the current folder)")
    g.add_argument("--record", type=path_arg, metavar="FILE", help="record the session to FILE from the start (Ctrl+R toggles "
                   "recording while running)")
    g.add_argument("--observe", action="store_true", help="watch an existing cluster only (needs --metrics-url; "
                   "--master is shown): the master's metrics over time, no workload, no workers, nothing written to "
                   "the store (README 'Observe an existing cluster')")
    add_page_arguments(p)
    add_estimate_arguments(p)
    add_cluster_arguments(p)
    add_listen_arguments(p)
    add_export_arguments(p)
    p.set_defaults(func=run, prompt_tokens=None)


def check_screenshot_dir(path: str) -> None:
    """``--screenshot-dir``: ``KvtuiError`` now if it names a file, or a folder whose parent does not exist
    (the screenshot key creates the folder itself, one level only)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise KvtuiError(f"--screenshot-dir: {path} exists and is not a folder")
    if not folder.exists() and not folder.resolve().parent.is_dir():
        raise KvtuiError(f"--screenshot-dir: folder {folder.resolve().parent} does not exist")


def run(args: argparse.Namespace) -> int:
    """Start everything, run the app until it quits, tear everything down (``--observe``:
    :func:`kvtui.commands.observe_mode.run_observe`)."""
    if args.observe:
        from kvtui.commands.observe_mode import run_observe

        return run_observe(args, check_screenshot_dir)
    with Outputs(args) as outputs:  # --prometheus binds now: a busy port fails before anything starts
        return _run(args, outputs)


def _run(args: argparse.Namespace, outputs: Outputs) -> int:
    from kvtui.core.layout import preset_summaries
    from kvtui.live import LiveSession
    from kvtui.metrics.aggregate import Aggregator
    from kvtui.tui.app import run_app
    from workload import skipped_count, skipped_rows_text

    layout = layout_of(args)
    estimator = estimator_from_args(args, layout)
    if args.concurrency < 1:
        raise KvtuiError("--concurrency must be at least 1")
    check_refresh_hz(args.refresh_hz)
    if args.record:
        check_new_file(args.record, "--record")
    check_screenshot_dir(args.screenshot_dir)
    size = screen_arguments(args, "watch")
    workload, desc, problems = make_workload(args, layout)
    options, endpoints = engine_options(args, layout)
    listener = bind_listener(args)  # (a busy --listen address fails before anything starts)
    print("kvtui: starting the store and workers…", file=sys.stderr, flush=True)
    try:
        engine = start_engine(options, endpoints)  # from the main thread: children die with it
    except BaseException:
        if listener is not None:
            listener.close()
        raise
    with engine_guard(engine, listener):  # until session.stop below takes over
        session = LiveSession(engine, workload, desc, concurrency=args.concurrency, layout_text=layout.describe(),
                              layout_name=layout_name(args, layout),
                              prompt_pages=DEFAULT_PROMPT_PAGES if args.prompt_tokens is None else None,
                              header={**session_header(args, layout, desc, endpoints),
                                      "ttft_estimate": estimator.inputs()},
                              aggregator=Aggregator(estimator=estimator), rerun_lost=options.replace_dead_workers)
        outputs.attach(session)
        if listener is not None:
            session.listen(listener)
    if outputs.url:
        session._log("info", f"Prometheus metrics on {outputs.url}")
    if options.cluster.isolation:
        session._log("info", f"network {options.cluster.isolation}")  # shown in the event log, not stderr
    if problems:  # skipped rows are an error; rows replayed late only a warning
        session._log("error" if skipped_count(problems) else "info", skipped_rows_text(problems))
    try:
        start_recording(session, args.record)
        session.start()
        return run_app(session, session, headless=args.headless, duration_s=args.duration,
                       screenshot=args.screenshot, screenshot_dir=args.screenshot_dir, size=size,
                       refresh_hz=args.refresh_hz, layouts=preset_summaries())
    finally:
        session.stop()
