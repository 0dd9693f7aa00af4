"""Benchmarks of the demo card's figures with same-run baselines (memcpy, loopback TCP, a bare store loop)."""
