"""Number formatting for the monitor: every figure on screen carries its unit."""

from __future__ import annotations

from kvtui.core.units import format_bytes

__all__ = ["format_bytes", "fmt_int", "fmt_count", "fmt_pct", "fmt_ms", "fmt_mbps", "fmt_rate", "fmt_elapsed",
           "fmt_position", "fmt_speed"]


def fmt_int(n: float) -> str:
    """``1234567`` → ``'1,234,567'``."""
    return f"{int(n):,}"


def fmt_count(n: float) -> str:
    """Short count: ``950`` → ``'950'``, ``12_345`` → ``'12.3k'``, ``4_200_000`` → ``'4.2M'``."""
    n = float(n)
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:.0f}"


def fmt_pct(fraction: float, digits: int = 1) -> str:
    """``0.4123`` → ``'41.2 %'``."""
    return f"{100.0 * fraction:.{digits}f} %"


def fmt_ms(ms: float) -> str:
    """Latency: ``0.0625`` → ``'62 µs'``, ``3.456`` → ``'3.46 ms'``, ``1234`` → ``'1.23 s'``."""
    if ms <= 0:
        return "0 ms"
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms < 10:
        return f"{ms:.2f} ms"
    if ms < 1000:
        return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


def fmt_mbps(mbps: float) -> str:
    """Bandwidth in 10^6 bytes/s: ``123.4`` → ``'123.4 MB/s'``, ``2345`` → ``'2.35 GB/s'``."""
    if mbps >= 1000:
        return f"{mbps / 1000:.2f} GB/s"
    return f"{mbps:.1f} MB/s"


def fmt_rate(per_s: float, unit: str = "/s") -> str:
    """A per-second rate: ``12.345`` → ``'12.3/s'``, ``45_600`` → ``'45.6k/s'``."""
    if per_s >= 1000:
        return f"{fmt_count(per_s)}{unit}"
    if per_s >= 100:
        return f"{per_s:.0f}{unit}"
    return f"{per_s:.1f}{unit}"


def fmt_elapsed(seconds: float) -> str:
    """``83.4`` → ``'1:23'``, ``4000`` → ``'1:06:40'``."""
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def fmt_position(seconds: float) -> str:
    """A replay position to the tenth: ``65.34`` → ``'1:05.3'``, ``4000`` → ``'1:06:40.0'``."""
    tenths = max(0, int(round(float(seconds) * 10)))
    return f"{fmt_elapsed(tenths // 10)}.{tenths % 10}"


def fmt_speed(factor: float) -> str:
    """A playback speed: ``2`` → ``'×2'``, ``0.125`` → ``'×0.125'``."""
    return f"×{float(factor):g}"
