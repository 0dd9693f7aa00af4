"""``kvtui sweep``: a trace's hit rate through the real Mooncake store at several store capacities, beside the
offline LRU model and Belady's optimal cache at the same capacities and the unbounded ideal; a table,
``--json``, and the plot (``--svg``/``--png``). ``kvtui report SWEEP.json`` shows a saved sweep in a terminal screen.

Each capacity gets a fresh embedded cluster whose segment holds that many tokens of pages
(:mod:`kvtui.core.sweep` gives the rule), and the trace is replayed through it as ``kvtui run --trace …
--speed max --concurrency 1`` would, with run's read lease and worker client (:mod:`kvtui.bench.sweep`);
``--repeat N`` replays each capacity N times, each on a fresh cluster, and gives the range. ``--disk`` makes
it a DRAM × disk sweep: every (``--capacity``, ``--disk``) pair is a point whose store has a disk tier of that
many tokens behind its DRAM, beside the offline two-tier model.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

from kvtui.commands.output import write_json_atomic
from kvtui.config.cluster import DEFAULT_WORKER_CLIENT, LEASE_S, Topology, check_log_dir, resolve_worker_client
from kvtui.config.layout import add_layout_arguments, field_overrides, flag_message, layout_from_args
from kvtui.config.paths import check_outputs, path_arg
from kvtui.config.tiers import disk_room
from kvtui.config.workload import add_synthesis_arguments, read_trace_rows, synthesis_fields, trace_synthesis
from kvtui.core.errors import KvtuiError, bad_value
from kvtui.core.text import plural
from kvtui.launch import isolate, start_engine

MAX_REPEATS = 100
"""``--repeat``'s largest value."""

if TYPE_CHECKING:
    from kvtui.bench.sweep import PointStatus


