"""``kvtui bench``: reproduce the demo card's figures on this machine, with same-run baselines.

The benches, each measured in :mod:`kvtui.bench` (this module parses, validates and prints):

- default (:mod:`kvtui.bench.reuse`, seed layout unless overridden): the prefill worker publishes a
  2,048-token prompt, the decode worker reloads a second request sharing its first 1,792 tokens
  ``--iterations`` times (7 of 8 pages); against a plain ``batch_get_into`` of the same keys, one loopback
  TCP stream and memcpy of the same bytes, with 1..N read streams and with the segment co-located with decode;
- ``--trace NAME|FILE`` (:mod:`kvtui.bench.trace`): a trace's replay rate through the engine vs a bare loop;
- ``--ui`` (:mod:`kvtui.bench.ui`): the workload rate with the live monitor vs without it;
- ``--tcp-sweep`` (:mod:`kvtui.bench.tcp_sweep`): remote reloads under a few Mooncake TCP settings;
- ``--disk`` (:mod:`kvtui.bench.disk`): reloads from the disk tier against a raw read of the same bytes from its
  files, a reload from DRAM and recomputing, with the page cache warm and dropped;
- ``--link RATE`` (:mod:`kvtui.bench.link`): reloads across an emulated link against its rate, and with
  ``--decode-workers M,…`` (:mod:`kvtui.bench.aggregate`) M readers at once against M × the rate.

MB/s are 10^6 bytes per second.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvtui.bench.disk import DISK_DRAMS, DRAM_PROMPTS, default_dram_bytes
from kvtui.bench.engines import say
from kvtui.bench.reuse import ReuseCase
from kvtui.bench.targets import TARGETS
from kvtui.commands.output import write_json_atomic
from kvtui.config.cluster import add_verify_argument, link_option, store_size, verify_from_args
from kvtui.config.estimate import add_estimate_arguments, estimate_flags_given, estimator_from_args
from kvtui.config.layout import add_page_arguments, layout_from_args
from kvtui.config.paths import check_outputs, path_arg
from kvtui.config.screen import check_refresh_hz
from kvtui.config.workload import add_synthesis_arguments, read_trace_rows, synthesis_description, trace_synthesis
from kvtui.core.defaults import DEFAULT_HZ, DEFAULT_STORE_SIZE_TEXT, MAX_HZ, MIN_SEGMENT_BYTES
from kvtui.core.errors import KvtuiError, bad_value
from kvtui.core.text import plural
from kvtui.core.topology import MAX_WORKERS
from kvtui.core.traces import trace_arg
from workload import DEFAULT_BLOCK_TOKENS

if TYPE_CHECKING:
    from kvtui.bench.aggregate import AggregateFigures
    from kvtui.bench.disk import DiskCase, DiskFigures
    from kvtui.bench.engines import BenchEngines
    from kvtui.bench.link import LinkFigures
    from kvtui.bench.rate import RateMode, RequestRate
    from kvtui.bench.reuse import DemoCard, ReuseFigures, Stats, TcpPathFigures
    from kvtui.bench.tcp_sweep import TcpSweepFigures
    from kvtui.bench.trace import TraceFigures
    from kvtui.bench.ui import UiFigures
    from kvtui.core.layout import PageLayout
    from kvtui.metrics.ttft import TtftEstimator
    from kvtui.mooncake.hosts import LinkSpec
    from workload import TraceProblem, TraceRow

    BenchFigures = (ReuseFigures | TraceFigures | UiFigures | TcpSweepFigures | LinkFigures | AggregateFigures
                    | DiskFigures)
    """What one bench measured: its ``--json``."""

_CASE = ReuseCase()  # the default flags


MODE_FLAGS = (  # flag, attribute, default, the modes it applies to (reuse: the default bench)
    ("--prompt-tokens", "prompt_tokens", _CASE.prompt_tokens, ("reuse", "tcp-sweep", "link", "disk")),
    ("--shared-tokens", "shared_tokens", _CASE.shared_tokens, ("reuse", "tcp-sweep", "link", "disk")),
    ("--iterations", "iterations", _CASE.iterations, ("reuse", "tcp-sweep", "link", "disk")),
    ("--max-streams", "max_streams", _CASE.max_streams, ("reuse",)),
    ("--rounds", "rounds", 3, ("trace", "ui", "tcp-sweep")),
    ("--seconds", "seconds", 8.0, ("ui",)),
    ("--refresh-hz", "refresh_hz", DEFAULT_HZ, ("ui",)),
    ("--trace-block-tokens", "trace_block_tokens", DEFAULT_BLOCK_TOKENS, ("trace",)),
    ("--disk-path", "disk_path", None, ("disk",)),
)
"""The flags that only some benches use, with their defaults: one given to another bench is refused."""
MAX_ROUNDS = 100  # --rounds: a bound, so that a mistyped count cannot start a bench of hours or days


def _mode_of(args: argparse.Namespace) -> str:
    """``reuse`` (the default bench), ``trace``, ``ui``, ``tcp-sweep``, ``link`` or ``disk``."""
    return ("trace" if args.trace else "ui" if args.ui else "tcp-sweep" if args.tcp_sweep else
            "link" if args.link else "disk" if args.disk else "reuse")


@dataclass(frozen=True)
class BenchFlags:
    """The bench chosen (``mode``: ``reuse``, ``trace``, ``ui``, ``tcp-sweep``, ``link`` or ``disk``) and the
    values of :data:`MODE_FLAGS`, each the flag's or its default."""

    mode: str
    prompt_tokens: int
    shared_tokens: int
    iterations: int
    max_streams: int
    rounds: int
    seconds: float
    refresh_hz: float
    trace_block_tokens: int
    disk_path: str | None


