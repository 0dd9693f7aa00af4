"""Metrics: turn engine events into counters, rates, latency histograms and immutable frames."""
