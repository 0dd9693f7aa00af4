"""``kvtui watch --observe``: the monitor over an existing cluster's master, with no workload (a helper of the
``watch`` command, :class:`kvtui.observe.ObserveSession` underneath).

Checks before anything starts, each one line and exit 2: ``--metrics-url`` is given and is a Mooncake
master's admin endpoint (its ``/metrics`` answers with ``master_key_count``), ``--master`` (when given)
accepts a TCP connection, and no flag asks for what observe mode never does (a trace, a store, a request
log).
"""

from __future__ import annotations

import argparse

from kvtui.commands.common import check_refresh_hz, screen_arguments, start_recording
from kvtui.commands.export_args import Outputs
from kvtui.commands.output import check_new_file
from kvtui.core.errors import KvtuiError

# flags that only make sense with a workload or a store kvtui starts: refused with --observe
_REFUSED = (("trace", "--trace"), ("requests_log", "--requests-log"), ("store_size", "--store-size"))


def check_observe_args(args: argparse.Namespace) -> None:
    """``KvtuiError`` (one line) for a flag observe mode cannot use, a missing ``--metrics-url``, a metrics URL
    that is not a Mooncake master's, or a ``--master`` nothing answers at."""
    from kvtui.engine.store import probe_tcp, split_hostport
    from kvtui.observe import NotAMaster, check_master

    for attr, flag in _REFUSED:
        if getattr(args, attr, None):
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


def run_observe(args: argparse.Namespace, check_screenshot_dir=None) -> int:
    """Run the monitor on an :class:`~kvtui.observe.ObserveSession` until it quits (or ``--duration``)."""
    from kvtui.observe import ObserveSession
    from kvtui.tui.app import run_app

    check_refresh_hz(args.refresh_hz)
    if args.record:
        check_new_file(args.record, "--record")
    if check_screenshot_dir is not None:
        check_screenshot_dir(args.screenshot_dir)
    size = screen_arguments(args, "watch")
    check_observe_args(args)
    with Outputs(args) as outputs:
        session = ObserveSession(args.metrics_url, args.master)
        outputs.attach(session)
        if outputs.url:
            session._log("info", f"Prometheus metrics (kvtui's derived rates) on {outputs.url}")
        try:
            start_recording(session, args.record)
            session.start()
            return run_app(session, session, headless=args.headless, duration_s=args.duration,
                           screenshot=args.screenshot, screenshot_dir=args.screenshot_dir, size=size,
                           refresh_hz=args.refresh_hz, title="kvtui observe")
        finally:
            session.stop()