def bench_flags(args: argparse.Namespace) -> BenchFlags:
    """The :class:`BenchFlags` of the command line; ``KvtuiError`` for a flag of :data:`MODE_FLAGS` given to a
    bench that does not use it (``--seconds applies to bench --ui only``)."""
    mode = _mode_of(args)
    values: dict[str, Any] = {}  # the flags' values as argparse typed them, else the defaults
    for flag, attr, default, modes in MODE_FLAGS:
        given = vars(args)[attr]
        if given is not None and mode not in modes:
            names = " / ".join("the default bench" if m == "reuse" else f"bench --{m}" for m in modes)
            raise KvtuiError(f"{flag} applies to {names} only")
        values[attr] = default if given is None else given
    return BenchFlags(mode=mode, **values)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``bench`` subcommand."""
    p = subparsers.add_parser(
        "bench", help="reproduce the demo's reuse figures with same-run baselines",
        description="Publish a prompt's KV pages with the prefill worker, reload a second request that shares "
                    "its prefix with the decode worker, and report hit rate, reload latency, reuse/publish MB/s "
                    "and ratios against raw Mooncake reads, one loopback TCP stream and memcpy, all measured "
                    "in this run on this machine.",
        epilog="Targets (each ratio's line in the table says met or NOT met; the exit code ignores them): "
               + "; ".join(f"{name} ≥ {value:g}" for name, value in TARGETS.items())
               + ". See the docs: Benchmarks, for where each stands on the machines measured.")
    p.add_argument("--prompt-tokens", type=int, default=None, metavar="TOKENS",
                   help=f"tokens of the published prompt (default {_CASE.prompt_tokens})")
    p.add_argument("--shared-tokens", type=int, default=None, metavar="TOKENS",
                   help=f"tokens the second request shares with the first (default {_CASE.shared_tokens})")
    p.add_argument("--iterations", type=int, default=None, metavar="N",
                   help=f"reloads to time (default {_CASE.iterations})")
    p.add_argument("--store-size", default=None, metavar="BYTES",
                   help=f"embedded store segment, bytes with units (at least {MIN_SEGMENT_BYTES >> 20}MiB; default "
                        f"{DEFAULT_STORE_SIZE_TEXT}; --disk: its DRAM segment, default {DRAM_PROMPTS} prompts' pages)")
    p.add_argument("--max-streams", type=int, default=None, metavar="N",
                   help=f"try reloads split across 1..N concurrent batch_get_into calls (default {_CASE.max_streams})")
    p.add_argument("--json", type=path_arg, metavar="PATH",
                   help="write every figure as JSON to PATH (- : to standard output, the table then goes to "
                        "standard error)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--trace", type=trace_arg, metavar="NAME|FILE",
                   help="instead: replay this FAST'25 trace (a shipped one by name, see `kvtui traces`, or a file) one "
                        "request at a time through the engine, a bare loop of the same store calls and those calls "
                        "split over two processes, and report the replay rates, engine/bare "
                        f"(target ≥ {TARGETS['engine_vs_bare_loop']:g}) split into the hand-off and kvtui's own work, "
                        "and each side's CPU per request (use a small layout, e.g. --layers 1 --kv-heads 1 "
                        "--head-dim 1 --elem-bytes 1 --page-tokens 512)")
    mode.add_argument("--ui", action="store_true",
                   help="instead: the workload rate with the live monitor (headless) against the same scenario "
                        f"without it (target ≥ {TARGETS['monitor_vs_headless']:g}), and the monitor process's CPU "
                        "while the workload is paused "
                        "(use a small layout, e.g. --layout tiny)")
    mode.add_argument("--tcp-sweep", action="store_true",
                   help="instead: remote reload throughput (segment on the store node, reads over loopback TCP) "
                        "under each of a few Mooncake TCP settings (MC_TCP_SLICE_SIZE in bytes, "
                        "MC_TCP_LANES_PER_PEER), each on a fresh cluster, --rounds times in alternating order, "
                        "against one loopback TCP stream of the same bytes")
    mode.add_argument("--link", metavar="RATE[,DELAY]",
                   help="instead: reload throughput across emulated hosts (--hosts auto) whose links are shaped to "
                        "RATE bit/s with tc (1gbit, 500mbit; a one-way DELAY such as 200us needs the kernel's "
                        "netem), against that rate: ratios.reload_vs_link (needs root)")
    mode.add_argument("--disk", action="store_true",
                   help="instead: reloads of a prefix that only the store's disk tier holds (a small DRAM segment, "
                        f"a disk tier of {DISK_DRAMS}× it) against a raw read of the same bytes from the tier's files "
                        "and a reload of as many pages from DRAM, interleaved, with the page cache warm and then "
                        "cold (the tier's files evicted from it before each disk sample: POSIX_FADV_DONTNEED, or "
                        "/proc/sys/vm/drop_caches as root where that leaves pages; else warm only), and against "
                        "recomputing them (the TTFT estimate): ratios.disk_reload_vs_raw_read, "
                        "disk_vs_memory_reload, cold_… and …_vs_recompute")
    p.add_argument("--disk-path", default=None, metavar="DIR",
                   help="--disk: the folder the disk tier goes under, i.e. the disk measured (an existing folder; "
                        "kvtui makes a kvtui-disk-* folder in it and removes it at the end; default: the temporary "
                        "folder)")
    p.add_argument("--decode-workers", metavar="M[,M…]", default=None,
                   help=f"--link: instead of one reader, M decode workers reloading at once, each on its own host, "
                        f"with M prefill workers holding the segments (1-{MAX_WORKERS} each, e.g. 1,2,4): aggregate "
                        "reload MB/s against M × the link's rate, ratios.aggregate_vs_links")
    p.add_argument("--seconds", type=float, default=None, metavar="SECONDS",
                   help="--ui: length of each phase (default 8)")
    p.add_argument("--refresh-hz", type=float, default=None, metavar="HZ",
                   help=f"--ui: the monitor's screen updates per second, ≤ {MAX_HZ:g} (default {DEFAULT_HZ:g}, "
                        "as kvtui watch)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="--trace / --ui / --tcp-sweep: alternate the sides N times (ABBA order; --trace's three: ABC "
                        "CBA), each from an empty store; the ratio judged against the target is the median of the "
                        "rounds' ratios, each taken between runs back to back, so a slow spell of the machine hits "
                        "both sides of a ratio (the ratio of each side's best run is printed too; "
                        f"1-{MAX_ROUNDS}, default 3)")
    p.add_argument("--trace-block-tokens", type=int, default=None, metavar="TOKENS",
                   help=f"tokens per trace hash id (default {DEFAULT_BLOCK_TOKENS})")
    add_verify_argument(p, "; every bench's decode worker checks its pages so, except the default bench's "
                           "request-rate step, which alternates both and reports each")
    add_synthesis_arguments(p, arrival_times=False)
    add_page_arguments(p, "seed")
    add_estimate_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Validate, run the chosen bench, print its table, write ``--json``; exit 1 if any page failed
    verification (``--ui``: 0)."""
    from kvtui.bench.engines import BenchEngines
    from kvtui.launch import isolate, start_engine

    pages_of = layout_from_args(args)
    layout = pages_of.layout
    estimator = estimator_from_args(args, pages_of)
    given = estimate_flags_given(args)
    b = bench_flags(args)
    if given and b.mode not in ("reuse", "disk"):
        raise KvtuiError(f"{given[0]} sets the recompute estimate of the default bench and --disk; --{b.mode} has "
                         "none")
    store_bytes = store_size(args.store_size or DEFAULT_STORE_SIZE_TEXT)
    for flag, value in (("--iterations", b.iterations), ("--max-streams", b.max_streams)):
        if value < 1:
            raise bad_value(flag, "at least 1", value)
    link = link_option(args.link) if args.link else None
    counts = worker_counts(args.decode_workers) if args.decode_workers is not None else []
    if counts and link is None:
        raise KvtuiError("--decode-workers measures aggregate reloads across emulated links: add --link RATE")
    disk = None
    if b.mode in ("reuse", "tcp-sweep", "link", "disk"):
        if b.prompt_tokens < layout.page_tokens:
            raise bad_value("--prompt-tokens", f"at least one page ({layout.page_tokens} tokens)", b.prompt_tokens)
        least = layout.page_tokens if b.mode == "disk" else 1  # (--disk: a prefix of one page at least)
        if not (least <= b.shared_tokens <= b.prompt_tokens):
            raise bad_value("--shared-tokens", f"within {least}-{b.prompt_tokens} (--prompt-tokens)", b.shared_tokens)
        pages = b.prompt_tokens // layout.page_tokens
        if b.mode == "disk":
            if args.store_size is None:
                store_bytes = default_dram_bytes(pages * layout.page_bytes, MIN_SEGMENT_BYTES)
            disk = disk_case(b, store_bytes)
        if pages * layout.page_bytes * 2 > store_bytes:
            raise KvtuiError(f"the store ({store_bytes} bytes) cannot hold {pages} pages of {layout.page_bytes} "
                             "bytes twice; raise --store-size")
    check_outputs(((args.json, "--json"),))
    if args.trace_speedup is not None:  # (every bench: none of them keeps arrival times)
        raise KvtuiError("--trace-speedup changes when trace rows arrive (kvtui run --trace), and no bench keeps "
                         "arrival times (bench --trace replays one request after another as fast as it can): leave "
                         "it out")
    rows: list[TraceRow] = []
    problems: list[TraceProblem] = []
    if args.trace:
        if b.trace_block_tokens < 1:
            raise KvtuiError(f"--trace-block-tokens must be at least 1, got {b.trace_block_tokens}")
        rows, problems = read_trace_rows(args.trace, b.trace_block_tokens, page_tokens=layout.page_tokens,
                                         synthesis=trace_synthesis(args))
    synthesis = synthesis_description(args)  # refuses a synthesis flag without --trace
    if b.mode != "reuse" and not 1 <= b.rounds <= MAX_ROUNDS:
        raise bad_value("--rounds", f"within 1-{MAX_ROUNDS}", b.rounds)
    if b.mode == "ui":
        if b.seconds <= 0:
            raise bad_value("--seconds", "positive", b.seconds)
        check_refresh_hz(b.refresh_hz)
    verify = verify_from_args(args)
    engines = BenchEngines(model=pages_of.model, scheme=pages_of.scheme, namespace=pages_of.key_prefix,
                           store_bytes=store_bytes, start=start_engine, verify=verify)

    say(f"network: {isolate('on', hosts=True) if link else isolate('auto')}")
    try:
        out, text, code = _measure(b, args.trace, engines, layout, estimator, link, counts, rows, problems, disk)
    except Exception as exc:
        from kvtui.bench.bare import LoopError
        from kvtui.engine.workers import WorkerError
        from kvtui.mooncake.client import StoreError
        from kvtui.mooncake.cluster import ClusterError

        if not isinstance(exc, (LoopError, ClusterError, StoreError, WorkerError)):
            raise
        # a process the bench needs died or its store failed: one line, as `kvtui run` says it (its logs are
        # named on stderr by the cluster's teardown)
        raise KvtuiError(f"bench stopped: {(str(exc).splitlines() or [type(exc).__name__])[0]}") from None
    if "synthesis" in synthesis:
        out["synthesis"] = synthesis["synthesis"]
    out["verify"] = verify  # an input: `kvtui compare` says when two runs' modes differ
    if b.mode != "reuse":  # (the reuse table says it in its first line)
        from kvtui.core.verify import checked

        text = f"kvtui bench: loaded pages checked {checked(verify)}\n{text}"
    if b.mode in ("trace", "ui", "tcp-sweep"):
        out["round_count"] = b.rounds  # an input: `kvtui compare` says when two runs' counts differ
    print(text, file=sys.stderr if args.json == "-" else sys.stdout)  # (--json -: standard output is the JSON)
    if args.json:
        write_json_atomic(args.json, out)
    return code


