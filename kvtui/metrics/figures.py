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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
    ``window`` in words; ``shown``: where it appears; ``key`` / ``field``: see the module docstring;
    ``decimals``: the decimals every text output shows it with (None: its unit's, :data:`UNIT_DECIMALS`)."""

    key: str
    name: str
    label: str
    unit: str
    formula: str
    window: str
    shown: str
    field: str
    decimals: int | None = None


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
                         f"last {LATENCY_WINDOW_S:g} s (the default latency window; w does not change it; "
                         "\"—\" while paused or idle)", _HEADER,
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
AIPERF_SO_FAR = Figure("aiperf_hit_rate_so_far", "aiperf hit rate (trace so far)", "aiperf", "%",
                       "mean over the trace requests finished of each one's share under aiperf analyze-trace's "
                       "rule (leading run of its hash ids already seen, rows in file order, ÷ its hash ids, the "
                       "partial tail included): every request weighs the same, where ideal weighs every token",
                       "the session so far", _HEADER + " (trace, beside ideal); run, report: summary, --json",
                       "totals.aiperf_hit_rate_so_far")
TRACE_ETA = Figure("eta_s", "trace ETA (estimate)", "ETA", "s",
                   "trace time left ÷ speed; as fast as possible: rows left ÷ requests/s (wall)", "now",
                   _HEADER + " (trace)", "(computed from workload.position_s, length_s, speed, rates.rps)")
MISS_SHARE = Figure("miss_share", "miss share by reason", "misses", "%",
                    "prompt tokens of the full pages missed for a reason ÷ prompt tokens of every request finished "
                    "(prefill skipped + the five shares + the partial tails = 100%; a trace at concurrency 1 into a "
                    "fresh store: prefill skipped + evicted + never stored + after a break = the ideal hit rate)",
                    "the session so far", "watch, replay: page grid title (the reasons present); run, report: "
                    "summary, --json", "misses.REASON.share")
#: the header's hit rates and the trace's ETA
HEADER = (HIT_RATE_SESSION, HIT_RATE_RECENT, TOKENS_SKIPPED, IDEAL_SO_FAR, AIPERF_SO_FAR, TRACE_ETA)


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

# a trace's offline figures (workload.stats; no store): trace-stats, sweep
_TRACE_SHOWN = "trace-stats: table, --json"
_TRACE_WINDOW = "the trace's rows, in file order"
_README_RULE = ("prompt tokens of the leading run of a row's full blocks already published by earlier rows ÷ "
                "prompt tokens of the rows")
TRACE_IDEAL = Figure("ideal_token_hit_rate", "ideal hit rate (unbounded cache)", "ideal hit rate", "%",
                     f"{_README_RULE}; the cache keeps every block (the FAST'25 trace README's rule)",
                     _TRACE_WINDOW, _TRACE_SHOWN + "; traces; sweep: table, plot, --json",
                     "ideal_token_hit_rate")
TRACE_LRU = Figure("lru_token_hit_rate", "LRU hit rate (offline, at a capacity)", "LRU", "%",
                   f"{_README_RULE}; a cache of capacity ÷ block tokens blocks that drops the least recently used",
                   _TRACE_WINDOW, _TRACE_SHOWN + " (--capacity); sweep: table, plot, --json",
                   "lru[].token_hit_rate, points[].lru_token_hit_rate")
TRACE_MIN = Figure("min_token_hit_rate", "optimal hit rate (Belady MIN, at a capacity)", "optimal (Belady MIN)", "%",
                   f"{_README_RULE}; a cache of the same blocks that drops the block used furthest in the future "
                   "(Belady 1966): the most any eviction policy can hit", _TRACE_WINDOW,
                   _TRACE_SHOWN + " (--capacity); sweep: table, plot, --json",
                   "min[].token_hit_rate, points[].min_token_hit_rate")
AIPERF_HIT_RATE = Figure("aiperf_hit_rate", "aiperf hit rate (mean per request)", "aiperf hit rate", "%",
                         "mean over rows of (leading run of the row's hash ids already seen ÷ its hash ids), "
                         "unbounded cache: aiperf analyze-trace's cache_hit_rate; every request weighs the same, "
                         "where the token hit rates weigh every token the same", _TRACE_WINDOW, _TRACE_SHOWN,
                         "aiperf_hit_rate")
PREFILL_CEILING = Figure("prefill_ceiling", "prefill-compute ceiling (ideal)", "prefill ceiling", "×",
                         "1 ÷ (1 − r) of a token hit rate r: prompt tokens ÷ tokens still computed if every hit "
                         "token were free (an ideal; ∞ when every token hits)", _TRACE_WINDOW,
                         _TRACE_SHOWN + " (beside each token hit rate)",
                         "prefill_ceiling, lru[].prefill_ceiling, min[].prefill_ceiling")
#: a trace's offline figures, in trace-stats' order
TRACE_TWO_TIER = Figure("two_tier_token_hit_rate", "two-tier hit rate (offline: LRU memory demoting to LRU disk)",
                        "two tiers", "%",
                        f"{_README_RULE}; a memory of capacity ÷ block tokens blocks whose least recently used block "
                        "moves to a disk of disk ÷ block tokens blocks (dropping its own least recently used); a block "
                        "read from disk stays there (workload.tiers): what Mooncake's offload_on_evict approximates, "
                        "split into memory and disk hits",
                        _TRACE_WINDOW, _TRACE_SHOWN + " (--capacity with --disk); sweep --disk: table, plot, --json",
                        "two_tier[].token_hit_rate (memory_token_hit_rate + disk_token_hit_rate), "
                        "points[].model_token_hit_rate (model_memory_… + model_disk_token_hit_rate)")
TRACE = (TRACE_IDEAL, AIPERF_HIT_RATE, PREFILL_CEILING, TRACE_LRU, TRACE_MIN, TRACE_TWO_TIER)


def ceiling_text(ceiling: float) -> str:
    """:data:`PREFILL_CEILING` as text: ``2.86×``; ``∞ (all hits)`` when every token hits."""
    return "∞ (all hits)" if ceiling == float("inf") else show(PREFILL_CEILING, ceiling)


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
RELOAD_P50 = Figure("reuse_read_MBps_p50", "reload throughput (p50 per reload)", "reload throughput",
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
_RATE_WINDOW = "the bench's request-rate step: the requests that finished in its --verify full windows (8 s)"
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
                    "ttft.window.p50_ms, ttft.window.p99_ms, ttft_saved_ms.total, ttft_saved_ms.p50, ttft_saved_ms.p99",
                    decimals=1)
GPU_SAVED_WALL = Figure("gpu_s_per_s", "prefill GPU-s saved/s (estimate)", "GPU saved", "s/s",
                        "estimated recompute time of the prefixes reloaded ÷ wall-clock time",
                        f"last {RATE_WINDOW_S:g} s", _MONITOR, "ttft.gpu_s_per_s")
GPU_SAVED_RUN = Figure("prefill_gpu_s_saved", "prefill GPU time saved (estimate)", "GPU time saved", "s",
                       "Σ estimated recompute time of the prefixes reloaded", f"{_RUN_WINDOW}; bench: `--iterations` "
                       "reloads", _RUN + "; bench", "prefill_gpu_s_saved", decimals=2)
RELOAD_VS_RECOMPUTE = Figure("reload_vs_recompute", "reload vs recompute (estimate)", "reload/recompute", "×",
                             "Σ measured reload time ÷ Σ estimated recompute time of the same requests; above 1 the "
                             "reload is slower than recomputing (marked)", _EST_WINDOW, _EST_SHOWN,
                             "ttft.window.ratio, reload_vs_recompute")
#: the TTFT estimates (Frame.ttft, the summary's TTFT fields, the bench's recompute line)
TTFT = (TTFT_SAVED, GPU_SAVED_WALL, GPU_SAVED_RUN, RELOAD_VS_RECOMPUTE)

# the store's tiers (a disk tier behind its DRAM segments: ``--disk-size``): each tier's figures, in the summary's
# ``tiers`` object (``tiers.memory``, ``tiers.disk``) when the store has a disk tier. The tiers' figures add up to the
# whole's; kvtui.metrics.tiers splits a reload's time and its recompute estimate between them.
_TIER_SHOWN = "run, report: summary, --json `tiers` (a disk tier)"
_TIER_TIME = ("the disk tier's part of a reload is its reads of disk pages, the memory tier's the rest of its probe + "
              "read; a reload from one tier only is all that tier's (kvtui.metrics.tiers)")
TIER_PAGES_HIT = Figure("pages_hit", "KV page hits by tier", "hits", "pages",
                        "pages reloaded from the tier: memory (the DRAM segments) or disk (the disk tier; grid cells "
                        "▆); memory + disk = KV page hits", _RUN_WINDOW,
                        _TIER_SHOWN + "; --requests-log; Prometheus", "tiers.TIER.pages_hit")
TIER_TOKENS_HIT = Figure("tokens_hit", "prefill tokens skipped by tier", "skipped", "tokens",
                         "prompt tokens of the pages reloaded from the tier; memory + disk = prefill tokens skipped",
                         _RUN_WINDOW, _TIER_SHOWN + "; --requests-log; Prometheus",
                         "tiers.TIER.tokens_hit")
TIER_BYTES = Figure("bytes_loaded", "bytes reloaded by tier", "reloaded", "bytes",
                    "bytes of the pages reloaded from the tier; memory + disk = bytes reloaded", _RUN_WINDOW,
                    _TIER_SHOWN + "; Prometheus", "tiers.TIER.bytes_loaded")
TIER_HIT_RATE = Figure("page_hit_rate", "page hit rate by tier", "hits from", "%",
                       "pages reloaded from the tier ÷ full pages of every request finished; memory + disk = the "
                       "page hit rate", "the session so far", "watch, replay: header (a disk tier); " + _TIER_SHOWN,
                       "totals.page_hit_rate_TIER, tiers.TIER.page_hit_rate")
TIER_READ_BUSY = Figure("read_ms_total", "time in store reads by tier", "read time", "ms",
                        "disk: Σ time of the reads of disk pages; memory: the rest of the reads (the query of where "
                        "each page is included); memory + disk = time in store reads", _RUN_WINDOW,
                        _TIER_SHOWN + "; Prometheus", "tiers.TIER.read_ms_total", decimals=1)
TIER_RELOAD = Figure("reload", "reload latency by tier", "reload", "ms",
                     f"each reload's time in the tier, for each reload that loaded a page from it: {_TIER_TIME}",
                     _LAT_WINDOW, "watch, replay: Latency panel (a disk tier); " + _TIER_SHOWN + "; --requests-log "
                     "`disk_read_ms`; Prometheus", "tiers.TIER.reload_ms")
TIER_TTFT_SAVED = Figure("ttft_saved_ms", "TTFT saved by tier (estimate)", "TTFT saved", "ms",
                         "estimated recompute time of the tokens reloaded from the tier (each page by its position in "
                         "the prompt) − the reload's time in the tier, per reload that loaded a page from it; the "
                         "tiers' totals add up to TTFT saved's", _EST_WINDOW,
                         "watch, replay: header (a disk tier); " + _TIER_SHOWN,
                         "ttft.window.tiers.TIER, tiers.TIER.ttft_saved_ms", decimals=1)
TIER_GPU_SAVED = Figure("prefill_gpu_s_saved", "prefill GPU time saved by tier (estimate)", "GPU time saved", "s",
                        "Σ estimated recompute time of the tokens reloaded from the tier", _RUN_WINDOW, _TIER_SHOWN,
                        "tiers.TIER.prefill_gpu_s_saved", decimals=2)
TIER_SLOWER = Figure("reloads_slower_than_recompute", "reloads slower than recompute by tier (estimate)", "slower",
                     "requests", "reloads whose time in the tier exceeded the estimated recompute time of the tokens "
                     "they reloaded from it", _EST_WINDOW, _TIER_SHOWN,
                     "tiers.TIER.reloads_slower_than_recompute")
TIER_VS_RECOMPUTE = Figure("reload_vs_recompute", "reload vs recompute by tier (estimate)", "vs recompute", "×",
                           "Σ reload time in the tier ÷ Σ estimated recompute time of the tokens reloaded from it; "
                           "above 1 reading the tier is slower than recomputing (marked)", _EST_WINDOW,
                           "watch, replay: header (a disk tier); " + _TIER_SHOWN,
                           "ttft.window.tiers.TIER.ratio, tiers.TIER.reload_vs_recompute")
#: each tier's figures, in the summary's ``tiers.TIER`` order
TIER = (TIER_PAGES_HIT, TIER_TOKENS_HIT, TIER_BYTES, TIER_HIT_RATE, TIER_READ_BUSY, TIER_RELOAD, TIER_TTFT_SAVED,
        TIER_GPU_SAVED, TIER_SLOWER, TIER_VS_RECOMPUTE)
TIER_LATENCY_KEYS = {"memory": "reload_memory", "disk": "reload_disk"}  # tier → its key in Frame.latency
TIER_TOTALS = {"pages_hit": "pages_hit_{tier}", "tokens_hit": "tokens_hit_{tier}",
               "bytes_loaded": "bytes_loaded_{tier}", "read_ms_total": "read_ms_{tier}_total",
               "page_hit_rate": "page_hit_rate_{tier}"}
"""Where a tier's counts are in ``Frame.totals`` (a template per :data:`TIER` key, ``{tier}`` a tier name)."""


# hot-key replication (``--replicate-hot``: the master copies a key read more than 0.5 times a second over 5 s to a
# second segment): how many hits had such a copy. The totals carry it once the store replicates hot keys.
HOT_PAGES_HIT = Figure("pages_hit_replicated", "KV page hits with a hot replica", "hot hits", "pages",
                       "pages reloaded that the store held in two memory replicas or more when the reload asked where "
                       "each page is, just before reading it (the master had copied the key to a second segment); "
                       "a part of the KV page hits (on a store with a disk tier, of memory's)", _RUN_WINDOW,
                       "run, report: summary, --json (with --replicate-hot, or once a hit had one); watch, replay: "
                       "Store panel, row details; Prometheus", "pages_hit_replicated")


def replicated(totals: Mapping[str, Any]) -> bool:
    """Whether a frame's ``totals`` carry :data:`HOT_PAGES_HIT` (the store replicates hot keys)."""
    return HOT_PAGES_HIT.key in totals


def tiered(totals: Mapping[str, Any]) -> bool:
    """Whether a frame's ``totals`` carry the tiers' counts (the store has a disk tier)."""
    return TIER_TOTALS["pages_hit"].format(tier="disk") in totals


def tier_field(f: Figure) -> str:
    """A :data:`TIER` figure's key in the summary's ``tiers.TIER`` object (its field's ``tiers.TIER.`` part)."""
    return next(x.strip() for x in f.field.split(",") if x.strip().startswith("tiers.TIER.")).removeprefix(
        "tiers.TIER.")


# the summary's counters (kvtui run, report: summary, --json; the bench's counts of one reload): whole numbers and
# busy times rather than rates, so not in the docs' Figures table; named here so that every text output
# (the summary, the bench table, compare) says each one the same way
_COUNT_WINDOW = _RUN_WINDOW + "; bench: one reload of the second request"
_COUNT_SHOWN = _RUN + "; compare"
REQUESTS = Figure("requests", "requests", "requests", "requests", "requests finished", _RUN_WINDOW, _COUNT_SHOWN,
                  "requests")
ELAPSED = Figure("elapsed_s", "elapsed", "in", "s", "seconds from the first request's start to the summary",
                 _RUN_WINDOW, _COUNT_SHOWN, "elapsed_s")
TOKENS_INPUT = Figure("tokens_input", "prompt tokens", "tokens", "tokens", "tokens of the requests' prompts",
                      _COUNT_WINDOW, _COUNT_SHOWN + "; bench", "tokens_input, tokens_requested")
TOKENS_CACHEABLE = Figure("tokens_cacheable", "prompt tokens in full pages", "in full pages", "tokens",
                          "tokens of the requests' full pages (a partial last page is never published)", _RUN_WINDOW,
                          _COUNT_SHOWN, "tokens_cacheable")
TOKENS_HIT = Figure("tokens_hit", "prefill tokens skipped", "prefill skipped", "tokens",
                    "prompt tokens reloaded instead of computed", _COUNT_WINDOW, _COUNT_SHOWN + "; bench",
                    "tokens_hit, tokens_skipped")
PAGES_TOTAL = Figure("pages_total", "full pages", "full pages", "pages", "full pages of the requests' prompts",
                     _COUNT_WINDOW, _COUNT_SHOWN + "; bench", "pages_total")
PAGES_HIT = Figure("pages_hit", "KV page hits", "KV page hits", "pages", "pages reloaded from the store",
                   _COUNT_WINDOW, _COUNT_SHOWN + "; bench", "pages_hit")
PAGES_PUBLISHED = Figure("pages_published", "pages published", "published", "pages",
                         "pages the prefill worker wrote to the store", _COUNT_WINDOW, _COUNT_SHOWN + "; bench",
                         "pages_published")
PAGES_PRESENT = Figure("pages_already_present", "pages already present", "already present", "pages",
                       "pages the prefill worker found in the store already when it published them (put-if-absent: "
                       "not written again): another request in flight, or a peer, stored them first, or they lay "
                       "after the request's first missing page (a reload takes the leading run of hits only)",
                       _RUN_WINDOW, _COUNT_SHOWN, "pages_already_present")
PAGES_FAILED = Figure("pages_failed", "pages not published", "failed", "pages",
                      "pages whose put failed (their codes in `errors`)", _RUN_WINDOW, _COUNT_SHOWN, "pages_failed")
VERIFIED = Figure("verified_pages", "pages verified", "verified", "pages",
                  "reloaded pages checked against their expected contents: every byte (--verify full, the default) or "
                  "every chunk header and a sample of words (--verify sampled)", _RUN_WINDOW, _COUNT_SHOWN,
                  "verified_pages")
MISMATCHES = Figure("mismatches", "pages mismatched", "mismatches", "pages",
                    "reloaded pages whose bytes differ from their expected contents", _RUN_WINDOW, _COUNT_SHOWN,
                    "mismatches")
BYTES_LOADED = Figure("bytes_loaded", "bytes reloaded", "reloaded", "bytes", "bytes of the pages reloaded",
                      _COUNT_WINDOW, _COUNT_SHOWN + "; bench", "bytes_loaded, bytes_reloaded")
BYTES_WRITTEN = Figure("bytes_written", "bytes published", "published", "bytes", "bytes of the pages published",
                       _RUN_WINDOW, _COUNT_SHOWN, "bytes_written")
READ_BUSY = Figure("read_ms_total", "time in store reads", "read time", "ms",
                   "Σ time of the reloads' reads (probe excluded): reuse read (busy)'s denominator", _RUN_WINDOW,
                   _COUNT_SHOWN, "read_ms_total", decimals=1)
PUT_BUSY = Figure("put_ms_total", "time in puts", "put time", "ms",
                  "Σ time of the publishes' puts (probe excluded): publish write (busy)'s denominator", _RUN_WINDOW,
                  _COUNT_SHOWN, "put_ms_total", decimals=1)
LOST = Figure("requests_lost", "requests lost", "lost", "requests",
              "requests under way when a worker died, counted and not submitted again", "the run",
              "run: --json; compare", "requests_lost")
RERUN = Figure("requests_rerun", "requests rerun", "rerun", "requests",
               "requests under way when a worker died and submitted again", "the run", "run: --json; compare",
               "requests_rerun")
SLOWER = Figure("reloads_slower_than_recompute", "reloads slower than recompute (estimate)", "slower", "requests",
                "reloads whose measured time exceeded their estimated recompute time", _EST_WINDOW, _EST_SHOWN,
                "reloads_slower_than_recompute")
_MISS_RULE = ("first use (no earlier request of the run had the key), evicted (it was in the store earlier in the "
              "run and has left it, a disk tier too), never stored (computed earlier, its put failed), after a break "
              "(present, but after the request's first miss), in flight (another request running at the same time "
              "computed it): "
              "kvtui.core.misses")
_MISS_SHOWN = "run, report: summary, --json; --requests-log; Prometheus; watch, replay: page grid title, row details"
MISS_PAGES = Figure("misses", "missed pages by reason", "misses", "pages",
                    f"full pages not reloaded, each with one reason: {_MISS_RULE}", _RUN_WINDOW, _MISS_SHOWN,
                    "misses.REASON.pages")
MISS_TOKENS = Figure("miss_tokens", "missed tokens by reason", "missed tokens", "tokens",
                     "prompt tokens of the full pages missed for each reason", _RUN_WINDOW, _COUNT_SHOWN,
                     "misses.REASON.tokens")
#: the summary's counters, in its order
COUNTS = (REQUESTS, ELAPSED, TOKENS_HIT, TOKENS_INPUT, TOKENS_CACHEABLE, PAGES_HIT, PAGES_TOTAL, PAGES_PUBLISHED,
          PAGES_PRESENT, PAGES_FAILED, VERIFIED, MISMATCHES, BYTES_LOADED, BYTES_WRITTEN, READ_BUSY, PUT_BUSY, LOST,
          RERUN, SLOWER, MISS_PAGES, MISS_TOKENS)

# the bench's own figures of its one reloaded request, beside the counts above
RELOAD_HIT_RATE = Figure("hit_rate", "KV page hit rate (one reload)", "KV page hit rate", "%",
                         "pages reloaded ÷ full pages of the second request", _BENCH_WINDOW, _BENCH, "hit_rate")
VERIFY_MS = Figure("verify_ms_p50", "verify time (p50, outside reload time)", "verify time", "ms",
                   "median over the reloads of the time to check the loaded pages' bytes", _BENCH_WINDOW, _BENCH,
                   "verify_ms_p50")

# the ratios each bench is judged against (kvtui.bench.targets: TARGETS), and the ratios printed beside them;
# ``key``: the key in the bench's ``ratios`` object
_RATIO_SHOWN = "bench: table (Targets), --json; compare"
_BENCH_RATIO = "the bench's reloads and their same-run baselines"
_ROUNDS = "the median of the rounds' ratios (--rounds)"


def _ratio(key: str, name: str, formula: str, window: str = _BENCH_RATIO, shown: str = _RATIO_SHOWN,
           more: str = "") -> Figure:
    return Figure(key, name, name, "×", formula, window, shown, f"ratios.{key}{more}")


CONNECTOR_VS_RAW = _ratio("connector_vs_raw", "reload ÷ raw reads (1 stream)",
                          "reload throughput (p50 per reload, 1 stream) ÷ raw batch_get_into (p50 call) of the same "
                          "keys")
BEST_STREAMS_VS_RAW = _ratio("best_streams_vs_raw", "best streams ÷ raw reads",
                             "reload throughput with the best number of streams ÷ raw batch_get_into (p50 call)")
RELOAD_VS_TCP = _ratio("reload_vs_loopback_tcp", "best reload ÷ loopback TCP",
                       "reload throughput with the best number of streams ÷ loopback TCP (p50 transfer)")
RELOAD_VS_MEMCPY = _ratio("reload_vs_memcpy", "co-located reload ÷ memcpy",
                          "reload throughput from a segment co-located with decode ÷ memcpy (p50 copy)")
TCP_RELOAD_VS_TCP = _ratio("tcp_reload_vs_loopback_tcp", "TCP-path reload ÷ loopback TCP",
                           "reload throughput with real clients (reads cross loopback TCP) ÷ loopback TCP (p50 "
                           "transfer); --tcp-sweep: its best setting's")
TCP_CONNECTOR_VS_RAW = _ratio("tcp_connector_vs_raw", "TCP-path reload ÷ raw reads",
                              "on the TCP path: reload throughput ÷ raw batch_get_into (p50 call)")
VERIFY_VS_MEMCPY = _ratio("verify_vs_memcpy", "page verify ÷ memcpy", "page verify (p50) ÷ memcpy of the same bytes",
                          more=", baselines.content.verify_vs_memcpy")
FILL_VS_MEMCPY = _ratio("fill_vs_memcpy", "page fill ÷ memcpy", "page fill (p50) ÷ memcpy of the same bytes",
                        more=", baselines.content.fill_vs_memcpy")
_RATE_STEP = "the bench's request-rate step, its --verify full windows"
RATE_VS_STORE_BOUND = _ratio("request_rate_vs_store_bound", "request rate ÷ store-bound rate",
                             "closed-loop requests/s ÷ the rate if store calls were all a request did (1000 ÷ store "
                             "ms per request), every loaded byte checked (--verify full)", _RATE_STEP,
                             more=", request_rate.request_rate_vs_store_bound")
RATE_VS_PASSES_BOUND = _ratio("request_rate_vs_passes_bound", "full: rate ÷ store + passes bound",
                              "closed-loop requests/s with --verify full ÷ the rate if store calls and the two "
                              "passes over memory (verify every byte, fill) were all a request did (1000 ÷ their ms "
                              "per request); = request rate ÷ store-bound rate ÷ its passes-only ceiling",
                              _RATE_STEP, more=", request_rate.request_rate_vs_passes_bound")
SAMPLED_RATE_VS_STORE_BOUND = _ratio("sampled_request_rate_vs_store_bound", "sampled: rate ÷ store-bound rate",
                                     "closed-loop requests/s with --verify sampled ÷ the rate if store calls were "
                                     "all a request did (1000 ÷ store ms per request)",
                                     "the bench's request-rate step, its --verify sampled windows",
                                     more=", request_rate.sampled.request_rate_vs_store_bound")
ENGINE_VS_BARE = _ratio("engine_vs_bare_loop", "engine ÷ bare loop",
                        "a trace's replay rate through the engine ÷ through a bare loop of the same store calls",
                        _ROUNDS, "bench --trace: table, --json; compare")
ENGINE_VS_BARE_BEST = _ratio("engine_vs_bare_loop_best_of", "engine ÷ bare loop (best runs)",
                             "the engine's best replay rate ÷ the bare loop's best", "the rounds' best runs",
                             "bench --trace: table, --json; compare")
ENGINE_VS_TWO = _ratio("engine_vs_two_process_loop", "engine ÷ two-process loop",
                       "replay rate through the engine ÷ through the same calls split over two processes (kvtui's "
                       "own work)", _ROUNDS, "bench --trace: table, --json; compare")
TWO_VS_BARE = _ratio("two_process_loop_vs_bare_loop", "two-process loop ÷ bare loop",
                     "replay rate with the calls split over two processes ÷ in one (the hand-off alone)", _ROUNDS,
                     "bench --trace: table, --json; compare")
MONITOR_VS_HEADLESS = _ratio("monitor_vs_headless", "monitor ÷ headless",
                             "the workload's rate with the live monitor ÷ without it", _ROUNDS,
                             "bench --ui: table, --json; compare")
MONITOR_VS_HEADLESS_BEST = _ratio("monitor_vs_headless_best_of", "monitor ÷ headless (best runs)",
                                  "the best rate with the monitor ÷ the best without it", "the rounds' best runs",
                                  "bench --ui: table, --json; compare")
RELOAD_VS_LINK = _ratio("reload_vs_link", "reload ÷ link rate",
                        "reload throughput (p50 per reload) across an emulated link ÷ the link's rate",
                        shown="bench --link: table, --json; compare")
RAW_VS_LINK = _ratio("raw_vs_link", "raw reads ÷ link rate",
                     "raw batch_get_into (p50 call) across an emulated link ÷ the link's rate",
                     shown="bench --link: table, --json; compare")
AGGREGATE_VS_LINKS = _ratio("aggregate_vs_links", "aggregate ÷ M × link rate",
                            "Σ bytes M decode workers reloaded at once ÷ the round's time, ÷ M × the link's rate",
                            "the median of --iterations rounds",
                            "bench --link --decode-workers: table, --json; compare", more=".N")
BEST_VS_DEFAULT = _ratio("best_vs_mooncake_default", "best setting ÷ Mooncake's own",
                         "--tcp-sweep: the best setting's reload throughput ÷ that with Mooncake's 64 KiB slices",
                         _ROUNDS, "bench --tcp-sweep: table, --json; compare")
_DISK = "bench --disk: table, --json; compare"
_DISK_WARM = "the disk bench's rounds with the page cache warm"
_DISK_COLD = "the disk bench's rounds with the page cache dropped before each disk sample (where permitted)"
DISK_VS_RAW_READ = _ratio("disk_reload_vs_raw_read", "disk reload ÷ raw file read",
                          "reload throughput (p50 per reload) of pages only the disk tier holds ÷ a raw read (p50) of "
                          "the same bytes from the tier's files", _DISK_WARM, _DISK)
COLD_DISK_VS_RAW_READ = _ratio("cold_disk_reload_vs_raw_read", "cold: disk reload ÷ raw file read",
                               "as disk reload ÷ raw file read, each sample after the page cache was dropped",
                               _DISK_COLD, _DISK)
DISK_VS_MEMORY = _ratio("disk_vs_memory_reload", "disk reload ÷ memory reload",
                        "reload throughput (p50 per reload) from the disk tier ÷ that of as many pages held in DRAM",
                        _DISK_WARM, _DISK)
COLD_DISK_VS_MEMORY = _ratio("cold_disk_vs_memory_reload", "cold: disk reload ÷ memory reload",
                             "as disk reload ÷ memory reload, each disk sample after the page cache was dropped",
                             _DISK_COLD, _DISK)
DISK_VS_RECOMPUTE = _ratio("disk_reload_vs_recompute", "disk reload ÷ recompute (time)",
                           "mean reload time (probe + read) from the disk tier ÷ the estimated recompute of its "
                           "tokens (TTFT estimate); below 1 the reload is faster", _DISK_WARM, _DISK)
COLD_DISK_VS_RECOMPUTE = _ratio("cold_disk_reload_vs_recompute", "cold: disk reload ÷ recompute",
                                "as disk reload ÷ recompute, each reload after the page cache was dropped",
                                _DISK_COLD, _DISK)
MEMORY_VS_RECOMPUTE = _ratio("memory_reload_vs_recompute", "memory reload ÷ recompute (time)",
                             "mean reload time (probe + read) of as many pages from DRAM ÷ the estimated recompute "
                             "of their tokens", _DISK_WARM, _DISK)
#: every ratio of the benches; those in kvtui.bench.targets.TARGETS are judged against a target
RATIOS = (CONNECTOR_VS_RAW, BEST_STREAMS_VS_RAW, RELOAD_VS_TCP, RELOAD_VS_MEMCPY, TCP_RELOAD_VS_TCP,
          TCP_CONNECTOR_VS_RAW, VERIFY_VS_MEMCPY, FILL_VS_MEMCPY, RATE_VS_STORE_BOUND, RATE_VS_PASSES_BOUND,
          SAMPLED_RATE_VS_STORE_BOUND, ENGINE_VS_BARE,
          ENGINE_VS_BARE_BEST, ENGINE_VS_TWO, TWO_VS_BARE, MONITOR_VS_HEADLESS, MONITOR_VS_HEADLESS_BEST,
          RELOAD_VS_LINK, RAW_VS_LINK, AGGREGATE_VS_LINKS, BEST_VS_DEFAULT, DISK_VS_RAW_READ, COLD_DISK_VS_RAW_READ,
          DISK_VS_MEMORY, COLD_DISK_VS_MEMORY, DISK_VS_RECOMPUTE, COLD_DISK_VS_RECOMPUTE, MEMORY_VS_RECOMPUTE)
RATIO_BY_KEY = {f.key: f for f in RATIOS}

_STORE_SHOWN = "watch, replay: Store panel; run: summary, --json"
_STORE_WINDOW = "as the master said at its last scrape (every 0.5 s; at the end of a run, after its last request)"
_MASTER = "the master's `/metrics`"


def _store(key: str, name: str, label: str, unit: str, formula: str, window: str = _STORE_WINDOW) -> Figure:
    return Figure(key, name, label, unit, formula, window, _STORE_SHOWN, f"store_at_end.{key}")


STORE_KEYS = _store("keys", "store keys", "keys", "keys", f"objects the store holds ({_MASTER} master_key_count)")
STORE_EVICTED = _store("evicted_keys", "keys evicted", "evicted", "keys",
                       f"keys the master evicted since it started ({_MASTER} master_evicted_key_count): this run's "
                       "own on kvtui's embedded master, every client's on an attached one")
STORE_ALLOC_FAILS = _store("alloc_failures", "allocation failures", "alloc failures", "calls",
                           f"puts the master could not place since it started ({_MASTER} "
                           "master_put_start_alloc_failures_total): each a NO_AVAILABLE_HANDLE to a client")
STORE_USED = _store("used_bytes", "store bytes used", "used", "bytes",
                    f"bytes allocated in the segments ({_MASTER} master_allocated_bytes)")
STORE_CAPACITY = _store("capacity_bytes", "store capacity", "capacity", "bytes",
                        f"the segments' bytes ({_MASTER} master_total_capacity_bytes)")
STORE_PUT_RATE = _store("put_rps", "store puts/s", "put", "/s",
                        f"put starts the master received ÷ time between two scrapes ({_MASTER}, single and batch "
                        "items)", "between the last two scrapes (0.5 s apart)")
STORE_GET_RATE = _store("get_rps", "store gets/s", "get", "/s",
                        f"replica-list requests the master answered (a get asks for one) ÷ time between two scrapes "
                        f"({_MASTER}, single and batch items)", "between the last two scrapes (0.5 s apart)")
_TIER_STORE_WINDOW = _STORE_WINDOW + "; only with a disk tier"
STORE_DISK_USED = _store("disk_used_bytes", "disk tier bytes used", "disk", "bytes",
                         f"bytes of the disk tier's files ({_MASTER} master_allocated_file_size_bytes)",
                         _TIER_STORE_WINDOW)
STORE_DISK_CAPACITY = _store("disk_capacity_bytes", "disk tier capacity", "disk capacity", "bytes",
                             "the disk tier's bytes: kvtui's --disk-size for its embedded store; attached, the "
                             "master's master_total_file_capacity_bytes, none when it says 2 TiB (its figure when no "
                             "cap is known)", _TIER_STORE_WINDOW)
STORE_OFFLOADED = _store("offloaded_keys", "keys offloaded to disk", "offloaded", "keys",
                         f"keys the master evicted from the DRAM segments, each offloaded to the disk tier ({_MASTER} "
                         "master_evicted_key_count_mem; the Store panel shows it in place of keys evicted)",
                         _TIER_STORE_WINDOW)
STORE_DISK_EVICTED = _store("disk_evicted_keys", "keys evicted from disk", "disk evicted", "keys",
                            "disk replicas removed to make room on the disk tier: each key is gone from the store "
                            f"unless DRAM holds it too ({_MASTER} master_evict_disk_replica_requests_total)",
                            _TIER_STORE_WINDOW)
STORE_PROMOTED = _store("promoted_keys", "keys promoted to memory", "promoted", "keys",
                        f"disk-only keys the master copied back to DRAM ({_MASTER} master_promotion_completed_total; 0 "
                        "unless the master promotes on hit)", _TIER_STORE_WINDOW)
STORE_MEM_LOOKUPS = _store("mem_cache_hits", "master's memory hits", "mem hits", "lookups",
                           f"lookups the master answered with a memory replica ({_MASTER} mem_cache_hit_nums_): kvtui "
                           "asks where each page is, then reads it, so a reloaded page counts about twice",
                           _TIER_STORE_WINDOW)
STORE_DISK_LOOKUPS = _store("disk_cache_hits", "master's disk hits", "disk hits", "lookups",
                            f"lookups the master answered with a disk replica ({_MASTER} file_cache_hit_nums_), "
                            "counted like the memory hits", _TIER_STORE_WINDOW)
#: the Store panel's disk tier (a store with one): the master's figures, scraped
STORE_DISK = (STORE_DISK_USED, STORE_DISK_CAPACITY, STORE_OFFLOADED, STORE_DISK_EVICTED, STORE_PROMOTED,
              STORE_MEM_LOOKUPS, STORE_DISK_LOOKUPS)
_HOT_STORE_WINDOW = _STORE_WINDOW + "; with --replicate-hot, or once the master copied a key"
STORE_COPIES_STARTED = _store("copies_started", "hot-key copies started", "started", "copies",
                              "copies of a hot key to a second segment the master began (dynamic replication: a key "
                              f"read more than 0.5 times a second over 5 s; {_MASTER} "
                              "master_copy_start_requests_total): one for each key copied", _HOT_STORE_WINDOW)
STORE_COPIES_DONE = _store("copies_done", "hot-key copies done", "done", "copies",
                           f"copies of a hot key the master completed ({_MASTER} master_copy_end_requests_total): each "
                           "a key with a second memory replica; copies started − done are under way or failed",
                           _HOT_STORE_WINDOW)
#: the Store panel's hot-key replication (--replicate-hot): the master's figures, scraped
STORE_HOT = (STORE_COPIES_STARTED, STORE_COPIES_DONE)


def copies_text(store: Mapping[str, Any]) -> str:
    """``48 started · 47 done``: the master's copies of hot keys (:data:`STORE_HOT`) in ``store`` (a store scrape,
    or a summary's ``store_at_end``)."""
    return " · ".join(f"{int(store[f.key]):,} {f.label}" for f in STORE_HOT if f.key in store)


#: the Store panel: the master's own figures, scraped
STORE = (STORE_KEYS, STORE_EVICTED, STORE_ALLOC_FAILS, STORE_USED, STORE_CAPACITY, STORE_PUT_RATE, STORE_GET_RATE)
STORE_COUNTS = STORE[:5]  # what a run's summary keeps of the last scrape (the rates are of one moment), with the
# disk tier's (STORE_DISK) and the hot-key copies (STORE_HOT) where the scrape has them

_FAILOVER_SHOWN = ("watch: events; run, soak: summary, --json `failovers`; Prometheus `kvtui_failover_*` (the "
                   "last one)")
_ONE_FAILOVER = "one failover of kvtui's HA cluster (--ha), from the fault"
FAILOVER_LEADER = Figure("leader_s", "failover: a standby leads", "leader after", "s",
                         "fault → another master's /health says role leader (it warms up for ~5 s before it serves)",
                         _ONE_FAILOVER, _FAILOVER_SHOWN, "failovers[].leader_s")
FAILOVER_SERVING = Figure("serving_s", "failover: a master serves", "serving after", "s",
                          "fault → a master's /health says ha_state serving after none did", _ONE_FAILOVER,
                          _FAILOVER_SHOWN, "failovers[].serving_s")
FAILOVER_RELOAD = Figure("reload_s", "failover: kvtui reloads again", "reload after", "s",
                         "fault → the end of the first request after the first store error that reloaded pages "
                         "without an error", _ONE_FAILOVER, _FAILOVER_SHOWN, "failovers[].reload_s")
FAILOVER_PUBLISH = Figure("publish_s", "failover: kvtui publishes again", "publish after", "s",
                          "fault → the end of the first request after the first store error that published pages "
                          "without an error", _ONE_FAILOVER, _FAILOVER_SHOWN, "failovers[].publish_s")
FAILOVER_FAILED = Figure("requests_failed", "failover: requests failed", "requests failed", "requests",
                         "requests that finished with a store error between the fault and kvtui's first publish "
                         "after it (their codes: `errors`)", _ONE_FAILOVER, _FAILOVER_SHOWN,
                         "failovers[].requests_failed")
FAILOVER_LOST = Figure("pages_lost", "failover: acknowledged pages lost", "pages lost", "pages",
                       "pages whose put returned 0 (stored when the fault began, or acknowledged after) that the "
                       "serving master no longer lists once the segments are mounted on it again; exact when "
                       "`evicted` is 0", _ONE_FAILOVER, _FAILOVER_SHOWN, "failovers[].pages_lost")
#: the failover report's figures (kvtui.core.failover.FailoverReport's fields of the same keys)
FAILOVER = (FAILOVER_LEADER, FAILOVER_SERVING, FAILOVER_RELOAD, FAILOVER_PUBLISH, FAILOVER_FAILED, FAILOVER_LOST)


def failover_ranges(reports: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{key: {"min", "max", "n"}}`` of each :data:`FAILOVER` figure over ``reports`` (dicts of
    ``FailoverReport.as_dict``), counting only those where it happened (``n``: how many; min and max None
    when none); ``pages_lost`` also has ``total``."""
    out: dict[str, dict[str, Any]] = {}
    for f in FAILOVER:
        values = [r[f.key] for r in reports if r.get(f.key) is not None]
        out[f.key] = {"min": min(values) if values else None, "max": max(values) if values else None,
                      "n": len(values)}
    out[FAILOVER_LOST.key]["total"] = sum(r.get(FAILOVER_LOST.key) or 0 for r in reports)
    return out


def failover_lines(n: int, ranges: Mapping[str, Mapping[str, Any]]) -> str:
    """The summary's lines on ``n`` failovers: each figure of :data:`FAILOVER` as
    ``min–max`` over those where it happened (``ranges``: :func:`failover_ranges`)."""
    parts = []
    for f in FAILOVER:
        r = ranges[f.key]
        if r["n"] == 0:
            parts.append(f"{f.label} n/a")
            continue
        lo, hi = (number(r[k], f.unit) for k in ("min", "max"))
        parts.append(f"{f.label} {lo if lo == hi else f'{lo}–{hi}'} {f.unit}" + (f" ({r['n']} of {n})" if r["n"] != n
                                                                                else ""))
    lost = ranges[FAILOVER_LOST.key]["total"]
    return (f"failovers             {n}: " + "; ".join(parts[:4]) + "\n                      " + "; ".join(parts[4:])
            + f"; acknowledged pages lost in all {lost}")


#: every figure once, in the docs table's order
FIGURES = WALL + HEADER + (MISS_SHARE,) + RUN + LATENCY + RELOAD_COUNTS + (
    RELOAD_P50, RAW_GET_P50, TCP_P50, MEMCPY_P50, FILL_P50, VERIFY_P50) + WORKERS + TTFT + TIER + (
    HOT_PAGES_HIT,) + TRACE + STORE + STORE_DISK + STORE_HOT + FAILOVER


UNIT_DECIMALS = {"MB/s": 0, "ms": 2, "%": 2, "s": 1, "req/s": 1, "/s": 1, "tok/s": 0, "×": 2, "s/s": 2,
                 "requests": 0, "pages": 0, "tokens": 0, "bytes": 0, "samples": 0, "codes": 0, "calls": 0,
                 "keys": 0, "lookups": 0, "copies": 0}
"""The decimals of a figure by its unit, where the figure does not set its own (``Figure.decimals``)."""


def decimals_of(f: Figure | None, unit: str = "") -> int | None:
    """The decimals ``f`` is shown with (``f`` None: a value in ``unit``); None: no rule, by magnitude."""
    if f is not None and f.decimals is not None:
        return f.decimals
    return UNIT_DECIMALS.get(f.unit if f is not None else unit)


def number(value: float, unit: str = "", decimals: int | None = None, *, sign: bool = False) -> str:
    """``value`` as every text output writes it: thousands separators and ``decimals`` places (None: the
    unit's, :data:`UNIT_DECIMALS`; a unit without: whole numbers as they are, else 0 places from 1,000, 2 from
    1, 4 significant digits below). A ``%`` value is a fraction (0..1) written in % (``64.50%``), its change
    (``sign``) in percentage points (``+1.25 pp``). ``sign``: a change, written ``+``/``-``; one that rounds to
    nothing is ``±0``."""
    places = UNIT_DECIMALS.get(unit) if decimals is None else decimals
    v = value * 100 if unit == "%" else value
    plus = "+" if sign else ""
    if places is None:
        a = abs(v)
        if isinstance(v, int):
            text = f"{v:{plus},}"
        elif a >= 1000:
            text = f"{v:{plus},.0f}"
        elif a >= 1:
            text = f"{v:{plus},.2f}"
        else:
            text = f"{v:{plus}.4g}"
    else:
        text = f"{v:{plus},.{places}f}"
    if sign and not any(c in "123456789" for c in text.split("e")[0]):
        text = "±0"
    if unit == "%":
        text += " pp" if sign else "%"
    return text


def show(f: Figure, value: float, *, sign: bool = False) -> str:
    """``value`` of figure ``f`` with its unit: ``4,293 MB/s``, ``1.55 ms``, ``87.50%``, ``0.62×``, ``1,792 tokens``."""
    text = number(value, f.unit, decimals_of(f), sign=sign)
    return text if f.unit == "%" else text + (f.unit if f.unit == "×" else f" {f.unit}")


def markdown_table() -> str:
    """The docs' "Figures" table (one row per figure of :data:`FIGURES`)."""
    rows = ["| figure | shown in | formula | window | unit | field |", "|---|---|---|---|---|---|"]
    for f in FIGURES:
        fields = ", ".join(f"`{x.strip()}`" for x in f.field.split(","))
        rows.append(f"| {f.name} | {f.shown} | {f.formula} | {f.window} | {f.unit} | {fields} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m kvtui.metrics.figures: the docs' table
    print(markdown_table())
