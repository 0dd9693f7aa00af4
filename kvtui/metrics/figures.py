"""Every figure kvtui shows, defined once: its name, screen label, unit, formula, window and field.

One name per formula, different names for different formulas: a wall-clock rate over the last 2 s (the
monitor's Throughput panel), bytes over the time spent in store calls (the summary of ``kvtui run`` and
``kvtui report``) and the median of per-reload rates (``kvtui bench``) are three figures, not one "reuse
read MB/s". The aggregator takes its rate keys and windows from here, the summary its throughput keys, the
monitor its labels and the text outputs their names; the docs' "Figures" reference is :func:`markdown_table`
(``scripts/gen_reference.py``; a test fails when they differ). MB/s are 10^6 bytes per second.

A :class:`Figure`'s ``key`` is its key in the dict that holds it (``Frame.rates`` / ``Frame.series``, the
summary's ``throughput``, ``Frame.latency``, the summary itself, the ``kvtui bench --json`` object);
``field`` is where a user finds it in JSON output (or in a frame, for the monitor's figures).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvtui.core.panels import WorkloadPanel

RATE_WINDOW_S = 2.0  # the monitor's rates: over the last 2 s of wall-clock time
SERIES_INTERVAL_S = 1.0  # one sparkline point per second (the rate over that second)
LATENCY_WINDOW_S = 30.0  # the monitor's "recent" latency histograms (`w` toggles the whole session)
MB = 1e6  # MB/s = 10^6 bytes per second


@dataclass(frozen=True)
class Figure:
    """One figure. ``name``: unique, used in text output and the docs; ``label``: the short form on
    screen, where the panel's title says the window (unique within ``shown``); ``unit``; ``formula`` and
    ``window`` in words; ``shown``: where it appears; ``key`` / ``field``: see the module docstring."""

    key: str
    name: str
    label: str
    unit: str
    formula: str
    window: str
    shown: str
    field: str


_MONITOR = "watch, replay: Throughput panel"
_WALL_WINDOW = f"last {RATE_WINDOW_S:g} s (sparkline: one point per {SERIES_INTERVAL_S:g} s)"
#: the Throughput panel title: all its figures are rates over the last RATE_WINDOW_S of wall-clock time
WALL_TITLE = f"Throughput · wall, {RATE_WINDOW_S:g} s"

REUSE_WALL = Figure("reuse_MBps", "reuse read (wall)", "reuse read", "MB/s",
                    "bytes loaded from the store ÷ wall-clock time", _WALL_WINDOW, _MONITOR, "rates.reuse_MBps")
PUBLISH_WALL = Figure("publish_MBps", "publish write (wall)", "publish write", "MB/s",
                      "bytes newly written to the store ÷ wall-clock time", _WALL_WINDOW, _MONITOR,
                      "rates.publish_MBps")
REQUESTS_WALL = Figure("rps", "requests/s (wall)", "requests", "req/s", "requests finished ÷ wall-clock time",
                       _WALL_WINDOW, _MONITOR, "rates.rps")
SKIPPED_WALL = Figure("tokens_skipped_ps", "tokens skipped/s (wall)", "tok skipped", "tok/s",
                      "prompt tokens reloaded instead of computed ÷ wall-clock time", _WALL_WINDOW, _MONITOR,
                      "rates.tokens_skipped_ps")
HIT_RATE_WALL = Figure("hit_rate", f"page hit rate (last {RATE_WINDOW_S:g} s)", "page hit rate", "%",
                       "pages reloaded ÷ full pages of the requests finished in the window", _WALL_WINDOW,
                       _MONITOR + " (≥ 100×32)", "rates.hit_rate")
IDEAL_WALL = Figure("ideal_hit_rate", f"ideal page hit rate (last {RATE_WINDOW_S:g} s)", "ideal ∞ cache", "%",
                    "pages an unbounded cache would have reloaded (the `trace-stats` rule) ÷ full pages of the "
                    "requests finished in the window", _WALL_WINDOW, _MONITOR + " (trace; a second line on the "
                    "page hit rate's sparkline)", "rates.ideal_hit_rate")
#: the Throughput panel's rows, in order (also the keys of ``Frame.rates`` and ``Frame.series``)
WALL = (REUSE_WALL, PUBLISH_WALL, REQUESTS_WALL, SKIPPED_WALL, HIT_RATE_WALL, IDEAL_WALL)

_HEADER = "watch, replay: header"
HIT_RATE_SESSION = Figure("page_hit_rate", "page hit rate (session)", "page hits", "%",
                          "pages reloaded ÷ full pages of every request finished", "the session so far",
                          _HEADER + "; run, report: summary, --json", "totals.page_hit_rate, page_hit_rate")
HIT_RATE_RECENT = Figure("page_hit_rate", f"page hit rate (last {LATENCY_WINDOW_S:g} s)",
                         f"last {LATENCY_WINDOW_S:g} s",
                         "%", "pages reloaded ÷ full pages of the requests finished in the window",
                         f"last {LATENCY_WINDOW_S:g} s (the latency window; \"—\" while paused or idle)", _HEADER,
                         "window_totals.page_hit_rate")
TOKENS_SKIPPED = Figure("token_hit_rate", "prefill tokens skipped (session)", "prefill skipped", "%",
                        "prompt tokens reloaded ÷ prompt tokens of every request finished", "the session so far",
                        _HEADER + "; run, report: summary, --json", "totals.token_hit_rate, token_hit_rate")
IDEAL_SO_FAR = Figure("ideal_token_hit_rate", "ideal hit rate (trace so far)", "ideal", "%",
                      "prompt tokens an unbounded cache would have reloaded (the `trace-stats` rule, rows in file "
                      "order) ÷ prompt tokens of the trace requests finished; the gap to prefill skipped is what "
                      "the store's capacity and concurrency cost", "the session so far",
                      _HEADER + " (trace); run, report: summary, --json", "totals.ideal_token_hit_rate, "
                      "ideal_token_hit_rate")
TRACE_ETA = Figure("eta_s", "trace ETA (estimate)", "ETA", "s",
                   "trace time left ÷ speed; as fast as possible: rows left ÷ requests/s (wall)", "now",
                   _HEADER + " (trace)", "(computed from workload.position_s, length_s, speed, rates.rps)")
#: the header's hit rates and the trace's ETA
HEADER = (HIT_RATE_SESSION, HIT_RATE_RECENT, TOKENS_SKIPPED, IDEAL_SO_FAR, TRACE_ETA)


def trace_eta(workload: WorkloadPanel, rps: float) -> tuple[float | None, str]:
    """:data:`TRACE_ETA` of a trace's ``frame.workload`` (``position_s``, ``length_s``, ``speed``, ``done``,
    ``total``) with the measured requests/s ``rps``: ``(seconds left or None when unknown, basis)``, the basis
    ``"trace time"`` (at a set speed: the trace time left ÷ the speed) or ``"at N req/s"`` (as fast as
    possible: the rows left ÷ the request rate, an estimate)."""
    left_rows = max(0, int(workload.get("total", 0)) - int(workload.get("done", 0)))
    if workload.get("complete") or not left_rows:
        return 0.0, "done"
    speed = workload.get("speed", 1.0)
    if speed and "length_s" not in workload:  # (an older kvtui's recording: no trace position)
        return None, "no position"
    if speed:
        left_s = max(0.0, float(workload.get("length_s", 0.0)) - float(workload.get("position_s", 0.0)))
        return left_s / float(speed), "trace time"
    if rps > 0:
        return left_rows / rps, f"at {rps:.0f} req/s"
    return None, "no rate yet"

_RUN = "run, report: summary, --json"
_RUN_WINDOW = "the run (report: the recorded span)"
REUSE_BUSY = Figure("reuse_read_MBps", "reuse read (busy)", "reuse read (busy)", "MB/s",
                    "bytes loaded ÷ time spent in store reads (probe excluded)", _RUN_WINDOW, _RUN,
                    "throughput.reuse_read_MBps")
PUBLISH_BUSY = Figure("publish_write_MBps", "publish write (busy)", "publish write (busy)", "MB/s",
                      "bytes newly written ÷ time spent in puts (probe and page computation excluded)",
                      _RUN_WINDOW + "; bench: the median of its 5 publishes", _RUN + "; bench",
                      "throughput.publish_write_MBps, publish_write_MBps")
REQUESTS_RUN = Figure("requests_per_s", "requests/s (run)", "req/s", "req/s", "requests ÷ elapsed_s",
                      _RUN_WINDOW, _RUN, "throughput.requests_per_s")
SKIPPED_RUN = Figure("tokens_skipped_per_s", "tokens skipped/s (run)", "tokens skipped/s", "tok/s",
                     "prompt tokens reloaded ÷ elapsed_s", _RUN_WINDOW, _RUN, "throughput.tokens_skipped_per_s")
#: the summary's ``throughput`` object, in order
RUN = (REUSE_BUSY, PUBLISH_BUSY, REQUESTS_RUN, SKIPPED_RUN)

_LAT_WINDOW = f"monitor: last {LATENCY_WINDOW_S:g} s or the whole session (`w`); summary: {_RUN_WINDOW}"
_LAT_SHOWN = "watch, replay: Latency panel; run, report: summary, --json"
RELOAD_LATENCY = Figure("reload", "reload latency", "reload", "ms",
                        "probe + read of each reload that loaded at least one page (verification excluded)",
                        _LAT_WINDOW + "; bench: `--iterations` reloads", _LAT_SHOWN + "; bench", "reload_ms")
PUBLISH_LATENCY = Figure("publish", "publish latency", "publish", "ms",
                         "probe + put of each request that published at least one page (page computation "
                         "excluded)", _LAT_WINDOW, _LAT_SHOWN, "publish_ms")
PROBE_LATENCY = Figure("probe", "probe latency", "probe", "ms", "the decode worker's probe of every request",
                       _LAT_WINDOW, _LAT_SHOWN, "probe_ms")
#: the latency histograms, in the Latency panel's order (keys of ``Frame.latency``)
LATENCY = (RELOAD_LATENCY, PUBLISH_LATENCY, PROBE_LATENCY)

PROBE_ONLY = Figure("reloads_probe_only", "probe-only reloads", "probe-only", "requests",
                    "reloads whose probe found no leading page: no read issued, no reload latency recorded",
                    _RUN_WINDOW, _RUN, "reloads_probe_only")
UNUSABLE = Figure("reloads_unusable", "reloads with no usable page", "no usable page", "requests",
                  "reloads that read but loaded no page (first page evicted, failed or mismatched; in `errors`)",
                  _RUN_WINDOW, _RUN, "reloads_unusable")
#: requests = reload latency count + probe-only reloads + reloads with no usable page
RELOAD_COUNTS = (PROBE_ONLY, UNUSABLE)

_BENCH = "bench: table, --json"
_BENCH_WINDOW = "`--iterations` reloads of one request"
_BASE_WINDOW = "`--iterations` repetitions of the same bytes"
RELOAD_P50 = Figure("reuse_read_MBps_p50", "reload throughput (p50 per reload)", "reload throughput (p50 per reload)",
                    "MB/s", "median over the reloads of bytes loaded ÷ (probe + read time) of that reload",
                    _BENCH_WINDOW, _BENCH, "reuse_read_MBps_p50, best_reuse_read_MBps_p50, read_streams.N.MBps_p50, "
                    "colocated.reuse_read_MBps_p50, baselines.colocated_reload_MBps_p50, tcp_path.reuse_read_MBps_p50")
RAW_GET_P50 = Figure("raw_get_MBps_p50", "raw batch_get_into (p50 call)", "baseline raw batch_get_into", "MB/s",
                     "bytes of the reloaded pages ÷ median time of one plain batch_get_into of their keys",
                     _BASE_WINDOW, _BENCH, "baselines.raw_get_MBps_p50, tcp_path.raw_get_MBps_p50")
TCP_P50 = Figure("loopback_tcp_MBps", "loopback TCP (p50 transfer)", "baseline loopback TCP", "MB/s",
                 "the same bytes ÷ median time to send them over one loopback TCP stream", _BASE_WINDOW, _BENCH,
                 "baselines.loopback_tcp_MBps")
MEMCPY_P50 = Figure("memcpy_MBps", "memcpy (p50 copy)", "memcpy", "MB/s",
                    "the same bytes ÷ median time of one in-process copy, one after each co-located reload",
                    _BASE_WINDOW, _BENCH,
                    "baselines.memcpy_MBps")
_CONTENT_WINDOW = "`--iterations` rounds of memcpy, fill, verify of the reloaded pages' bytes"
FILL_P50 = Figure("fill_MBps", "page fill (p50)", "page fill", "MB/s",
                  "bytes of the reloaded pages ÷ median time to write their expected contents (kvtui.engine.contents)",
                  _CONTENT_WINDOW, _BENCH, "baselines.content.fill_MBps, ratios.fill_vs_memcpy")
VERIFY_P50 = Figure("verify_MBps", "page verify (p50)", "page verify", "MB/s",
                    "bytes of the reloaded pages ÷ median time to check every byte against their expected contents",
                    _CONTENT_WINDOW, _BENCH, "baselines.content.verify_MBps, ratios.verify_vs_memcpy")
RELOAD_PROBE_P50 = Figure("probe_ms_p50", "reload probe (p50)", "the reload's probe p50", "ms",
                          "median over the reloads of the time of the batch_is_exist before the read",
                          _BENCH_WINDOW, _BENCH, "probe_ms_p50")
RELOAD_READ_P50 = Figure("read_only_MBps_p50", "reload read alone (p50 per reload)", "its read alone", "MB/s",
                         "median over the reloads of bytes loaded ÷ read time of that reload (probe excluded)",
                         _BENCH_WINDOW, _BENCH, "read_only_MBps_p50")
_RATE_WINDOW = "the bench's request-rate step: the requests that finished in its 8 s window"
RATE_VERIFY = Figure("rate_verify_MBps", "verify in the request-rate step", "verify", "MB/s",
                     "Σ bytes loaded ÷ Σ verify time of those requests", _RATE_WINDOW, _BENCH,
                     "request_rate.verify_MBps")
RATE_FILL = Figure("rate_fill_MBps", "fill in the request-rate step", "fill", "MB/s",
                   "Σ bytes published ÷ Σ page-compute time of those requests", _RATE_WINDOW, _BENCH,
                   "request_rate.fill_MBps")
BENCH = (RELOAD_P50, PUBLISH_BUSY, RAW_GET_P50, TCP_P50, MEMCPY_P50, FILL_P50, VERIFY_P50, RELOAD_PROBE_P50,
         RELOAD_READ_P50, RATE_VERIFY, RATE_FILL)

# per worker (N prefill × M decode, kvtui.core.topology): kvtui.metrics.workers
_WORKER_WINDOW = "the session so far"
_WORKER_SHOWN = "watch, replay: Workers panel (more than one worker of a role); run: --json workers"
WORKER_REQUESTS = Figure("requests", "requests (per worker)", "req", "requests",
                         "requests this worker reloaded (decode) or published (prefill)", _WORKER_WINDOW, _WORKER_SHOWN,
                         "workers[].requests")
WORKER_SHARE = Figure("share", "share of requests (per worker)", "share", "%",
                      "its requests ÷ requests of every worker of its role", _WORKER_WINDOW, _WORKER_SHOWN,
                      "workers[].share")
WORKER_HIT_RATE = Figure("page_hit_rate", "page hit rate (per decode worker)", "hits", "%",
                         "pages it reloaded ÷ full pages of its requests", _WORKER_WINDOW, _WORKER_SHOWN,
                         "workers[].page_hit_rate")
WORKER_LOCAL = Figure("local_share", "local reuse (per decode worker)", "local", "%",
                      "bytes it reloaded from its own segment ÷ bytes it reloaded (defined with --segment-on decode, "
                      "where decode workers own segments; else \"—\", null)", _WORKER_WINDOW, _WORKER_SHOWN,
                      "workers[].local_share, workers[].bytes_local")
WORKER_REUSE_BUSY = Figure("reuse_read_MBps", "reuse read (busy, per decode worker)", "reuse", "MB/s",
                           "bytes it loaded ÷ time it spent in store reads (probe excluded)", _WORKER_WINDOW,
                           _WORKER_SHOWN, "workers[].reuse_read_MBps")
WORKER_PUBLISH_BUSY = Figure("publish_write_MBps", "publish write (busy, per prefill worker)", "publish", "MB/s",
                             "bytes it newly wrote ÷ time it spent in puts", _WORKER_WINDOW, _WORKER_SHOWN,
                             "workers[].publish_write_MBps")
WORKER_ERRORS = Figure("errors", "store errors (per worker)", "err", "codes",
                       "failing store return codes of the requests it took part in (their reload and publish)",
                       _WORKER_WINDOW, _WORKER_SHOWN, "workers[].errors")
#: the Workers panel's columns and the ``workers`` entries' figures, in order
WORKERS = (WORKER_REQUESTS, WORKER_SHARE, WORKER_HIT_RATE, WORKER_LOCAL, WORKER_REUSE_BUSY, WORKER_PUBLISH_BUSY,
           WORKER_ERRORS)

# TTFT and GPU time saved: estimates (kvtui.metrics.ttft), against the measured reload time
_EST_WINDOW = f"monitor: last {LATENCY_WINDOW_S:g} s; summary: {_RUN_WINDOW}; bench: `--iterations` reloads"
_EST_SHOWN = "watch, replay: header; run, report: summary, --json; bench"
_RECOMPUTE = "recompute = (2·P·k + 2·L·d_attn·k²) ÷ (peak × MFU), or k ÷ --prefill-tokens-per-s"
TTFT_SAVED = Figure("ttft_saved_ms", "TTFT saved (estimate)", "TTFT saved", "ms",
                    "estimated recompute time of the k tokens reloaded − their measured reload time (probe + read), "
                    f"per request that reloaded at least one page; {_RECOMPUTE}", _EST_WINDOW, _EST_SHOWN,
                    "ttft.window.p50_ms, ttft.window.p99_ms, ttft_saved_ms.total, ttft_saved_ms.p50, ttft_saved_ms.p99")
GPU_SAVED_WALL = Figure("gpu_s_per_s", "prefill GPU-s saved/s (estimate)", "GPU saved", "s/s",
                        "estimated recompute time of the prefixes reloaded ÷ wall-clock time",
                        f"last {RATE_WINDOW_S:g} s", _MONITOR, "ttft.gpu_s_per_s")
GPU_SAVED_RUN = Figure("prefill_gpu_s_saved", "prefill GPU time saved (estimate)", "GPU time saved", "s",
                       "Σ estimated recompute time of the prefixes reloaded", f"{_RUN_WINDOW}; bench: `--iterations` "
                       "reloads", _RUN + "; bench", "prefill_gpu_s_saved")
RELOAD_VS_RECOMPUTE = Figure("reload_vs_recompute", "reload vs recompute (estimate)", "reload/recompute", "×",
                             "Σ measured reload time ÷ Σ estimated recompute time of the same requests; above 1 the "
                             "reload is slower than recomputing (marked)", _EST_WINDOW, _EST_SHOWN,
                             "ttft.window.ratio, reload_vs_recompute")
#: the TTFT estimates (Frame.ttft, the summary's TTFT fields, the bench's recompute line)
TTFT = (TTFT_SAVED, GPU_SAVED_WALL, GPU_SAVED_RUN, RELOAD_VS_RECOMPUTE)

#: every figure once, in the docs table's order
FIGURES = WALL + HEADER + RUN + LATENCY + RELOAD_COUNTS + (RELOAD_P50, RAW_GET_P50, TCP_P50, MEMCPY_P50, FILL_P50,
                                                            VERIFY_P50) + WORKERS + TTFT


def markdown_table() -> str:
    """The docs' "Figures" table (one row per figure of :data:`FIGURES`)."""
    rows = ["| figure | shown in | formula | window | unit | field |", "|---|---|---|---|---|---|"]
    for f in FIGURES:
        fields = ", ".join(f"`{x.strip()}`" for x in f.field.split(","))
        rows.append(f"| {f.name} | {f.shown} | {f.formula} | {f.window} | {f.unit} | {fields} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m kvtui.metrics.figures: the docs' table
    print(markdown_table())