def disk_case(b: BenchFlags, dram_bytes: int) -> DiskCase:
    """The :class:`~kvtui.bench.disk.DiskCase` of ``bench --disk`` with a DRAM segment of ``dram_bytes``;
    ``KvtuiError`` for a ``--disk-path`` that is no folder or has less free space than the disk tier."""
    from kvtui.bench.disk import DiskCase
    from kvtui.config.tiers import disk_room
    from kvtui.core.units import format_bytes

    case = DiskCase(b.prompt_tokens, b.shared_tokens, b.iterations, dram_bytes, DISK_DRAMS * dram_bytes, b.disk_path)
    where, free = disk_room(b.disk_path)
    if case.disk_bytes > free:
        raise KvtuiError(f"bench --disk makes a disk tier of {format_bytes(case.disk_bytes)} ({DISK_DRAMS}× its DRAM "
                         f"segment) and {where} has {format_bytes(free)} free: choose a smaller --store-size or "
                         "another --disk-path")
    return case


def _measure(b: BenchFlags, trace: str | None, engines: BenchEngines, layout: PageLayout,
             estimator: TtftEstimator | None, link: LinkSpec | None, counts: list[int], rows: list[TraceRow],
             problems: list[TraceProblem], disk: DiskCase | None = None) -> tuple[BenchFigures, str, int]:
    """Run the bench ``b`` names (``trace``: the ``--trace`` given): ``(its --json figures, its table, the exit
    code)`` (1 when a loaded page failed verification). Raises what the bench's engines, loops and store
    raise."""
    if b.mode == "trace":
        from kvtui.bench.trace import format_trace, measure_trace
        from kvtui.core.traces import resolve_trace, trace_label
        from workload import skipped_count, skipped_rows_text

        assert trace is not None  # the trace bench is the one --trace chooses
        if problems:  # as `kvtui run` says it; both sides replay the same good rows
            say(skipped_rows_text(problems))
        traced = measure_trace(engines, layout, resolve_trace(trace), rows, b.trace_block_tokens, b.rounds,
                               skipped_count(problems), label=trace_label(trace))
        return traced, format_trace(traced), 0 if traced["engine"]["mismatches"] == 0 else 1
    if b.mode == "tcp-sweep":
        from kvtui.bench.tcp_sweep import format_tcp_sweep, measure_tcp_sweep

        swept = measure_tcp_sweep(engines, layout, b.prompt_tokens, b.shared_tokens, b.iterations, b.rounds)
        return swept, format_tcp_sweep(swept), 0 if swept["verified"] else 1
    if link is not None and counts:
        from kvtui.bench.aggregate import format_aggregate, measure_aggregate

        aggregate = measure_aggregate(engines, layout, link, counts, b.prompt_tokens, b.shared_tokens, b.iterations)
        return aggregate, format_aggregate(aggregate), 0 if aggregate["verified"] else 1
    if link is not None:
        from kvtui.bench.link import format_link, measure_link

        linked = measure_link(engines, layout, link, b.prompt_tokens, b.shared_tokens, b.iterations)
        return linked, format_link(linked), 0 if linked["verified"] else 1
    if disk is not None:
        from kvtui.bench.disk import format_disk, measure_disk

        measured = measure_disk(engines, layout, disk, estimator)
        return measured, format_disk(measured), 0 if measured["verified"] else 1
    if b.mode == "ui":
        from kvtui.bench.ui import measure_ui

        ui = measure_ui(engines, layout, b.seconds, b.rounds, b.refresh_hz)
        return ui, format_ui(ui), 0
    from kvtui.bench.reuse import measure_reuse

    reuse = measure_reuse(engines, layout, ReuseCase(b.prompt_tokens, b.shared_tokens, b.iterations, b.max_streams),
                          estimator)
    return reuse, format_bench(reuse), 0 if reuse["verified"] else 1