def register(subparsers) -> None:
    """Add the ``sweep`` subcommand."""
    from kvtui.core.defaults import DEFAULT_MODEL
    from kvtui.core.sweep import SWEEP_BASE
    from kvtui.core.traces import trace_arg, trace_names

    p = subparsers.add_parser(
        "sweep", help="hit rate of a trace through the real store at several capacities, against offline LRU "
                      "and optimal caches",
        description="For each --capacity, start an embedded Mooncake cluster whose store holds that many tokens "
                    "of KV pages, replay the trace through it one request at a time as fast as possible, and "
                    "report the real store's token hit rate beside the offline LRU model's and Belady's optimal "
                    "cache's (MIN: the most any eviction policy can hit) at the same capacity (`kvtui trace-stats "
                    "--capacity`) and the unbounded cache's ideal. Each point starts from an "
                    "empty store. With --disk, every (--capacity, --disk) pair is a point whose store has a disk "
                    "(SSD) tier of that many tokens behind its DRAM, and its hits are split by where they were "
                    "read, beside the offline two-tier model (LRU DRAM demoting to LRU disk, `kvtui trace-stats "
                    "--capacity C --disk D`) and MIN at DRAM + disk. `kvtui report SWEEP.json` shows a saved "
                    "sweep's curve.")
    g = p.add_argument_group("what to sweep")
    g.add_argument("--trace", required=True, type=trace_arg, metavar="NAME|FILE",
                   help=f"a Mooncake FAST'25 JSONL trace: a shipped one by name ({trace_names()}) or a file")
    g.add_argument("--capacity", required=True, action="append", metavar="TOKENS[,TOKENS…]",
                   help="store capacities in tokens (4096, 500k, 1M = 1,000,000 tokens, 2.5M, 1G); a comma-separated "
                        "list or the flag repeated; swept in ascending order, each a whole number of trace blocks")
    g.add_argument("--disk", action="append", metavar="TOKENS[,TOKENS…]",
                   help="disk (SSD) tier capacities in tokens, 0 = no disk tier (DRAM only): every --capacity is "
                        "swept with every --disk, the disk tier holding that many tokens of pages behind the DRAM "
                        "(Mooncake's offload_on_evict); a pair whose disk would be smaller than its DRAM segment is "
                        "left out and named (Mooncake's store wedges with one)")
    g.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="replay each capacity N times, each on a fresh cluster, and give its real hit rate as the "
                        "median with the lowest and highest (the table, the plot, --json keeps every repeat): the "
                        "read lease is wall-clock, so the real store's rate moves with the machine's pace "
                        f"(1-{MAX_REPEATS}; default 1)")
    g.add_argument("--trace-block-tokens", type=int, default=None, metavar="TOKENS",
                   help="tokens per trace hash id (default 512, the FAST'25 release)")
    g.add_argument("--strict", action="store_true", help="stop at the first bad trace row (default: skip and count)")
    add_synthesis_arguments(p.add_argument_group(
        "trace synthesis (as on run and trace-stats: the offline curves are those of the rows replayed; "
        "--trace-speedup changes no hit of a replay at --speed max and is refused)"))
    add_layout_arguments(  # the sweep's own default page shape (kvtui.core.sweep.SWEEP_BASE)
        p, None, layout_help=f"layout preset instead of the sweep's default pages: {SWEEP_BASE.layers} layer × "
                             f"{SWEEP_BASE.kv_heads} KV head × {SWEEP_BASE.head_dim} element × one trace block of "
                             "tokens per page, the element size (bytes) the smallest power of two that brings the "
                             "smallest capacity's store to Mooncake's 16 MiB minimum (1M tokens → 8 B, 8 KiB pages); "
                             "page bytes change no hit, only the pages a store holds do",
        model_help=f"model name hashed into every page key (default {DEFAULT_MODEL})")
    s = p.add_argument_group("store (a fresh embedded cluster per capacity)")
    s.add_argument("--lease-ttl", type=float, default=LEASE_S, metavar="SECONDS",
                   help=f"the embedded master's read lease (default {LEASE_S:g} s, as kvtui run's; Mooncake's own is "
                        "10 s). Every probe and read grants one and a leased page cannot be evicted; at --speed max "
                        f"{LEASE_S:g} s covers hundreds of requests (how many depends on the machine), not the few "
                        "it covers at the FAST'25 traces' own pace")
    s.add_argument("--disk-path", type=path_arg, metavar="DIR",
                   help="with --disk: the folder the disk tiers write under (an existing folder; each point makes a "
                        "kvtui-disk-* folder in it and removes it when it ends; default: the temporary folder)")
    s.add_argument("--log-dir", type=path_arg, metavar="DIR",
                   help="where native logs of the clusters and workers go, kept (default: a new /tmp/kvtui-logs-* "
                        "folder per point, removed when the point ends without trouble, kept and named on stderr "
                        "when a process died or start-up failed)")
    s.add_argument("--isolate-network", choices=("auto", "on", "off"), default="auto",
                   help="run the clusters and workers in a private network namespace, loopback only (auto: when "
                        "permitted, e.g. as root; default auto; env KVTUI_ISOLATE overrides auto)")
    o = p.add_argument_group("output")
    o.add_argument("--json", type=path_arg, metavar="PATH",
                   help="write the sweep (every point's figures, the sizing) as JSON to PATH ('-' = stdout, "
                        "instead of the table); `kvtui report PATH` shows it")
    o.add_argument("--svg", type=path_arg, metavar="PATH",
                   help="write the plot as SVG: token hit rate (%%) against capacity (tokens, log scale), real "
                        "store, offline LRU, offline optimal (Belady MIN) and unbounded ideal; with --disk, against "
                        "the DRAM capacity, one colour per disk size: the real store solid, the two-tier model "
                        "dashed, MIN at DRAM + disk a bar above each point")
    o.add_argument("--png", type=path_arg, metavar="PATH", help="write the same plot as PNG (800×480 px)")
    o.add_argument("--quiet", action="store_true", help="no progress bar or notes (warnings still show)")
    p.set_defaults(func=run)


