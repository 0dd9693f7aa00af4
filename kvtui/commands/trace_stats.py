"""``kvtui trace-stats FILE``: offline summary of a Mooncake FAST'25 trace and its ideal prefix-hit rate.

No store is touched. The ideal hit rate follows the replay rule of the trace README (full blocks only,
longest leading run of already-published blocks, rows in file order); beside it aiperf ``analyze-trace``'s
hit rate (a mean over requests) and the prefill-compute ceiling ``1 / (1 − r)``. ``--capacity`` adds the
hit rate of an LRU cache of that many tokens (the shape of Fig. 9 of the Mooncake FAST'25 paper) and of
Belady's optimal cache of the same size (:mod:`workload.stats`). Figures: :data:`kvtui.metrics.figures.TRACE`.
"""

from __future__ import annotations

import argparse

from kvtui.config.paths import path_arg
from kvtui.config.workload import add_synthesis_arguments
from kvtui.core import units
from kvtui.core.errors import KvtuiError
from kvtui.core.text import plural

_MAX_PROBLEMS_SHOWN = 5
_MAX_PROBLEMS_IN_JSON = 100


def parse_tokens(text: str, what: str = "capacity") -> int:
    """Parse a token count such as ``4096``, ``500k``, ``1M``, ``1.5M``, ``2G`` (decimal suffixes,
    :func:`kvtui.core.units.parse_tokens`). Raises :class:`KvtuiError` with a one-line message on anything else.
    """
    try:
        return units.parse_tokens(text, what)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None