def _of(part: int, whole: int, unit: str = "") -> str:
    """``1,792 of 2,048 tokens``."""
    return f"{part:,} of {whole:,}" + (f" {unit}" if unit else "")


_LABEL = 28  # the sections' label column
_CARD_RUN = 36  # the demo card section's: this run's column (the card's beside it)


def _card_rows(o: ReuseFigures, card: DemoCard | None) -> list[tuple[str, str, str]]:
    """The figures the demo card has too: ``(label, this run's, the card's)``, the card's converted to MB/s
    (its figures when ``card`` is empty: "")."""
    from kvtui.metrics import figures as fig

    r = o["reload_ms"]
    mb = 2**20 / 1e6
    tiny = o["tiny"]
    shown: Mapping[str, Any] = card or {"tokens_skipped": 0, "tokens_requested": 0, "pages_hit": 0, "pages_total": 1,
                                        "reload_ms_p50": 0, "reuse_read_MiBps_p50": 0, "publish_write_MiBps": 0}
    rows = [
        (fig.TOKENS_HIT.label, _of(o["tokens_skipped"], o["tokens_requested"], "tokens"),
         _of(shown["tokens_skipped"], shown["tokens_requested"])),
        (fig.RELOAD_HIT_RATE.label, f"{fig.show(fig.RELOAD_HIT_RATE, o['hit_rate'])} "
                                    f"({_of(o['pages_hit'], o['pages_total'], 'pages')})",
         f"{fig.show(fig.RELOAD_HIT_RATE, shown['pages_hit'] / shown['pages_total'])} "
         f"({_of(shown['pages_hit'], shown['pages_total'])})"),
        (f"{fig.RELOAD_LATENCY.name} p50", fig.show(fig.RELOAD_LATENCY, r["p50"]),
         fig.show(fig.RELOAD_LATENCY, shown["reload_ms_p50"])),
        (fig.RELOAD_P50.label, f"{fig.show(fig.RELOAD_P50, o['reuse_read_MBps_p50'])} (1 stream, p50)",
         f"{fig.show(fig.RELOAD_P50, shown['reuse_read_MiBps_p50'] * mb)} "
         f"(its {shown['reuse_read_MiBps_p50']:,.0f} MiB/s)"),
        (fig.PUBLISH_BUSY.name, f"{fig.show(fig.PUBLISH_BUSY, o['publish_write_MBps'])} "
                                f"(p50 of {plural(o.get('publish_runs', 1), 'publish', 'publishes')})",
         f"{fig.show(fig.PUBLISH_BUSY, shown['publish_write_MiBps'] * mb)} "
         f"(its {shown['publish_write_MiBps']:,.0f} MiB/s)"),
        ("byte-exact round-trip", "verified" if o["verified"] else "MISMATCH", "verified"),
        ("tiny layout (PR example)", f"{_of(tiny['pages_hit'], tiny['pages_total'], 'pages')} hit, "
                                     f"{'verified' if tiny['verified'] else 'MISMATCH'}", "3 of 4, verified"),
    ]
    return rows if shown.get("machine") else [(k, v, "") for k, v, _ in rows]