def _layout(args: argparse.Namespace, smallest: int, block: int, watermark: float):
    """``(layout, model, auto)``: the page layout of the flags and the model hashed into the keys, or the
    sweep's default shape (one trace block per page) with the element size
    :func:`~kvtui.core.sweep.auto_elem_bytes` picks for the ``smallest`` capacity (``auto`` True) unless
    ``--elem-bytes`` or ``--kv-dtype`` sets it."""
    from kvtui.core.defaults import DEFAULT_MODEL
    from kvtui.core.models import KV_DTYPES
    from kvtui.core.sweep import SWEEP_BASE, auto_elem_bytes

    if args.layout is not None or args.model_config:
        pages = layout_from_args(args, preset=args.layout or "seed")
        return pages.layout, pages.model, False
    if args.kv_dtype and args.elem_bytes is not None:
        raise KvtuiError("--kv-dtype and --elem-bytes both set the element size; give one")
    model = args.model or DEFAULT_MODEL
    try:
        base = replace(SWEEP_BASE, **{"page_tokens": block, **field_overrides(args)})
        if args.kv_dtype:
            base = replace(base, elem_bytes=KV_DTYPES[args.kv_dtype])
    except ValueError as exc:
        raise KvtuiError(flag_message(str(exc))) from None
    if args.elem_bytes is not None or args.kv_dtype:
        return base, model, False
    try:
        return replace(base, elem_bytes=auto_elem_bytes(smallest, block, base, watermark)), model, True
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None


def _check_disk_room(path: str | None, disk_bytes: int) -> None:
    """``KvtuiError`` (one line naming ``--disk``) when the largest disk tier of the sweep, ``disk_bytes``, is more
    than the free space where the tiers go (``path``, else the temporary folder); one point's tier is there at a
    time."""
    from kvtui.core.units import format_bytes

    if not disk_bytes:
        return
    where, free = disk_room(path)
    if disk_bytes > free:
        raise KvtuiError(f"--disk: the largest disk tier ({format_bytes(disk_bytes)}) is more than the free space in "
                         f"{where} ({format_bytes(free)}): sweep smaller disks or give another --disk-path")


