"""The flags that take figures out of the terminal, shared by ``run`` and ``watch``: ``--prometheus [HOST:]PORT``
(the exporter of :mod:`kvtui.export.prometheus`), ``--prometheus-linger SECONDS`` (``run``) and
``--requests-log PATH`` (:mod:`kvtui.export.request_log`), and ``--save-trace FILE``
(:mod:`workload.trace_writer`). :class:`kvtui.launch.Outputs` binds and opens what the :class:`ExportPlan` names."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from kvtui.config.paths import check_writable, path_arg
from kvtui.core.errors import KvtuiError, bad_value

DEFAULT_HOST = "127.0.0.1"
"""Where ``--prometheus PORT`` listens without a host."""


def add_export_arguments(p: argparse.ArgumentParser, *, linger: bool = False, requests_log: bool = True,
                         save_trace: bool = False) -> None:
    """Add the group to a command's parser (``linger``: also ``--prometheus-linger``; ``requests_log``:
    also ``--requests-log``; ``save_trace``: also ``--save-trace``)."""
    g = p.add_argument_group("Prometheus exporter and per-request log")
    g.add_argument("--prometheus", metavar="[HOST:]PORT",
                   help=f"serve kvtui's metrics for Prometheus on http://HOST:PORT/metrics "
                        f"(HOST default {DEFAULT_HOST}; "
                        "PORT 0: a free one, said on stderr or in the event log). Counters, latency histograms in "
                        "seconds and gauges (see the docs: Prometheus metrics)")
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
    if save_trace:
        g.add_argument("--save-trace", type=path_arg, metavar="FILE",
                       help="write the requests that ran to FILE as a Mooncake FAST'25 JSONL trace (timestamp ms, "
                            "input_length, output_length, hash_ids: one id per page, equal ids for equal page "
                            "keys), a line per finished request, so aiperf or `kvtui run --trace FILE "
                            "--trace-block-tokens PAGE_TOKENS` replays the same workload with the same page hits; "
                            "in watch, a layout switch to another page size is refused while it writes (one block "
                            "size a file)")


def check_requests_log(path: str, flag: str = "--requests-log") -> None:
    """``KvtuiError`` now if ``path`` cannot be written, or is ``.parquet`` without pyarrow installed."""
    if path.lower().endswith(".parquet"):
        from kvtui.export.request_log import parquet_available

        if not parquet_available():
            raise KvtuiError(f"{flag}: {path}: a .parquet log needs pyarrow (pip install 'kvtui[parquet]'); "
                             "or write .csv")
    check_writable(path, flag)


@dataclass(frozen=True)
class ExportPlan:
    """``prometheus``: ``(host, port)`` of the exporter (port 0: a free one; None: no exporter);
    ``linger_s``: how long a finished ``run`` keeps serving its final figures (s); ``requests_log``: the
    per-request log's path (CSV, or Parquet by its suffix; None: none); ``save_trace``: where the requests
    that ran are written as a FAST'25 trace (None: nowhere)."""

    prometheus: tuple[str, int] | None = None
    linger_s: float = 0.0
    requests_log: str | None = None
    save_trace: str | None = None


NO_EXPORTS = ExportPlan()
"""No exporter and no request log: the plan of a command without these flags (shared: the plan is frozen)."""


def exports_from_args(args: argparse.Namespace) -> ExportPlan:
    """The :class:`ExportPlan` of the flags, each checked now (``KvtuiError``: a bad address, a negative
    linger, ``--prometheus-linger`` without ``--prometheus``, an unwritable log or trace file)."""
    linger = float(getattr(args, "prometheus_linger", 0.0) or 0.0)
    if not linger >= 0:
        raise bad_value("--prometheus-linger", "0 or more seconds", linger)
    listen = getattr(args, "prometheus", None)
    if linger and not listen:
        raise KvtuiError("--prometheus-linger needs --prometheus [HOST:]PORT")
    path = getattr(args, "requests_log", None)
    if path:
        check_requests_log(path)
    trace = getattr(args, "save_trace", None)
    if trace:
        check_writable(trace, "--save-trace")
    address = None
    if listen:
        from kvtui.export.prometheus import parse_listen

        try:
            address = parse_listen(listen, DEFAULT_HOST)
        except ValueError as exc:
            raise KvtuiError(f"--prometheus: {exc}") from None
    return ExportPlan(prometheus=address, linger_s=linger, requests_log=path or None, save_trace=trace or None)
