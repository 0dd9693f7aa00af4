"""The flags that take figures out of the terminal, shared by ``run`` and ``watch``: ``--prometheus
[HOST:]PORT`` (the exporter of :mod:`kvtui.export.prometheus`), ``--prometheus-linger SECONDS`` (``run``)
and ``--requests-log PATH`` (:mod:`kvtui.export.request_log`).

:class:`Outputs` checks them before anything starts (a busy port or an unwritable path is one line, exit 2),
binds the exporter at once, wires both to the session (:meth:`Outputs.attach`) and, at the end, pins the
exporter to the final frame, so every later scrape returns exactly the summary's counters
(:meth:`Outputs.finish`), and waits ``--prometheus-linger`` seconds for a last scrape.
"""

from __future__ import annotations

import argparse
import sys
import time

from kvtui.commands.output import check_writable, path_arg
from kvtui.core.errors import KvtuiError

DEFAULT_HOST = "127.0.0.1"


def add_export_arguments(p: argparse.ArgumentParser, *, linger: bool = False, requests_log: bool = True) -> None:
    """Add the group to a command's parser (``linger``: also ``--prometheus-linger``; ``requests_log``:
    also ``--requests-log``)."""
    g = p.add_argument_group("Prometheus exporter and per-request log")
    g.add_argument("--prometheus", metavar="[HOST:]PORT",
                   help=f"serve kvtui's metrics for Prometheus on http://HOST:PORT/metrics (HOST default {DEFAULT_HOST}; "
                        "PORT 0: a free one, said on stderr or in the event log). Counters, latency histograms in "
                        "seconds and gauges; README 'Prometheus and Grafana' lists them")
    if linger:
        g.add_argument("--prometheus-linger", type=float, default=0.0, metavar="SECONDS",
                       help="after the summary is printed and --json written, keep serving the final figures this "
                            "many seconds so Prometheus scrapes them (default 0; Ctrl-C ends the wait)")
    if requests_log:
        g.add_argument("--requests-log", type=path_arg, metavar="PATH",
                       help="write one CSV row per finished request to PATH as it finishes (id, times in s, "
                            "scenario/group or trace row, worker, tokens, pages hit/published/present/failed, "
                            "probe/reload/publish ms, bytes, TTFT saved estimate); .parquet needs pyarrow "
                            "(pip install 'kvtui[parquet]')")


def check_requests_log(path: str, flag: str = "--requests-log") -> None:
    """``KvtuiError`` now if ``path`` cannot be written, or is ``.parquet`` without pyarrow installed."""
    if path.lower().endswith(".parquet"):
        from kvtui.export.request_log import parquet_available

        if not parquet_available():
            raise KvtuiError(f"{flag}: {path}: a .parquet log needs pyarrow (pip install 'kvtui[parquet]'); "
                             "or write .csv")
    check_writable(path, flag)


def open_requests_log(path: str, estimator=None, *, atomic: bool = False, flag: str = "--requests-log"):
    """A :class:`~kvtui.export.request_log.RequestLog` (CSV) or a Parquet one by the path's suffix."""
    from kvtui.export.request_log import open_log

    try:
        return open_log(path, estimator, atomic=atomic)
    except OSError as exc:
        raise KvtuiError(f"{flag}: {path}: {exc.strerror or exc}") from None


class Outputs:
    """The exporter and the request log of one command (use as a context manager: everything is closed
    on the way out, also after an error)."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.exporter = None
        self.log = None
        self._told = False  # a failed log was reported
        self.linger_s = float(getattr(args, "prometheus_linger", 0.0) or 0.0)
        if not self.linger_s >= 0:
            raise KvtuiError("--prometheus-linger must be 0 or more seconds")
        if self.linger_s and not getattr(args, "prometheus", None):
            raise KvtuiError("--prometheus-linger needs --prometheus [HOST:]PORT")
        path = getattr(args, "requests_log", None)
        if path:
            check_requests_log(path)
        if getattr(args, "prometheus", None):
            from kvtui.export.prometheus import ExporterError, PrometheusExporter, parse_listen

            try:
                host, port = parse_listen(args.prometheus, DEFAULT_HOST)
            except ValueError as exc:
                raise KvtuiError(f"--prometheus: {exc}") from None
            try:
                self.exporter = PrometheusExporter(host, port).start()  # bound now: a busy port fails here
            except ExporterError as exc:
                raise KvtuiError(f"--prometheus: {exc}") from None

    def __enter__(self) -> "Outputs":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def url(self) -> str | None:
        """The exporter's ``/metrics`` URL (None without ``--prometheus``)."""
        return self.exporter.url if self.exporter is not None else None

    def attach(self, session) -> None:
        """Serve ``session``'s frames and log its requests (``session.sinks``)."""
        if self.exporter is not None:
            self.exporter.attach(session.frame)
        path = getattr(self.args, "requests_log", None)
        if path:
            self.log = open_requests_log(path, getattr(getattr(session, "agg", None), "estimator", None))
            session.sinks.append(self.log)

    def finish(self, final=None) -> list[str]:
        """The run ended: pin the exporter to ``final`` (the summary's frame), close the request log;
        returns lines for the user (a log that failed, how many rows it has)."""
        lines = []
        if self.exporter is not None and final is not None:
            self.exporter.pin(final)
        if self.log is not None:
            self.log.close()
            if self.log.error and not self._told:
                lines.append(f"--requests-log: {self.log.error}")
            self._told = True
        return lines

    def linger(self) -> None:
        """Keep serving ``--prometheus-linger`` seconds (after the summary; Ctrl-C ends it as an interrupt)."""
        if self.exporter is None or self.linger_s <= 0:
            return
        print(f"kvtui: serving the final figures on {self.url} for {self.linger_s:g} s (--prometheus-linger)",
              file=sys.stderr, flush=True)
        time.sleep(self.linger_s)

    def close(self) -> None:
        """Stop the exporter and close the log (safe to call twice); a log that failed says so on stderr."""
        if self.log is not None:
            self.log.close()
            if self.log.error and not self._told:
                print(f"kvtui: --requests-log: {self.log.error}", file=sys.stderr)
            self._told = True
        if self.exporter is not None:
            self.exporter.stop()
            self.exporter = None


def require_request_rows(reader, source: str) -> None:
    """``KvtuiError`` (one line) when session ``reader`` (from ``source``) holds no request rows."""
    if not reader.request_columns:
        raise KvtuiError(f"--requests-log: {source} holds no request rows (recorded in observe mode, or by a kvtui "
                         "from before sessions kept them); nothing written")


def write_session_requests_log(reader, path: str, source: str) -> int:
    """``kvtui report FILE --requests-log PATH``: the request rows recorded in session ``reader`` (from
    ``source``), written whole or not at all; returns the row count. ``KvtuiError`` when the session holds
    no request rows (recorded by a kvtui from before they were kept, or in observe mode, which runs none)."""
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
    return log.rows