def _say(text: str) -> None:
    print(f"kvtui: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Run the sweep; exit 0, 1 if a loaded page failed verification, 2 on bad input."""
    import psutil

    from kvtui.bench.sweep import SweepPlan
    from kvtui.core.capacity import MEMORY_SHARE
    from kvtui.core.defaults import MIN_SEGMENT_BYTES
    from kvtui.core.sweep import DISK_RULE, OBJECT_OVERHEAD_BYTES, format_sweep_table, format_tokens, pair_sizes
    from kvtui.core.traces import trace_label
    from kvtui.core.units import format_bytes, parse_token_list
    from kvtui.mooncake.cluster import ClusterOptions
    from kvtui.runtime.procs import uninterrupted
    from workload import DEFAULT_BLOCK_TOKENS, skipped_count, skipped_rows_text
    from workload.working_set import trace_working_set

    try:
        caps = sorted(set(parse_token_list(args.capacity, "--capacity")))
        disks = sorted(set(parse_token_list(args.disk, "--disk", allow_zero=True)))
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    if args.disk_path is not None and not any(disks):
        raise KvtuiError("--disk-path says where the disk tiers go: give their sizes too (--disk)")
    disk_room(args.disk_path)  # (an existing folder, before anything starts)
    block = args.trace_block_tokens if args.trace_block_tokens is not None else DEFAULT_BLOCK_TOKENS
    if block < 1:
        raise KvtuiError(f"--trace-block-tokens must be at least 1, got {block}")
    if caps[0] < block:
        raise KvtuiError(f"--capacity {caps[0]:,} is less than one trace block ({block:,} tokens)")
    if not (args.lease_ttl > 0):
        raise bad_value("--lease-ttl", "positive seconds", args.lease_ttl)
    if not 1 <= args.repeat <= MAX_REPEATS:
        raise bad_value("--repeat", f"within 1-{MAX_REPEATS}", args.repeat)
    if args.trace_speedup is not None:
        raise KvtuiError("--trace-speedup changes no hit rate of a sweep: every point replays at --speed max")
    synthesis = trace_synthesis(args, has_trace=True)  # (checks the flags before any work)
    watermark = ClusterOptions.eviction_high_watermark
    layout, model, auto = _layout(args, caps[0], block, watermark)
    try:
        pairs, skipped = pair_sizes(caps, disks, block, layout, watermark)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    if any(disks) and not any(p.disk_tokens for p in pairs):
        least = max(p.least_disk_tokens for p in skipped)
        raise KvtuiError(f"--disk {','.join(format_tokens(d) for d in disks if d)}: every disk tier would be smaller "
                         "than the DRAM segment of its --capacity, which wedges Mooncake's store: give --disk of at "
                         f"least {format_tokens(least)} tokens")
    sizes = tuple(pairs)
    check_outputs(((args.json, "--json"), (args.svg, "--svg"), (args.png, "--png")))
    check_log_dir(args.log_dir)
    _check_disk_room(args.disk_path, max(s.disk_bytes for s in sizes))
    rows, problems = read_trace_rows(args.trace, block, strict=args.strict, synthesis=synthesis)
    if problems:
        _say(skipped_rows_text(problems))
    ws = trace_working_set(rows, block, layout.page_tokens)
    touched = min(sizes[-1].pages, ws.pages) * layout.page_bytes  # a segment's memory is used as pages land
    available = psutil.virtual_memory().available
    if touched > available * MEMORY_SHARE:
        raise KvtuiError(f"--capacity {caps[-1]:,}: the store would fill {format_bytes(touched)} with "
                         f"{layout.describe()} pages, more than {MEMORY_SHARE:.0%} of this machine's free memory "
                         f"({format_bytes(available)}): sweep smaller capacities or use smaller pages")
    quiet = args.quiet or args.json == "-"
    for pair in skipped:  # (a warning: a point asked for is not measured)
        _say(f"warning: left out {pair.text()}")
    if not quiet:
        for s in sizes:
            if s.pages < ws.prompt_pages:
                _say(f"note: --capacity {s.capacity_tokens:,} holds {plural(s.pages, 'page')}, fewer than the longest "
                     f"row's {ws.prompt_pages:,}: that row cannot stay whole in the store")
                break
        whole = [s for s in sizes if s.pages >= ws.pages]
        if whole:
            _say(f"note: from --capacity {whole[0].capacity_tokens:,} on, the store holds every distinct page of "
                 f"the trace ({ws.pages:,}): expect the unbounded ideal")
    per_block = block // layout.page_tokens
    rule = (f"pages = capacity // {block} tokens per block × {plural(per_block, 'page')} per "
            f"block; segment = ceil(pages × ({format_bytes(layout.page_bytes)} + {OBJECT_OVERHEAD_BYTES} B "
            f"overhead) / {watermark:g} eviction watermark), at least {MIN_SEGMENT_BYTES >> 20} MiB")
    client = resolve_worker_client(DEFAULT_WORKER_CLIENT, attached=False, segment_on="store", topology=Topology(),
                                   hosts=False)  # (run's: the same point through run and sweep runs the same way)
    plan = SweepPlan(rows=rows, label=trace_label(args.trace), block_tokens=block, layout=layout, sizes=sizes,
                     model=model, lease_ttl_s=args.lease_ttl, log_dir=args.log_dir,
                     isolation=isolate(args.isolate_network),
                     sizing={"rule": rule, "eviction_high_watermark": watermark,
                             "eviction_ratio": ClusterOptions.eviction_ratio,
                             "object_overhead_bytes": OBJECT_OVERHEAD_BYTES, "min_segment_bytes": MIN_SEGMENT_BYTES,
                             "elem_bytes_auto": auto,
                             **({"disk_rule": DISK_RULE, "skipped_pairs": [asdict(p) for p in skipped]}
                                if any(disks) else {})},
                     bad_rows_skipped=skipped_count(problems),
                     synthesis=synthesis_fields(synthesis).get("synthesis", {}), repeats=args.repeat,
                     worker_client=client, disk_path=args.disk_path)
    if not quiet:
        times = f" × {plural(args.repeat, 'repeat')}" if args.repeat > 1 else ""
        count = plural(len(sizes), "pair") if any(disks) else plural(len(sizes), "point")
        _say(f"{count}{times} of {plural(len(rows), 'row')}; "
             f"pages {layout.describe()}; {plan.isolation}")
    try:
        result, interrupted = _with_progress(plan, quiet)
    except RuntimeError as exc:
        raise KvtuiError(str(exc)) from None
    with uninterrupted():  # a second Ctrl-C must not cost the points already measured
        if args.json != "-":
            print(format_sweep_table(result))
        if args.json:
            write_json_atomic(args.json, result.to_dict())
        if result.points:
            from kvtui.bench.sweep_plot import save_plot

            for out, fmt in ((args.svg, "svg"), (args.png, "png")):
                if out:
                    save_plot(result, out, fmt)
    if isinstance(interrupted, KeyboardInterrupt):
        raise interrupted
    if interrupted is not None:  # a point's store broke: the points before it are written above
        n = len(result.points)
        raise KvtuiError(f"sweep stopped: {interrupted}" + (f" ({plural(n, 'point')} before it written)"
                                                          if n and (args.json or args.svg or args.png) else ""))
    bad = sum(p.mismatches for p in result.points)
    if bad:
        _say(f"{bad:,} loaded pages failed verification")
    return 1 if bad else 0


def _with_progress(plan, quiet: bool):
    """:func:`kvtui.bench.sweep.run_sweep` with a rich progress bar over the whole sweep on stderr (a terminal),
    else one line per replay (not ``quiet``)."""
    from kvtui.bench.sweep import run_sweep
    from kvtui.core.sweep import format_tokens

    rows, n, reps = len(plan.rows), len(plan.sizes), max(1, plan.repeats)

    start = start_engine

    def where(i: int) -> str:
        s = plan.sizes[i]
        return f"{format_tokens(s.capacity_tokens)} tokens" + (f" + {format_tokens(s.disk_tokens)} on disk"
                                                                 if s.disk_tokens else "")

    def name(i: int, status: PointStatus) -> str:
        again = f", repeat {status.get('repeat', 0) + 1}/{reps}" if reps > 1 else ""
        return f"sweep point {i + 1}/{n}{again}: {where(i)}"

    def real(i: int, status: PointStatus) -> str:
        disk = f" ({status.get('disk', 0.0) * 100:.2f} from disk)" if plan.sizes[i].disk_tokens else ""
        return f"real store {status['real'] * 100:.2f} %{disk}"

    if quiet or not sys.stderr.isatty():
        def line(i: int, done: int, status: PointStatus) -> None:
            if status.get("done") and not quiet:
                s = plan.sizes[i]
                pages = f"{s.pages:,} + {plural(s.disk_pages, 'page')}" if s.disk_tokens else plural(s.pages, "page")
                _say(f"{name(i, status)} ({pages}): {real(i, status)}")
        return run_sweep(plan, start, line)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    cols = [TextColumn("[bold]kvtui sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
            TimeElapsedColumn()]
    with Progress(*cols, console=Console(stderr=True), transient=True) as prog:
        task = prog.add_task("sweep", total=rows * n * reps, status="starting…")

        def bar(i: int, done: int, status: PointStatus) -> None:
            text = f"{i + 1}/{n}: {where(i)} · real {status['real'] * 100:.1f} %"
            if status.get("done"):
                prog.console.print(f"kvtui: {name(i, status)}: {real(i, status)}", markup=False, highlight=False)
            prog.update(task, completed=(i * reps + status.get("repeat", 0)) * rows + done, status=text)

        return run_sweep(plan, start, bar)
