"""The unit of work every request source yields: one prompt to prefill, with its arrival time.

A :class:`Request` is produced by :class:`workload.synthetic.SyntheticWorkload` (shared-prefix
scenarios) or :class:`workload.trace.TraceWorkload` (replay of a Mooncake FAST'25 trace,
``kvcache-ai/Mooncake FAST25-release/traces``). The consumer splits ``tokens`` into KV pages of
``page_tokens`` tokens, looks the leading pages up in the store (prefix hit), prefills the rest and
publishes the pages that lie within ``cacheable_tokens``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Request"]


@dataclass(frozen=True, slots=True)
class Request:
    """One prompt to prefill.

    Attributes:
        req_id: 0, 1, 2, ... in issue order within one workload.
        tokens: shape ``(n,)``, dtype ``uint32``: the prompt's token ids (all ``< 2**31``). Sources hand
            out read-only arrays; copy before modifying.
        arrival_s: seconds since workload start at which the request should be issued; ``None`` means
            closed loop (issue as soon as a slot is free).
        cacheable_tokens: number of tokens from the start that may be published to / hit in the store.
            Trace replay: only the full 512-token blocks (``(input_length // block) * block``);
            synthetic scenarios: ``len(tokens)``.
        scenario: where the request came from, e.g. ``"shared-system-prompt"`` or
            ``"trace:synthetic_trace.jsonl"``.
        labels: extra ``(key, value)`` string pairs, e.g. ``(("conversation", "12"), ("turn", "3"))`` or
            ``(("row", "57"),)``; use :meth:`label` to read one. ``output_tokens``: the tokens the request
            generates after its prompt (:attr:`output_tokens`).
    """

    req_id: int
    tokens: np.ndarray
    arrival_s: float | None
    cacheable_tokens: int
    scenario: str
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def n_tokens(self) -> int:
        """Prompt length in tokens (``len(tokens)``)."""
        return int(self.tokens.shape[0])

    @property
    def output_tokens(self) -> int:
        """Tokens the request generates after its prompt (decode): its ``output_tokens`` label (a trace row's
        ``output_length``, a scenario's ``WorkloadSpec.output_tokens``); 0 when it has none."""
        return int(self.label("output_tokens") or 0)

    def label(self, key: str, default: str | None = None) -> str | None:
        """Return the value of the first label called ``key``, or ``default`` if there is none."""
        for k, v in self.labels:
            if k == key:
                return v
        return default


# --- counter-based token generation shared by the request sources (private to :mod:`workload`) -------

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB


def _mix_int(x: int) -> int:
    """SplitMix64 finaliser on a Python int (taken mod 2**64); a bijection of 64-bit values."""
    z = (x + _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * _C1) & _MASK64
    z = ((z ^ (z >> 27)) * _C2) & _MASK64
    return z ^ (z >> 31)


def _key(*parts: int) -> int:
    """Fold any number of non-negative ints of any size into one well-mixed 64-bit key."""
    h = 0x6B7674756921  # "kvtui!"
    for p in parts:
        p = int(p)
        if p < 0:
            raise ValueError(f"key part must be >= 0, got {p}")
        while True:  # every 64-bit limb, plus a terminator so that (1, 0) != (1,) != (2**64,)
            h = _mix_int(h ^ (p & _MASK64))
            p >>= 64
            if not p:
                break
        h = _mix_int(h ^ 0xFFFF)
    return h


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised SplitMix64 finaliser on a uint64 array (wrapping arithmetic)."""
    z = x + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_C1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_C2)
    return z ^ (z >> np.uint64(31))


def _counter_tokens(key: int, start: int, n: int, low: int, bits: int) -> np.ndarray:
    """Tokens ``start .. start+n-1`` of the endless pseudo-random sequence named ``key``.

    Returns shape ``(n,)`` uint32 with values in ``[low, low + 2**bits)``. Counter-based, so token ``i``
    does not depend on how many tokens were asked for: the first ``m`` tokens of a sequence are a fixed
    prefix of it.
    """
    i = np.arange(start, start + n, dtype=np.uint64)
    z = _splitmix64(i ^ np.uint64(key & _MASK64))
    return (np.uint64(low) + (z >> np.uint64(64 - bits))).astype(np.uint32)