def _reload_rows(o: ReuseFigures) -> list[tuple[str, str]]:
    """The decode worker's reloads: latency, throughput by streams, the probe's and the read's shares, verify."""
    from kvtui.metrics import figures as fig

    r, b = o["reload_ms"], o["baselines"]
    ms = fig.RELOAD_LATENCY
    rows = [
        ("workers' store clients", f"{o.get('worker_client', 'real')} (see the Legend)"),
        (ms.name, f"min {fig.number(r['min'], 'ms')} · p50 {fig.number(r['p50'], 'ms')} · mean "
                  f"{fig.number(r['mean'], 'ms')} · max {fig.show(ms, r['max'])} for "
                  f"{o['bytes_reloaded'] / 2**20:,.1f} MiB ({plural(o['pages_hit'], 'page')}), 1 stream"),
        (fig.RELOAD_P50.label, f"{fig.show(fig.RELOAD_P50, o['reuse_read_MBps_p50'])} p50 with 1 stream; best "
                               f"{fig.show(fig.RELOAD_P50, o['best_reuse_read_MBps_p50'])} with "
                               f"{plural(int(o['best_read_streams']), 'stream')}"),
        ("reload split in streams", " · ".join(f"{n}: {fig.number(f['MBps_p50'], 'MB/s')}"
                                               for n, f in o["read_streams"].items()) + " MB/s"),
    ]
    probe, read = fig.RELOAD_PROBE_P50, fig.RELOAD_READ_P50
    by_key: Mapping[str, Any] = o  # (the figures looked up by their key in kvtui.metrics.figures)
    if by_key.get(probe.key) is not None and by_key.get(read.key):
        raw = b.get("raw_get_MBps_p50")
        rows += [(probe.label, fig.show(probe, by_key[probe.key])),
                 (read.label, fig.show(read, by_key[read.key])
                  + (f" ({fig.number(by_key[read.key] / raw, '×')}× "
                     f"{fig.RAW_GET_P50.label.removeprefix('baseline ')})" if raw else ""))]
    rows.append((fig.VERIFY_MS.label, f"p50 {fig.show(fig.VERIFY_MS, o['verify_ms_p50'])}, outside the reload time"))
    return rows


