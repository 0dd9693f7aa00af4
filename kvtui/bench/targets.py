"""The ratio each ``kvtui bench`` is judged against: one table, which the benches, the table they print, the
``--help`` text and the tests all read."""

TARGETS = {
    "connector_vs_raw": 0.97,  # a reload through the connector keeps 97 % of a plain batch_get_into's rate
    "reload_vs_loopback_tcp": 1.0,  # the best reload is at least as fast as one loopback TCP stream
    "reload_vs_memcpy": 0.8,  # a reload from a co-located segment reaches 80 % of memcpy
    "tcp_reload_vs_loopback_tcp": 0.8,  # a reload on the TCP path (--worker-client real) reaches 80 % of one stream
    "verify_vs_memcpy": 0.5,  # checking every byte of a loaded page runs at half of memcpy's rate or more
    "fill_vs_memcpy": 0.5,  # likewise writing a computed page's contents
    "request_rate_vs_store_bound": 0.85,  # a closed-loop run spends 85 % of its time in store calls or more
    "engine_vs_bare_loop": 0.8,  # --trace: the engine replays at 80 % of the bare loop's rate or more
    "monitor_vs_headless": 0.95,  # --ui: the monitor costs the workload at most 5 % of its rate
    "reload_vs_link": 0.9,  # --link: a reload across a shaped link reaches 90 % of the link's rate
    "aggregate_vs_links": 0.9,  # --link with --decode-workers: each reader reaches 90 % of its link
}
"""The ratio each bench is judged against (printed as met / NOT met; the exit code ignores them)."""


def target_text(value: float, key: str) -> str:
    """``target ≥ 0.97: met`` or ``target ≥ 0.97: NOT met``: ``value`` against ``TARGETS[key]``."""
    target = TARGETS[key]
    return f"target ≥ {target:g}: {'met' if value >= target else 'NOT met'}"
