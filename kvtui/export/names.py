"""Every metric kvtui exports to Prometheus, defined once: name, type, unit, labels, help text and source.

The exporter (:mod:`kvtui.export.prometheus`) builds its families from :data:`METRICS`, the docs'
"Prometheus metrics" reference is :func:`markdown_table` (``scripts/gen_reference.py``; a test fails when
they differ) and ``tests/unit/test_export_names.py`` pins the names: **renaming one is a breaking change**
for every dashboard and alert that uses it.

Conventions (prometheus.io/docs/practices/naming): a ``kvtui_`` prefix, base units (seconds, bytes, ratios
0–1), counters end in ``_total``, histograms are in seconds (``_bucket`` / ``_sum`` / ``_count``). The
figures are the same as the summary's (:mod:`kvtui.metrics.figures` defines them): each counter's
``summary`` field names the ``kvtui run --json`` field it equals at the end of a run.

Labels: ``role`` (``decode`` or ``prefill``: the workers that do what the metric counts) and ``worker``
(``"0"``: the counters are the run's totals over every worker of the role, as the summary's; per-worker
figures are in ``--json`` ``workers`` and the Workers panel, not series of their own); ``code`` on the error counter
(a Mooncake return code by name); ``reason`` on the miss counters (``first_use``, ``evicted``, ``never_stored``,
``after_break``, ``in_flight``: :mod:`kvtui.core.misses`); ``tier`` on the tier counters and histogram
(``memory``, ``disk``: the store's tiers a page was reloaded from, exported only when the store has a disk tier;
the tiers' series add up to the whole's: :data:`kvtui.metrics.figures.TIER`). The store gauges are derived by
kvtui from the master's ``/metrics`` (rates between two scrapes, a fill ratio); kvtui never re-exports the master's own
metrics: Prometheus scrapes the master's ``/metrics`` directly.

``source`` says where a value comes from in a :class:`~kvtui.metrics.frame.Frame`: ``totals.KEY`` (scaled
by ``scale``), ``errors`` (counts by code name), ``misses`` / ``miss_tokens`` (the totals' missed pages or
their tokens, one series per reason), ``tiers.KEY`` (a tier's figure KEY in the totals or latencies, one series
per tier: :data:`kvtui.metrics.figures.TIER_TOTALS`, ``TIER_LATENCY_KEYS``), ``latency.KEY`` (a whole-session
latency snapshot, ms),
``store.KEY`` / ``workload.KEY`` / ``status.KEY`` (a panel's key; booleans are 1 or 0) or ``A / B`` (a
ratio of two such keys). ``when``: ``workload`` (only while kvtui runs a workload: not in observe mode),
``observe`` (only in observe mode), ``hot`` (while kvtui runs a workload on a store that replicates hot keys: the
totals carry the figure), ``always``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtui.metrics import figures as fig

PREFIX = "kvtui_"
ROLE, WORKER, CODE, REASON, TIER = "role", "worker", "code", "reason", "tier"
MISS_SOURCES = {"misses": "misses_", "miss_tokens": "miss_tokens_"}  # source → the totals' key prefix per reason
WORKER_LABELS = (ROLE, WORKER)
#: upper bounds of the latency histograms, seconds: kvtui's HdrHistogram buckets (×2 from 62.5 µs) up to 65.5 s
LATENCY_BUCKETS_S = tuple(0.0625e-3 * 2.0**j for j in range(21))


@dataclass(frozen=True)
class Metric:
    """One exported metric. ``name``: the exposed name (a histogram's base name); ``kind``: ``counter``,
    ``histogram`` or ``gauge``; ``unit`` in words; ``help``: the HELP line; ``role``: the ``role`` label's
    value (None: no worker labels); ``summary``: the ``kvtui run --json`` field a counter equals (a latency
    histogram's ``_count`` equals that field's ``count``)."""

    name: str
    kind: str
    unit: str
    help: str
    source: str
    role: str | None = None
    scale: float = 1.0
    summary: str | None = None
    when: str = "workload"
    default: float | None = None  # a gauge's value when its key is absent (None: no sample)

    @property
    def labels(self) -> tuple[str, ...]:
        """Label names, in order."""
        if self.source == "errors":
            return (CODE,)
        if self.source in MISS_SOURCES:
            return (REASON,)
        if self.source.startswith("tiers."):
            return (TIER,)
        return WORKER_LABELS if self.role else ()

    @property
    def family(self) -> str:
        """The name ``prometheus-client`` families take (a counter without its ``_total``)."""
        return self.name[: -len("_total")] if self.kind == "counter" else self.name


def _counter(key: str, name: str, unit: str, help: str, role: str, scale: float = 1.0,
             summary: str | None = None) -> Metric:
    return Metric(PREFIX + name, "counter", unit, help, f"totals.{key}", role, scale, summary or key)


def _latency(f: fig.Figure, role: str) -> Metric:
    return Metric(f"{PREFIX}{f.key}_latency_seconds", "histogram", "seconds",
                  f"{f.name}: {f.formula} (from kvtui's HdrHistogram, 3 significant digits)", f"latency.{f.key}", role,
                  summary=f.field)


def _tier(f: fig.Figure, name: str, kind: str = "counter", unit: str = "", scale: float = 1.0) -> Metric:
    """A figure of :data:`kvtui.metrics.figures.TIER`, one series per tier."""
    unit = unit or f.unit
    return Metric(PREFIX + name, kind, unit, f"{f.name}: {f.formula}", f"tiers.{f.key}", scale=scale,
                  summary=f"tiers.TIER.{fig.tier_field(f)}")


def _gauge(name: str, unit: str, help: str, source: str, when: str, default: float | None = None) -> Metric:
    return Metric(PREFIX + name, "gauge", unit, help, source, when=when, default=default)


METRICS: tuple[Metric, ...] = (
    _counter("requests", "requests_total", "requests", "requests finished (every request is probed by decode)",
             "decode"),
    _counter("pages_total", "pages_total", "pages", "full KV pages of the requests finished (pages that could "
             "be hit)", "decode"),
    _counter("pages_hit", "pages_hit_total", "pages", "pages reloaded from the store instead of computed",
             "decode"),
    _counter("tokens_input", "tokens_input_total", "tokens", "prompt tokens of the requests finished", "decode"),
    _counter("tokens_cacheable", "tokens_cacheable_total", "tokens", "prompt tokens in full pages (the most that "
             "could be reloaded)", "decode"),
    _counter("tokens_hit", "tokens_hit_total", "tokens", "prompt tokens whose prefill was skipped (reloaded)",
             "decode"),
    _counter("bytes_loaded", "reload_bytes_total", "bytes", "bytes loaded from the store by reloads", "decode"),
    _counter("verified_pages", "verified_pages_total", "pages",
             "reloaded pages verified (every byte, or a sample: --verify)", "decode"),
    _counter("mismatches", "mismatches_total", "pages", "reloaded pages whose bytes did not match their key",
             "decode"),
    _counter(fig.PROBE_ONLY.key, "reloads_probe_only_total", "requests", f"{fig.PROBE_ONLY.name}: "
             f"{fig.PROBE_ONLY.formula}", "decode"),
    _counter(fig.UNUSABLE.key, "reloads_unusable_total", "requests", f"{fig.UNUSABLE.name}: {fig.UNUSABLE.formula}",
             "decode"),
    _counter("read_ms_total", "read_seconds_total", "seconds", "time spent in store reads (probe excluded): "
             "reload_bytes_total over it is reuse read (busy)", "decode", 1e-3),
    _counter("pages_published", "pages_published_total", "pages", "pages this writer stored", "prefill"),
    _counter("pages_already_present", "pages_already_present_total", "pages", "pages a peer had stored "
             "already (put-if-absent found them)", "prefill"),
    _counter("pages_failed", "pages_failed_total", "pages", "pages whose put failed (in the error counter by "
             "code)", "prefill"),
    _counter("bytes_written", "publish_bytes_total", "bytes", "bytes newly written to the store", "prefill"),
    _counter("put_ms_total", "put_seconds_total", "seconds", "time spent in puts (probe and page computation "
             "excluded): publish_bytes_total over it is publish write (busy)", "prefill", 1e-3),
    Metric(PREFIX + "misses_total", "counter", "pages", f"{fig.MISS_PAGES.name}: full pages not reloaded, each "
           "with one reason (first use, evicted, never stored, after a break, in flight)", "misses",
           summary="misses"),
    Metric(PREFIX + "missed_tokens_total", "counter", "tokens", f"{fig.MISS_TOKENS.name}: "
           f"{fig.MISS_TOKENS.formula}; over kvtui_tokens_input_total it is the {fig.MISS_SHARE.name}",
           "miss_tokens", summary="misses"),
    Metric(PREFIX + "store_errors_total", "counter", "calls", "failed store calls by Mooncake return code "
           "name (the decode and prefill calls of each request added up)", "errors", summary="errors"),
    _latency(fig.RELOAD_LATENCY, "decode"),
    _latency(fig.PUBLISH_LATENCY, "prefill"),
    _latency(fig.PROBE_LATENCY, "decode"),
    _tier(fig.TIER_PAGES_HIT, "tier_pages_hit_total"),
    _tier(fig.TIER_TOKENS_HIT, "tier_tokens_hit_total"),
    _tier(fig.TIER_BYTES, "tier_reload_bytes_total"),
    _tier(fig.TIER_READ_BUSY, "tier_read_seconds_total", unit="seconds", scale=1e-3),
    _tier(fig.TIER_RELOAD, "tier_reload_latency_seconds", "histogram", "seconds"),
    Metric(PREFIX + "pages_hit_replicated_total", "counter", "pages", f"{fig.HOT_PAGES_HIT.name}: "
           f"{fig.HOT_PAGES_HIT.formula}", f"totals.{fig.HOT_PAGES_HIT.key}", "decode",
           summary=fig.HOT_PAGES_HIT.key, when="hot"),
    _gauge("store_up", "0 or 1", "1 when the master's /metrics answered at kvtui's last scrape (every ~1 s)",
           "store.up", "always"),
    _gauge("store_fill_ratio", "ratio", "bytes allocated ÷ capacity of the store's segments, from the master's "
           "/metrics (the master evicts above its high watermark, 0.9 by default)",
           "store.used_bytes / store.capacity_bytes", "always"),
    _gauge("store_disk_fill_ratio", "ratio", "bytes of the disk tier's files ÷ its capacity (a store with a disk "
           "tier whose capacity kvtui knows: --disk-size, or the master's cap), from the master's /metrics",
           "store.disk_used_bytes / store.disk_capacity_bytes", "always"),
    _gauge("store_puts_per_second", "puts/s", "put requests (PutStart plus BatchPutStart items) per second "
           "between kvtui's last two scrapes of the master", "store.put_rps", "always"),
    _gauge("store_gets_per_second", "gets/s", "get requests (GetReplicaList plus BatchGetReplicaList items) per "
           "second between kvtui's last two scrapes of the master", "store.get_rps", "always"),
    _gauge("store_evictions_per_second", "keys/s", "keys evicted per second between the last two scrapes "
           "(observe mode)", "store.evict_kps", "observe"),
    _gauge("store_eviction_failures_per_second", "evictions/s", "eviction attempts that evicted nothing, per "
           "second (attempted − successful evictions; observe mode)", "store.evict_fail_ps", "observe"),
    _gauge("store_alloc_failures_per_second", "puts/s", "PutStart allocation failures (NO_AVAILABLE_HANDLE) per "
           "second (observe mode)", "store.alloc_fail_ps", "observe"),
    _gauge("store_get_hit_ratio", "ratio", "store-observed hit ratio: GetReplicaList calls that found a complete "
           "replica ÷ all of them, between the last two scrapes (observe mode)", "store.get_hit_ratio", "observe"),
    _gauge("master_outage", "0 or 1", "1 while the master does not answer (kvtui holds dispatch; observe "
           "mode: its /metrics does not answer)", "status.outage", "always", 0.0),
    Metric(PREFIX + "failovers_total", "counter", "failovers", "failovers of kvtui's HA cluster measured so far "
           "(--ha: K in the monitor, a soak's leader-kill, leader-hang and etcd-outage; `--json` `failovers.n` when "
           "any)", "status.failovers"),
    Metric(PREFIX + "failover_pages_lost_total", "counter", "pages", f"{fig.FAILOVER_LOST.name}, every failover "
           f"added up: {fig.FAILOVER_LOST.formula}", "status.failover_pages_lost"),
    *(_gauge(f"failover_last_{f.key.removesuffix('_s')}_seconds", "seconds", f"the last failover: {f.name}: "
             f"{f.formula}", f"status.failover_{f.key}", "workload") for f in fig.FAILOVER if f.unit == "s"),
    _gauge("workload_paused", "0 or 1", "1 while the workload is paused", "status.paused", "workload", 0.0),
    _gauge("workload_overlap_ratio", "ratio", "synthetic workload: shared prefix of each prompt (0–1)",
           "workload.overlap", "workload"),
    _gauge("workload_pool_prompts", "prompts", "synthetic workload: shared prefixes in the pool",
           "workload.pool", "workload"),
    _gauge("workload_rate_requests_per_second", "req/s", "synthetic workload: arrival rate asked for (0: "
           "closed loop)", "workload.rate", "workload"),
    _gauge("workload_prompt_tokens", "tokens", "synthetic workload: mean prompt length", "workload.prompt_tokens",
           "workload"),
    _gauge("trace_rows", "rows", "trace replay: rows in the trace", "workload.total", "workload"),
    _gauge("trace_rows_done", "rows", "trace replay: rows replayed so far", "workload.done", "workload"),
)

BY_NAME = {m.name: m for m in METRICS}


def sample_names() -> set[str]:
    """Every sample name the exporter can expose (a histogram's ``_bucket``, ``_sum`` and ``_count``)."""
    out = set()
    for m in METRICS:
        out |= {f"{m.name}{s}" for s in ("_bucket", "_sum", "_count")} if m.kind == "histogram" else {m.name}
    return out


def markdown_table() -> str:
    """The docs' table of exported metrics (one row per :data:`METRICS` entry)."""
    rows = ["| metric | type | unit | labels | what it counts | `--json` field |", "|---|---|---|---|---|---|"]
    for m in METRICS:
        labels = ", ".join(f"`{x}`" for x in m.labels) or "—"
        if m.role:
            labels += f" (`role=\"{m.role}\"`)"
        when = {"observe": " Observe mode only.", "hot": " Only with --replicate-hot (or once a hit had a second "
                "memory replica)."}.get(m.when, "")
        field = f"`{m.summary}`" + (" (`count`)" if m.kind == "histogram" else "") if m.summary else "—"
        rows.append(f"| `{m.name}` | {m.kind} | {m.unit} | {labels} | {m.help}.{when} | {field} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m kvtui.export.names: the docs' table
    print(markdown_table())
