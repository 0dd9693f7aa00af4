"""``kvtui watch --observe``: the monitor over an existing cluster's master, with no workload (a helper of the
``watch`` command, :class:`kvtui.observe.ObserveSession` underneath).

Checks before anything starts, each one line and exit 2: ``--metrics-url`` is given and is a Mooncake
master's admin endpoint (its ``/metrics`` answers with ``master_key_count``), ``--master`` (when given)
accepts a TCP connection, and no flag asks for what observe mode never does (a trace, a store, a request
log). An HA cluster: ``--master etcd://HOST:PORT`` (its etcd answers ``/health``) and every master's admin URL,
``--metrics-url URL,URL…`` (etcd knows only the leader's RPC address); each URL that answers must be a
master's, and one must answer.
"""

from __future__ import annotations

import argparse

from kvtui.config.exports import exports_from_args
from kvtui.config.paths import check_new_file
from kvtui.config.screen import screen_from_args
from kvtui.core.errors import KvtuiError
from kvtui.core.text import plural
from kvtui.launch import Outputs, start_recording

# flags that only make sense with a workload or a store kvtui starts: refused with --observe
_REFUSED = (("trace", "--trace"), ("requests_log", "--requests-log"), ("store_size", "--store-size"))


def check_observe_args(args: argparse.Namespace) -> list[str]:
    """The masters' admin URLs of ``--metrics-url``; ``KvtuiError`` (one line) for a flag observe mode cannot
    use, a missing ``--metrics-url``, a metrics URL that is not a Mooncake master's, or a ``--master`` nothing
    answers at."""
    from kvtui.mooncake import ha
    from kvtui.mooncake.net import is_etcd, parse_etcd, probe_tcp, split_hostport
    from kvtui.observe import NotAMaster, check_master

    for attr, flag in _REFUSED:
        if vars(args).get(attr):
            raise KvtuiError(f"{flag} does not go with --observe (observe mode runs no workload and starts nothing)")
    urls = [u.strip() for u in (args.metrics_url or "").split(",") if u.strip()]
    if not urls:
        raise KvtuiError("--observe needs --metrics-url URL (the master's admin HTTP base, e.g. http://HOST:9003; "
                         "an HA cluster's masters: URL,URL…, since etcd knows only the leader's RPC address)")
    if args.master and is_etcd(args.master):
        try:
            endpoints = parse_etcd(args.master)
        except ValueError as exc:
            raise KvtuiError(f"--master {exc}") from None
        if not ha.etcd_healthy(endpoints, timeout_s=2.0):
            raise KvtuiError(f"no etcd answers at {args.master} (GET /health failed within 2 s)")
    elif args.master:
        try:
            host, port = split_hostport(args.master)
        except ValueError as exc:
            raise KvtuiError(f"--master: {exc}") from None
        if not probe_tcp(host, port, timeout_s=2.0):
            raise KvtuiError(f"no Mooncake master answers at {args.master} (TCP connect failed within 2 s)")
    silent = []
    for url in urls:
        try:
            check_master(url)
        except NotAMaster as exc:
            if len(urls) == 1 or "nothing answers" not in str(exc):  # (one master of several may be down)
                raise KvtuiError(str(exc)) from None
            silent.append(url)
    if len(silent) == len(urls):
        raise KvtuiError(f"--metrics-url: none of the {plural(len(urls), 'master')} answers ({', '.join(urls)})")
    return urls


def run_observe(args: argparse.Namespace) -> int:
    """Run the monitor on an :class:`~kvtui.observe.ObserveSession` until it quits (or ``--duration``)."""
    from kvtui.observe import ObserveSession
    from kvtui.tui.app import run_app

    if args.record:
        check_new_file(args.record, "--record")
    screen = screen_from_args(args, "watch")
    urls = check_observe_args(args)
    from kvtui.mooncake import ha
    from kvtui.mooncake.net import is_etcd

    several = len(urls) > 1 or is_etcd(args.master)
    with Outputs(exports_from_args(args)) as outputs:
        session = ObserveSession(urls[0], args.master, masters=ha.admin_names(urls) if several else ())
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
