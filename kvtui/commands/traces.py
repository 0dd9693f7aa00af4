"""``kvtui traces``: the traces shipped inside kvtui (Mooncake FAST'25 samples), usable as ``--trace NAME`` by
``run``, ``watch``, ``bench --trace`` and ``trace-stats``, with their size, duration and ideal hit rate.

The figures are those of ``kvtui trace-stats NAME`` (:func:`workload.stats.trace_stats`, 512 tokens per hash
id): ``duration_s`` is last minus first arrival in seconds, ``ideal_token_hit_rate`` the fraction (0..1) of
prompt tokens an unbounded cache hits when the rows are replayed in file order, full blocks only.
"""

from __future__ import annotations

import argparse

from kvtui.config.paths import path_arg
from kvtui.core.errors import KvtuiError


def register(subparsers) -> None:
    """Add the ``traces`` subcommand."""
    p = subparsers.add_parser(
        "traces", help="list the traces shipped with kvtui (names for --trace)",
        description="List the Mooncake FAST'25 sample traces shipped inside kvtui (kvcache-ai/Mooncake "
                    "FAST25-release/traces, Apache-2.0): the name to give --trace (run, watch, bench) or "
                    "trace-stats, rows, duration and the ideal prefix-hit rate of an unbounded cache.")
    p.add_argument("--json", type=path_arg, nargs="?", const="-", metavar="PATH",
                   help="write the list as JSON to PATH instead of the table (no PATH or '-' = stdout)")
    p.set_defaults(func=run)


def shipped_trace_rows() -> list[dict]:
    """One dict per shipped trace: ``name``, ``file`` (installed path), ``description``, ``rows``,
    ``duration_s`` (seconds), ``arrival_rate_rps`` (req/s or None), ``input_tokens``, ``block_tokens``,
    ``ideal_token_hit_rate`` (0..1). Raises :class:`KvtuiError` if a shipped file is missing or unreadable."""
    import os

    from kvtui.core.traces import SHIPPED_TRACES, resolve_trace
    from workload import DEFAULT_BLOCK_TOKENS, TraceError, read_trace, trace_stats

    out = []
    for name, shipped in SHIPPED_TRACES.items():
        path = resolve_trace(name)
        try:
            rows, _ = read_trace(path, block_tokens=DEFAULT_BLOCK_TOKENS)
        except TraceError as exc:
            raise KvtuiError(f"shipped trace {name}: {exc}") from None
        s = trace_stats(rows, DEFAULT_BLOCK_TOKENS)
        out.append({"name": name, "file": os.fspath(path), "description": shipped.description, "rows": s.rows,
                    "duration_s": s.duration_s, "arrival_rate_rps": s.arrival_rate_rps,
                    "input_tokens": s.input_tokens, "block_tokens": s.block_tokens,
                    "ideal_token_hit_rate": s.ideal_token_hit_rate})
    return out


def format_table(traces: list[dict]) -> str:
    """The human table of :func:`shipped_trace_rows` (one line per trace, then what the names are for)."""
    head = ("name", "rows", "duration", "ideal hit rate", "what")
    body = [(t["name"], f"{t['rows']:,}", f"{t['duration_s']:,.1f} s", f"{t['ideal_token_hit_rate']:.2%}",
             t["description"]) for t in traces]
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head) - 1)]
    right = (False, True, True, True)
    lines = ["  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)) + "  " + row[-1]
             for row in (head, *body)]
    lines.append("use: kvtui run --trace NAME, kvtui trace-stats NAME (ideal hit rate: unbounded cache, full "
                 "512-token blocks, rows in file order)")
    return "\n".join(lines)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Print the table, or write ``--json`` (``{"traces": [...]}``, fields of :func:`shipped_trace_rows`);
    exit 0."""
    from kvtui.commands.output import write_json_atomic
    from kvtui.config.paths import check_outputs

    check_outputs(((args.json, "--json"),))
    traces = shipped_trace_rows()
    if args.json is None:
        print(format_table(traces))
    else:
        write_json_atomic(args.json, {"traces": traces})
    return 0
