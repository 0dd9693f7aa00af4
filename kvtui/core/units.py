"""Units: byte sizes in and out (binary and decimal prefixes), token counts in (decimal suffixes), durations in
(``90s``, ``2m``, ``1h30m``), and the median of a sample."""

from __future__ import annotations

import argparse
import re
from typing import Callable, Sequence

from kvtui.core.errors import KvtuiError, bad_value


def format_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'`` (binary units)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 1000**2, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1000**3, "gib": 1 << 30, "t": 1 << 40, "tb": 1000**4, "tib": 1 << 40}


def parse_bytes(text: str) -> int:
    """Parse a size such as ``1GiB``, ``512MB``, ``64m`` or ``4096`` into bytes (``ValueError`` if bad).

    ``K/M/G/T`` and ``KiB/MiB/GiB/TiB`` are powers of 1024; ``KB/MB/GB/TB`` are powers of 1000.
    """
    s = str(text).strip().replace(" ", "")
    i = len(s)
    while i and not s[i - 1].isdigit() and s[i - 1] != ".":
        i -= 1
    number, unit = s[:i], s[i:].lower()
    if unit not in _UNITS or not number:
        raise ValueError(f"not a size: {text!r} (use e.g. 1GiB, 512MiB, 4096)")
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"not a size: {text!r} (use e.g. 1GiB, 512MiB, 4096)") from None
    if value <= 0:
        raise ValueError(f"size must be positive: {text!r}")
    return int(value)


def split_bytes(total: int, parts: int) -> list[int]:
    """``total`` bytes in ``parts`` (at least 1) shares that differ by at most one byte and add up to ``total``
    exactly (the first ``total % parts`` get the extra byte): a store split over several segments."""
    each, extra = divmod(int(total), max(1, int(parts)))
    return [each + (i < extra) for i in range(max(1, int(parts)))]


def median(values: Sequence[float]) -> float:
    """The median (p50) of ``values`` (the mean of the two middle values for an even count); ``0.0`` for an
    empty sequence."""
    s = sorted(values)
    n = len(s)
    if n == 0:
        return 0.0
    return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


_TOKEN_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_TOKENS_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmg]?)\s*$", re.IGNORECASE)


def parse_tokens(text: str, what: str = "capacity") -> int:
    """A token count such as ``4096``, ``500k``, ``1M``, ``1.5M``, ``2G`` (decimal suffixes: 1M = 10^6
    tokens; ``_`` separators allowed). ``ValueError`` (``bad {what} …``, one line) on anything else."""
    m = _TOKENS_RE.match(str(text).replace("_", ""))
    if not m:
        raise ValueError(f"bad {what} {text!r}: expected a token count like 4096, 500k, 1M or 2G")
    number, suffix = m.groups()
    mult = _TOKEN_SUFFIX[suffix.lower()]
    return int(round(float(number) * mult)) if "." in number else int(number) * mult


def parse_token_list(values: Sequence[str] | None, flag: str = "--capacity", allow_zero: bool = False) -> list[int]:
    """Token counts of a repeatable flag whose values may be comma-separated lists (``1M,3M`` ``10M``), in
    the order given; ``ValueError`` (one line naming ``flag``) on an empty item, a bad count, a negative one or 0
    (a cache of no tokens holds nothing; ``allow_zero``: 0 is taken, e.g. no disk tier)."""
    out: list[int] = []
    least = 0 if allow_zero else 1
    floor = "0 tokens or more" if allow_zero else "at least 1 token"
    for value in values or []:
        for part in str(value).split(","):
            if not part.strip():
                raise ValueError(f"bad {flag} {value!r}: empty item in the comma-separated list")
            if part.strip().startswith("-"):
                raise ValueError(f"{flag} must be {floor}, got {part.strip()}")
            n = parse_tokens(part, flag)
            if n < least:
                raise ValueError(f"{flag} must be {floor}, got {part.strip()}")
            out.append(n)
    return out


_DURATION = re.compile(r"^(?:(?P<h>\d+(?:\.\d*)?)h)?(?:(?P<m>\d+(?:\.\d*)?)m)?(?:(?P<s>\d+(?:\.\d*)?)s?)?$")


def parse_duration(text: str, flag: str) -> float:
    """Seconds of ``text``: ``90``, ``90s``, ``1.5``, ``30m``, ``2h``, ``1h30m``; ``KvtuiError`` naming ``flag``."""
    s = str(text).strip().lower()
    m = _DURATION.match(s)
    if not s or not m or not any(m.groupdict().values()):
        raise KvtuiError(f"{flag} must be a duration such as 2h, 30m, 90s, 1h30m or seconds, got {text!r}")
    return sum(float(m.group(k) or 0) * mult for k, mult in (("h", 3600), ("m", 60), ("s", 1)))


def fraction_arg(scale: float = 1.0) -> Callable[[str], float]:
    """argparse ``type`` of a fraction flag: a number in the flag's own unit, or a percentage with a ``%`` sign;
    ``scale``: the flag's unit for a whole (100 for a flag in percent, 1 for a fraction): ``--overlap 50%`` and
    ``--overlap 50`` are 50, ``--mfu 40%`` and ``--mfu 0.4`` are 0.4. Range checks are the flag's own."""
    def parse(text: str) -> float:
        s = str(text).strip()
        percent = s.endswith("%")
        try:
            value = float(s[:-1].strip() if percent else s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number or a percentage such as 50%, got {text!r}") from None
        return round(value * scale / 100.0, 9) if percent else value

    return parse


def duration_arg(text: str) -> float:
    """argparse ``type`` of a ``--duration`` in seconds that also takes units (:func:`parse_duration`)."""
    try:
        return parse_duration(text, "--duration")
    except KvtuiError:
        raise argparse.ArgumentTypeError(
            f"must be a duration such as 90s, 2m, 1h30m or seconds, got {text!r}") from None


MAX_SIZE = (1000, 500)
"""The largest ``--size`` (columns, rows) of a headless screen or an export: a render's time and memory grow
with its cells, and a size far beyond any screen's could take all of the machine's memory."""


def parse_size(text: str) -> tuple[int, int]:
    """``--size COLSxROWS`` (e.g. ``120x40``) as ``(columns, rows)``; ``KvtuiError`` if malformed, not positive
    or beyond :data:`MAX_SIZE`."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise KvtuiError(f"--size must look like 120x40, got {text!r}") from None
    if w < 1 or h < 1:
        raise bad_value("--size", "positive", text)
    if w > MAX_SIZE[0] or h > MAX_SIZE[1]:
        raise KvtuiError(f"--size {w}x{h} is beyond the largest screen, {MAX_SIZE[0]}x{MAX_SIZE[1]} cells")
    return w, h