def _baseline_rows(o: ReuseFigures) -> list[tuple[str, str]]:
    """The same-run baselines: raw reads, one loopback TCP stream, memcpy, page fill and verify, the memory bus."""
    from kvtui.metrics import figures as fig

    b = o["baselines"]
    rows = [
        (fig.RAW_GET_P50.label, f"{fig.show(fig.RAW_GET_P50, b['raw_get_MBps_p50'])}: same keys, same process, no "
                                "connector, alternating with the reloads"),
        (fig.TCP_P50.label, f"{fig.show(fig.TCP_P50, b['loopback_tcp_MBps'])}: one stream, same bytes"),
        ("co-located reload", f"{fig.show(fig.RELOAD_P50, b['colocated_reload_MBps_p50'])}: the segment co-located "
                              f"with decode, each reload followed by a {fig.MEMCPY_P50.label} of the same bytes"),
        (fig.MEMCPY_P50.label, fig.show(fig.MEMCPY_P50, b["memcpy_MBps"])),
    ]
    c = b.get("content")
    if c:
        rows.append((f"{fig.VERIFY_P50.label} / {fig.FILL_P50.label.removeprefix('page ')}",
                     f"{fig.show(fig.VERIFY_P50, c['verify_MBps'])} / {fig.show(fig.FILL_P50, c['fill_MBps'])}; "
                     f"{fig.MEMCPY_P50.label} {fig.show(fig.MEMCPY_P50, c['memcpy_MBps'])}, interleaved"))
    bus = b.get("memory_bus")
    if bus:
        rows.append(("memory bus", f"two copies at once {fig.show(fig.MEMCPY_P50, bus['two_MBps'])} = "
                                   f"{fig.number(bus['two_vs_one'], '×')} × one copy "
                                   f"({fig.show(fig.MEMCPY_P50, bus['one_MBps'])}; near 1: one copy takes the "
                                   "whole bus)"))
    return rows


def _rate_rows(rr: RequestRate) -> list[tuple[str, str]]:
    """The request-rate step: the closed loop's rate against the rate its store calls alone allow, under
    ``--verify full`` and, where measured, ``--verify sampled``."""
    rows = []
    for f in (rr, rr.get("sampled")):
        if f:
            rows += _rate_mode_rows(f, f"--verify {f.get('verify', 'full')}" if "sampled" in rr else "")
    return rows


def _rate_mode_rows(rr: RateMode, mode: str) -> list[tuple[str, str]]:
    """One mode's rows of the request-rate step (``mode``: its label, "" for a result of one mode only)."""
    from kvtui.metrics import figures as fig

    ms = "ms"
    by_key: Mapping[str, Any] = rr
    passes = [f"{f.label} {fig.show(f, by_key[key])}"
              for f, key in ((fig.RATE_VERIFY, "verify_MBps"), (fig.RATE_FILL, "fill_MBps")) if by_key.get(key)]
    split = (f" (verify {fig.number(rr['verify_ms_mean'], ms)} + fill {fig.number(rr['fill_ms_mean'], ms)})"
             if "verify_ms_mean" in rr else "")
    rows = [
        (mode or "closed-loop rate", f"{fig.number(rr['requests_per_s'], 'req/s')} req/s"
                                     + (" closed loop" if mode else "")),
        ("store-bound rate", f"{fig.number(rr['store_bound_rps'], 'req/s')} req/s: store calls take "
                             f"{fig.number(rr['store_ms_mean'], ms)} of {fig.number(rr['wall_ms_per_request'], ms)} "
                             "ms per request"),
        ("verify + fill", f"{fig.number(rr['verify_and_fill_ms_mean'], ms)} ms per request{split}"
                          + (f"; in the run's requests, per-page costs included: {', '.join(passes)}" if passes
                             else "")),
    ]
    if "passes_ceiling" in rr:
        rows.append(("with only those two passes", f"{fig.number(rr['passes_ceiling'], '×')}× the store-bound rate, "
                                                   "were they kvtui's only work beside the store calls"
                     + (f" ({fig.number(rr['passes_bound_rps'], 'req/s')} req/s)" if "passes_bound_rps" in rr
                        else "")))
    return [(k if i == 0 or not mode else f"  {k}", v) for i, (k, v) in enumerate(rows)]


