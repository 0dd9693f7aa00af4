"""The ratio each ``kvtui bench`` is judged against: one table, which the benches, the table they print, the
``--help`` text and the tests all read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TARGETS = {
    "connector_vs_raw": 0.97,  # a reload through the connector keeps 97 % of a plain batch_get_into's rate
    "reload_vs_loopback_tcp": 1.0,  # the best reload is at least as fast as one loopback TCP stream
    "reload_vs_memcpy": 0.8,  # a reload from a co-located segment reaches 80 % of memcpy
    "tcp_reload_vs_loopback_tcp": 0.8,  # a reload on the TCP path (--worker-client real) reaches 80 % of one stream
    "verify_vs_memcpy": 0.5,  # checking every byte of a loaded page runs at half of memcpy's rate or more
    "fill_vs_memcpy": 0.5,  # likewise writing a computed page's contents
    # a closed-loop run checking every byte (--verify full) reaches 95 % of the rate its store calls and its two
    # passes over memory (verify, fill) alone allow, and one checking a sample (--verify sampled) spends 85 % of
    # its time in store calls or more
    "request_rate_vs_passes_bound": 0.95,
    "sampled_request_rate_vs_store_bound": 0.85,
    "engine_vs_bare_loop": 0.8,  # --trace: the engine replays at 80 % of the bare loop's rate or more
    "monitor_vs_headless": 0.95,  # --ui: the monitor costs the workload at most 5 % of its rate
    "reload_vs_link": 0.9,  # --link: a reload across a shaped link reaches 90 % of the link's rate
    "aggregate_vs_links": 0.9,  # --link with --decode-workers: each reader reaches 90 % of its link
}
"""The ratio each bench is judged against (printed as met / NOT met; the exit code ignores them)."""

LEGEND = ("met / NOT met",
          "a ratio against its target, the least the bench should reach (kvtui/bench/targets.py; `kvtui bench "
          "--help` lists them): met when the ratio reaches it, NOT met below. A ratio with no target explains "
          "the others. The exit code ignores the targets: it is 1 only when a loaded page failed verification.")
"""The table's legend entry for the targets."""

NAME_WIDTH = 34  # the Ratios section's first column


def verdict(value: float, key: str) -> str:
    """``met`` or ``NOT met``: ``value`` against ``TARGETS[key]``."""
    return "met" if value >= TARGETS[key] else "NOT met"


def ratio_row(name: str, value: float, key: str) -> str:
    """One row of a Ratios section: ``name``, ``value`` (×) and, where ``key`` has a target, the target and
    met / NOT met."""
    from kvtui.metrics.figures import number

    target = f"≥ {TARGETS[key]:g}" if key in TARGETS else ""
    row = f"  {name:<{NAME_WIDTH}} {number(value, '×'):>7}×   {target:<7}"
    return (row + f"  {verdict(value, key)}" if target else row).rstrip()


def ratio_section(ratios: Mapping[str, object], keys: Iterable[str] | None = None) -> list[str]:
    """The Ratios section of a bench's table: a title and one :func:`ratio_row` per ratio of ``ratios`` (a bench's
    ``ratios``, each a number; those of ``keys``, in that order; default: every one), each named by its figure
    (:data:`kvtui.metrics.figures.RATIOS`)."""
    from kvtui.metrics.figures import RATIO_BY_KEY

    rows = []
    for key in (ratios if keys is None else keys):
        value = ratios.get(key)
        if not isinstance(value, (int, float)):  # (a ratio the run did not measure)
            continue
        f = RATIO_BY_KEY.get(key)
        rows.append(ratio_row(f.name if f else key, value, key))
    head = f"{'Ratios':<{NAME_WIDTH + 2}} {'ratio':>8}   target   (see met / NOT met in the Legend)"
    return ["", head, *rows] if rows else []
