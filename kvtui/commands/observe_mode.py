"""``kvtui watch --observe``: the monitor over an existing cluster's master, with no workload (a helper of the
``watch`` command, :class:`kvtui.observe.ObserveSession` underneath).

Checks before anything starts, each one line and exit 2: ``--metrics-url`` is given and is a Mooncake
master's admin endpoint (its ``/metrics`` answers with ``master_key_count``), ``--master`` (when given)
accepts a TCP connection, and no flag asks for what observe mode never does (a trace, a store, a request
log).
"""

from __future__ import annotations

import argparse

from kvtui.config.exports import exports_from_args
from kvtui.config.paths import check_new_file
from kvtui.config.screen import screen_from_args
from kvtui.core.errors import KvtuiError
from kvtui.launch import Outputs, start_recording

# flags that only make sense with a workload or a store kvtui starts: refused with --observe
_REFUSED = (("trace", "--trace"), ("requests_log", "--requests-log"), ("store_size", "--store-size"))


def check_observe_args(args: argparse.Namespace) -> None:
    """``KvtuiError`` (one line) for a flag observe mode cannot use, a missing ``--metrics-url``, a metrics URL
    that is not a Mooncake master's, or a ``--master`` nothing answers at."""
    from kvtui.engine.store import probe_tcp, split_hostport
    from kvtui.observe import NotAMaster, check_master

    for attr, flag in _REFUSED:
        if vars(args).get(attr):
            raise KvtuiError(f"{flag} does not go with --observe (observe mode runs no workload and starts nothing)")
    if not args.metrics_url:
        raise KvtuiError("--observe needs --metrics-url URL (the master's admin HTTP base, e.g. http://HOST:9003)")
    if args.master:
        try:
            host, port = split_hostport(args.master)
        except ValueError as exc:
            raise KvtuiError(f"--master: {exc}") from None
        if not probe_tcp(host, port, timeout_s=2.0):
            raise KvtuiError(f"no Mooncake master answers at {args.master} (TCP connect failed within 2 s)")
    try:
        check_master(args.metrics_url)
    except NotAMaster as exc:
        raise KvtuiError(str(exc)) from None


def run_observe(args: argparse.Namespace) -> int:
    """Run the monitor on an :class:`~kvtui.observe.ObserveSession` until it quits (or ``--duration``)."""
    from kvtui.observe import ObserveSession
    from kvtui.tui.app import run_app

    if args.record:
        check_new_file(args.record, "--record")
    screen = screen_from_args(args, "watch")
    check_observe_args(args)
    with Outputs(exports_from_args(args)) as outputs:
        session = ObserveSession(args.metrics_url, args.master)
        outputs.attach(session)
        if outputs.url:
            session.log("info", f"Prometheus metrics (kvtui's derived rates) on {outputs.url}")
        try:
            start_recording(session, args.record)
            session.start()
            return run_app(session, session, headless=screen.headless, duration_s=screen.duration_s,
                           screenshot=screen.screenshot, screenshot_dir=screen.screenshot_dir, size=screen.size,
                           refresh_hz=screen.refresh_hz, title="kvtui observe")
        finally:
            session.stop()