def _tcp_rows(tp: TcpPathFigures) -> list[tuple[str, str]]:
    """The TCP path: real clients, reads across loopback TCP."""
    from kvtui.metrics import figures as fig

    return [(fig.RELOAD_P50.label, f"{fig.show(fig.RELOAD_P50, tp['reuse_read_MBps_p50'])} p50 (reload latency p50 "
                                   f"{fig.show(fig.RELOAD_LATENCY, tp['reload_ms']['p50'])}), "
                                   f"{'verified' if tp['verified'] else 'MISMATCH'}"),
            (fig.RAW_GET_P50.label, fig.show(fig.RAW_GET_P50, tp["raw_get_MBps_p50"]))]


_WORKER_CLIENTS = {
    "dummy": "the workers are dummy clients of the store node's real client (mooncake_client), which owns the "
             "segment: they share its memory, so a reload is a copy through shared memory on this host, not a "
             "transfer over TCP (kvtui watch's --worker-client auto picks the same here). The TCP path section "
             "uses real clients instead.",
    "real": "each worker is a real client of the store: its reloads cross TCP from the store node, as on the TCP "
            "path section.",
}
"""The legend of the workers' store clients (``--worker-client``)."""


def _legend(o: ReuseFigures, card: DemoCard | None, same_case: bool) -> list[str]:
    """The table's legend: the demo card, the workers' clients, met / NOT met, the units."""
    from kvtui.core.text import legend

    entries = []
    if card:
        entries.append(("demo card", "the figures of the Ollama × Mooncake demo kvtui grew from (Mooncake PR #2800: "
                        "a prefill worker publishes a prompt's KV pages into a real Mooncake Store, a decode worker "
                        f"reloads them over TCP), measured on its own machine: {card['machine']}, with "
                        f"{card['page_bytes'] / 2**20:g} MiB pages and a {card['tokens_requested']:,}-token prompt; "
                        "its MiB/s are converted to MB/s here."
                        + ("" if same_case else " NOT this run's layout or prompt: for scale, not like for like.")))
    client = o.get("worker_client")
    if client in _WORKER_CLIENTS:
        entries.append((client, _WORKER_CLIENTS[client]))
    from kvtui.bench.targets import LEGEND

    entries += [LEGEND, ("MB/s", "10^6 bytes per second; MiB = 2^20 bytes")]
    return legend(entries)


def format_bench(o: ReuseFigures) -> str:
    """The human table of a reuse bench run (``o``: :func:`kvtui.bench.reuse.measure_reuse`'s figures), at most
    :data:`~kvtui.core.text.WIDTH` columns: sections of rows named as in :mod:`kvtui.metrics.figures`, the ratios
    against their :data:`TARGETS`, and a legend."""
    from kvtui.bench.targets import ratio_section
    from kvtui.core.text import rows, section, wrap
    from kvtui.core.verify import checked

    card = o.get("demo_card") or None
    same_case = card is not None and o.get("page_bytes", card.get("page_bytes")) == card.get("page_bytes") \
        and o["tokens_requested"] == card["tokens_requested"] and o["tokens_skipped"] == card["tokens_skipped"]
    env = o.get("environment")
    what = (f"kvtui bench: a {o['tokens_requested']:,}-token prompt published, a second request sharing "
            f"{o['tokens_skipped']:,} tokens reloaded {plural(o['iterations'], 'time')}"
            + (f" ({o['page_bytes']:,}-byte pages)" if "page_bytes" in o else "")
            + (f"; this machine: {plural(env['cores'] or 0, 'core')}, {env['mooncake']}" if env else "")
            + (f"; loaded pages checked {checked(o['verify'])} but in the request-rate step" if "verify" in o else ""))
    lines = wrap(what)
    reuse = _card_rows(o, card)
    if card:
        title = "Against the demo card" + ("" if same_case else " (NOT this run's layout or prompt: see the Legend)")
        lines += section(title, [f"  {'':<{_LABEL}}  {'this run':<{_CARD_RUN}}  demo card",
                                 *(f"  {k:<{_LABEL}}  {v:<{_CARD_RUN}}  {d}".rstrip() for k, v, d in reuse)])
    else:
        lines += section("Reuse", rows([(k, v) for k, v, _ in reuse], _LABEL))
    lines += section("Reload (the decode worker reloads the shared prefix)", rows(_reload_rows(o), _LABEL))
    lines += section("Baselines (the same bytes, in the same run)", rows(_baseline_rows(o), _LABEL))
    rr = o.get("request_rate")
    if rr:
        order = " ".join(w["verify"] for w in rr.get("windows", ()))
        per = f" per --verify mode, windows {order}" if order else ""
        lines += section(f"Request rate ({rr.get('seconds', 8):g} s closed loop{per})", rows(_rate_rows(rr), _LABEL))
    tp = o.get("tcp_path")
    if tp:
        lines += section("TCP path (real clients: reads cross loopback TCP)", rows(_tcp_rows(tp), _LABEL))
    if "ttft_estimate" in o:
        lines += section("Recompute vs reload (estimate)", wrap(_recompute_line(o, o["reload_ms"]), first="  ",
                                                                rest="  "))
    lines += ratio_section(o["ratios"], ("connector_vs_raw", "best_streams_vs_raw", "reload_vs_loopback_tcp",
                                         "reload_vs_memcpy", "tcp_reload_vs_loopback_tcp", "tcp_connector_vs_raw",
                                         "verify_vs_memcpy", "fill_vs_memcpy", "request_rate_vs_store_bound",
                                         "request_rate_vs_passes_bound", "sampled_request_rate_vs_store_bound"))
    lines += _legend(o, card, same_case)
    return "\n".join(lines)