def _parse_capacities(values: list[str] | None) -> list[int]:
    try:
        return units.parse_token_list(values, "--capacity")
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``trace-stats`` subcommand."""
    from kvtui.core.traces import trace_names

    p = subparsers.add_parser(
        "trace-stats",
        help="summarise a Mooncake FAST'25 trace and its ideal prefix-hit rate (no store needed)",
        description=(
            "Read a Mooncake FAST'25 JSONL trace (kvcache-ai/Mooncake FAST25-release/traces) and print its "
            "size, arrival rate, prompt length percentiles and the ideal KV prefix-hit rate: rows replayed in "
            "file order, only full blocks cacheable, a hit is the longest leading run of blocks already "
            "published; beside it aiperf analyze-trace's hit rate (the mean over requests of each request's "
            "block hit share) and the prefill-compute ceiling 1/(1 - r). --capacity adds the hit rates of an LRU "
            "cache of that size and of Belady's optimal cache (MIN: drop the block used furthest in the future), "
            "the most any eviction policy can hit."
        ),
    )
    p.add_argument("file", metavar="NAME|FILE", help=f"a shipped trace by name ({trace_names()}; `kvtui traces` "
                   "lists them) or a trace file, JSON Lines: {timestamp (ms), input_length, output_length (tokens), "
                   "hash_ids}")
    p.add_argument(
        "--block-tokens",
        metavar="N",
        default="512",
        help="tokens per hash id (trace block size, tokens); default 512 as in the FAST'25 traces",
    )
    p.add_argument(
        "--capacity",
        metavar="TOKENS",
        action="append",
        help="cache capacity in tokens (e.g. 4096, 500k, 1M = 1,000,000 tokens) for the LRU and the optimal "
        "(Belady MIN) hit rates; repeat the flag or give a comma-separated list for a hit-rate curve",
    )
    p.add_argument(
        "--disk",
        metavar="TOKENS",
        action="append",
        help="a disk tier behind each --capacity (tokens; repeat or comma-separate): the offline two-tier model's "
        "hit rate, split into memory and disk hits (LRU memory whose evictions move to an LRU disk, as Mooncake's "
        "offload_on_evict), beside Belady MIN at memory + disk",
    )
    p.add_argument("--strict", action="store_true", help="stop at the first bad row, or row whose timestamp is "
                   "below an earlier row's (file:line: reason, exit 2), instead of skipping bad rows and noting late "
                   "ones")
    p.add_argument("--json", type=path_arg, metavar="PATH",
                   help="also write the stats (token counts, seconds, req/s) as JSON to PATH ('-' = stdout, "
                        "instead of the table)")
    add_synthesis_arguments(p.add_argument_group("trace synthesis (the same flags as run/watch/bench --trace: "
                                                 "the stats of the rows such a replay issues)"))
    p.set_defaults(func=run)


def _ceiling(rate: float) -> str:
    from kvtui.metrics.figures import ceiling_text
    from workload.stats import prefill_ceiling

    return ceiling_text(prefill_ceiling(rate))


def _json_ceiling(ceiling: float) -> float | None:
    """A prefill ceiling for JSON, which has no infinity: None when every token hits."""
    return None if ceiling == float("inf") else ceiling


def _fmt_int(n: int) -> str:
    return f"{n:,}"


def format_trace_stats(doc: dict) -> str:
    """The table of ``kvtui trace-stats`` from its ``--json`` document (``problems``: every one, in file order;
    the file written keeps the first :data:`_MAX_PROBLEMS_IN_JSON`)."""
    from kvtui.metrics import figures as fig
    from workload.stats import prefill_ceiling
    from workload.synthesis import Synthesis

    problems = doc["problems"]
    skipped = [p for p in problems if p["skipped"]]
    late = [p for p in problems if not p["skipped"]]
    rate = doc["arrival_rate_rps"]
    table: list[tuple[str, str]] = [
        ("trace", doc["file"]),
        *([("synthesis", Synthesis(**doc["synthesis"]).describe())] if "synthesis" in doc else []),
        ("rows", f"{_fmt_int(doc['rows'])}" + (f"  ({plural(doc['bad_rows'], 'bad row')} skipped)"
                                                if doc["bad_rows"] else "")),
        ("duration", f"{doc['duration_s']:,.1f} s"),
        ("arrival rate", f"{rate:,.2f} req/s" if rate is not None else "n/a (one instant)"),
        (
            "input length",
            f"p50 {_fmt_int(doc['input_p50'])}  p90 {_fmt_int(doc['input_p90'])}  "
            f"p99 {_fmt_int(doc['input_p99'])}  max {_fmt_int(doc['input_max'])} tokens",
        ),
        ("input tokens", _fmt_int(doc["input_tokens"])),
        ("output tokens", _fmt_int(doc["output_tokens"])),
        ("block size", f"{_fmt_int(doc['block_tokens'])} tokens"),
        (
            "blocks",
            f"{_fmt_int(doc['blocks_listed'])} listed, {_fmt_int(doc['distinct_blocks'])} distinct, "
            f"{_fmt_int(doc['full_blocks'])} full",
        ),
        ("shared prefixes", f"{_fmt_int(doc['shared_prefix_tokens'])} tokens "
                            f"({doc['shared_prefix_tokens'] / doc['input_tokens']:.2%} of input): "
                            "rows' leading blocks that other rows list too"),
        (
            fig.TRACE_IDEAL.label,
            f"{doc['ideal_token_hit_rate'] * 100:6.2f} %  unbounded cache, token-weighted "
            f"({_fmt_int(doc['ideal_block_hits'])} block hits, {_fmt_int(doc['ideal_hit_tokens'])} tokens)",
        ),
        (
            fig.AIPERF_HIT_RATE.label,
            f"{doc['aiperf_hit_rate'] * 100:6.2f} %  unbounded cache, mean over requests of each one's block hit "
            "share (aiperf analyze-trace)",
        ),
        (
            fig.PREFILL_CEILING.label,
            f"{fig.ceiling_text(prefill_ceiling(doc['ideal_token_hit_rate'])):>7}   1/(1 - ideal hit rate): prompt "
            "tokens ÷ tokens left to compute if every hit token were free (an ideal)",
        ),
    ]
    for lru, opt in zip(doc["lru"], doc["min"]):
        cap, hit, best = lru["capacity_tokens"], lru["token_hit_rate"], opt["token_hit_rate"]
        table.append(
            (
                f"hit rate @ {_fmt_int(cap)} tokens",
                f"{hit * 100:6.2f} %  {fig.TRACE_LRU.label} (prefill ceiling {_ceiling(hit)})   "
                f"{best * 100:6.2f} %  {fig.TRACE_MIN.label} (prefill ceiling {_ceiling(best)})   "
                f"{plural(cap // doc['block_tokens'], 'block')}",
            )
        )
    for t in doc.get("two_tier", ()):  # (a document from before the disk tier has none)
        table.append(
            (
                f"hit rate @ {_fmt_int(t['memory_tokens'])} + {_fmt_int(t['disk_tokens'])} disk",
                f"{t['token_hit_rate'] * 100:6.2f} %  {fig.TRACE_TWO_TIER.label} (memory "
                f"{t['memory_token_hit_rate'] * 100:.2f} % + disk {t['disk_token_hit_rate'] * 100:.2f} %)   "
                f"{t['min_token_hit_rate'] * 100:6.2f} %  {fig.TRACE_MIN.label} at "
                f"{_fmt_int(t['memory_tokens'] + t['disk_tokens'])} tokens",
            )
        )
    width = max(len(k) for k, _ in table)
    lines = [f"{k:<{width}}  {v}" for k, v in table]
    for listed, total, head in (
            (skipped, doc["bad_rows"], f"skipped {plural(doc['bad_rows'], 'bad row')}:"),
            (late, len(late), f"{plural(len(late), 'row')} out of order (kept; a replay issues each at the earlier "
                              "row's time):")):
        if not listed:
            continue
        lines.append(head)
        for pr in listed[:_MAX_PROBLEMS_SHOWN]:
            lines.append(f"  line {pr['line']}: {pr['reason']}")
        if total > _MAX_PROBLEMS_SHOWN:
            lines.append(f"  ... and {_fmt_int(total - _MAX_PROBLEMS_SHOWN)} more")
    return "\n".join(lines)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Compute and print the stats; return 0. Bad input raises :class:`KvtuiError`."""
    import os

    from kvtui.commands.output import write_json_atomic
    from kvtui.config.paths import check_outputs
    from kvtui.config.workload import apply_synthesis, synthesis_fields, trace_synthesis
    from kvtui.core.traces import resolve_trace
    from kvtui.metrics import figures as fig
    from workload.stats import hit_rate_curve, optimal_hit_rate_curve, prefill_ceiling, trace_stats
    from workload.synthesis import shared_prefix_lengths
    from workload.tiers import two_tier_hits
    from workload.trace import TraceError, read_trace

    block_tokens = parse_tokens(args.block_tokens, "--block-tokens")
    if block_tokens < 1:
        raise KvtuiError(f"bad --block-tokens {args.block_tokens!r}: must be at least 1 token")
    capacities = _parse_capacities(args.capacity)
    try:
        disks = units.parse_token_list(args.disk, "--disk")
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    if disks and not capacities:
        raise KvtuiError("--disk is a disk tier behind a memory of --capacity tokens: give --capacity too")
    path = resolve_trace(args.file, "trace-stats")
    check_outputs(((args.json, "--json"),))  # before the work, as every command does
    synthesis = trace_synthesis(args, has_trace=True)

    try:
        rows, problems = read_trace(path, block_tokens=block_tokens, strict=args.strict, block_flag="--block-tokens")
        rows = apply_synthesis(rows, synthesis, block_tokens)
        stats = trace_stats(rows, block_tokens)
        shared_tokens = sum(shared_prefix_lengths(rows, block_tokens)) * block_tokens
        curve = hit_rate_curve(rows, capacities, block_tokens) if capacities else []
        best = optimal_hit_rate_curve(rows, capacities, block_tokens) if capacities else []
        tiers = [two_tier_hits(rows, cap, disk, block_tokens) for cap in capacities for disk in disks]
    except (TraceError, ValueError) as exc:
        raise KvtuiError(str(exc)) from None
    doc = {
        "file": os.fspath(args.file),
        **synthesis_fields(synthesis),
        **stats.to_dict(),
        "shared_prefix_tokens": shared_tokens,
        fig.PREFILL_CEILING.key: _json_ceiling(prefill_ceiling(stats.ideal_token_hit_rate)),
        "lru": [{"capacity_tokens": cap, "token_hit_rate": rate,
                 fig.PREFILL_CEILING.key: _json_ceiling(prefill_ceiling(rate))} for cap, rate in curve],
        "min": [{"capacity_tokens": cap, "token_hit_rate": rate,
                 fig.PREFILL_CEILING.key: _json_ceiling(prefill_ceiling(rate))} for cap, rate in best],
        "two_tier": [{"memory_tokens": t.memory_tokens, "disk_tokens": t.disk_tokens,
                      "token_hit_rate": t.hit_rate, "memory_token_hit_rate": t.memory_rate,
                      "disk_token_hit_rate": t.disk_rate, "min_token_hit_rate": t.optimal_rate} for t in tiers],
        "bad_rows": sum(1 for p in problems if p.skipped),
        "problems": [{"line": p.line_no, "reason": p.reason, "skipped": p.skipped} for p in problems],
    }
    if args.json != "-":
        print(format_trace_stats(doc))
    if args.json:  # (- : standard output; the first 100 problems)
        write_json_atomic(args.json, {**doc, "problems": doc["problems"][:_MAX_PROBLEMS_IN_JSON]})
    return 0
