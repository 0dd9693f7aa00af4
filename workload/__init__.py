"""Pure request sources for kvtui: synthetic shared-prefix scenarios and trace replay.

This package imports nothing from :mod:`kvtui` and no store client, so it can be tested and reused alone.

- :mod:`workload.request` -- :class:`Request`, one prompt (uint32 token ids) with its arrival time;
- :mod:`workload.synthetic` -- :class:`SyntheticWorkload` over a :class:`WorkloadSpec` (scenarios
  ``shared-system-prompt``, ``few-shot``, ``multi-turn``, ``random``; knobs changeable mid-run);
- :mod:`workload.rows` -- :class:`TraceRow`, one row of a trace, and the out-of-order check (``late_rows``);
- :mod:`workload.trace` -- read and replay Mooncake FAST'25 traces
  (``kvcache-ai/Mooncake FAST25-release/traces``): :func:`read_trace`, :class:`TraceWorkload`;
- :mod:`workload.stats` -- offline trace analysis and ideal prefix-hit figures (unbounded and LRU);
- :mod:`workload.synthesis` -- trace synthesis: faster arrivals, longer shared prefixes or prompts, more
  prefix trees, as pure transforms of parsed trace rows.
"""

from workload.request import Request
from workload.stats import TraceStats, hit_rate_curve, ideal_hits, trace_stats
from workload.synthetic import (
    SCENARIOS,
    SyntheticWorkload,
    WorkloadSpec,
    shared_prefix_tokens,
)
from workload.trace import (
    DEFAULT_BLOCK_TOKENS,
    TraceError,
    TraceProblem,
    TraceRow,
    TraceWorkload,
    block_tokens_ids,
    check_page_divides_block,
    late_rows,
    read_trace,
    row_tokens,
    skipped_count,
    skipped_rows_text,
)

__all__ = [
    "Request",
    "SCENARIOS",
    "WorkloadSpec",
    "SyntheticWorkload",
    "shared_prefix_tokens",
    "TraceRow",
    "TraceProblem",
    "TraceError",
    "TraceWorkload",
    "read_trace",
    "block_tokens_ids",
    "row_tokens",
    "check_page_divides_block",
    "skipped_rows_text",
    "skipped_count",
    "late_rows",
    "DEFAULT_BLOCK_TOKENS",
    "TraceStats",
    "trace_stats",
    "ideal_hits",
    "hit_rate_curve",
]