def _recompute_line(o: ReuseFigures, reload: Stats) -> str:
    """The bench's break-even line: the estimated recompute time of the reloaded prefix against the measured
    reload (:func:`kvtui.metrics.ttft.reload_estimate`), marked when the reload is the slower."""
    from kvtui.metrics import figures as fig

    est = o["ttft_estimate"]
    rc, ratio, saved = o.get("recompute_ms"), o.get("reload_vs_recompute"), o.get("ttft_saved_ms")
    if rc is None or ratio is None or saved is None:  # (the estimate is off)
        return est.get("off", "no estimate")
    ms = fig.RELOAD_LATENCY
    # ratio: Σ reload ÷ Σ recompute over the reloads (the "reload vs recompute" figure), i.e. mean reload ÷
    # recompute, so the line names the mean beside it and the p50 separately
    slower = fig.show(fig.TTFT_SAVED, (ratio - 1) * rc)
    verdict = (f"RELOAD SLOWER THAN RECOMPUTE (Σ reload/Σ recompute {fig.number(ratio, '×')}×: {slower} lost per "
               "request on average)" if ratio > 1
               else f"{fig.TTFT_SAVED.name} p50 {fig.show(fig.TTFT_SAVED, saved['p50'])} per request (Σ reload/Σ "
                    f"recompute {fig.number(ratio, '×')}×)")
    return (f"recompute ~{fig.show(fig.TTFT_SAVED, rc)} for {o['tokens_skipped']:,} tokens vs reload p50 "
            f"{fig.number(reload['p50'], 'ms')} · mean {fig.show(ms, reload['mean'])} measured → {verdict}; "
            f"estimate: {est['basis']}")


def format_ui(o: UiFigures) -> str:
    """The human lines of a ``--ui`` run (``o``: :func:`kvtui.bench.ui.measure_ui`'s figures), at most
    :data:`~kvtui.core.text.WIDTH` columns."""
    from kvtui.bench.targets import LEGEND, ratio_section
    from kvtui.core.text import legend, rows, wrap

    runs, q = o["rounds"], o["ratios"]
    per_round = ", ".join(f"{m / h:.2f}" for m, h in zip(runs["monitor"], runs["headless"]))
    lines = wrap(f"{len(runs['headless'])} round(s), requests counted over {o['seconds']:g} s after "
                 f"{o['warm_up_seconds']:g} s; monitor at {o['refresh_hz']:g} Hz; best run of each side:")
    lines += rows([("workload rate headless", f"{o['headless_rps']:8,.1f} req/s"),
                   ("with the monitor", f"{o['monitor_rps']:8,.1f} req/s"),
                   ("monitor CPU, paused", f"{o['idle_paused_cpu_percent']:8,.1f} % of one core (target: near "
                                           "zero)")], 22, indent="")
    lines += ratio_section(q, ("monitor_vs_headless", "monitor_vs_headless_best_of"))
    lines += wrap(f"monitor ÷ headless is the median of the rounds' ratios ({per_round}); its best runs' ratio is "
                  "printed too", first="  ", rest="  ")
    lines += legend([LEGEND])
    return "\n".join(lines)


def worker_counts(text: str) -> list[int]:
    """``--decode-workers 1,2,4`` as ``[1, 2, 4]``; ``KvtuiError`` (one line) unless each is 1-MAX_WORKERS."""
    from kvtui.core.topology import check_count

    try:
        counts = [int(x) for x in text.split(",")]
        for n in counts:
            check_count("--decode-workers", n)
    except ValueError as exc:
        raise KvtuiError(str(exc) if "--decode-workers" in str(exc) else
                         f"--decode-workers takes counts such as 1,2,4, got {text!r}") from None
    return counts

