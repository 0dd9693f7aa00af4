"""Synthetic shared-prefix prompt workloads with knobs that can be turned while a run is going.

Four scenarios (:data:`SCENARIOS`):

``shared-system-prompt``
    A pool of ``pool`` system prompts; each request picks one with Zipf(``zipf_s``) popularity over the
    pool ranks (rank 0 most popular) and appends a unique user part. Labels: ``pool``, ``shared_tokens``.
``few-shot``
    ``pool`` long few-shot templates (the shared part) followed by a short unique question. Each template
    is one task, so templates are picked uniformly at random (seeded), not by Zipf. Labels as above.
``multi-turn``
    ``pool`` concurrent conversations served round-robin. A conversation's first turn is a system prompt
    common to *all* conversations (``overlap`` of the turn, page-aligned) plus a unique user message;
    each next turn is the previous prompt + an assistant reply (``n // 4`` tokens) + a new user message
    (``n // 4`` tokens), where ``n`` is this request's drawn prompt length, so the prefix grows turn by
    turn by about ``prompt_tokens / 2``. A conversation restarts (new conversation id, first turn again)
    when its next prompt would exceed ``4 * prompt_tokens``. Labels: ``conversation``, ``turn``,
    ``slot``, ``shared_tokens``.
``random``
    No sharing: every token is fresh from the seeded generator (prefix hit rate ~0).

Every request also carries the label ``output_tokens``: the tokens it would generate after its prompt
(:attr:`WorkloadSpec.output_tokens`, a few hundred by default), which a saved trace writes as ``output_length``.

Exact overlap. For ``shared-system-prompt`` and ``few-shot`` a prompt of ``n`` tokens shares exactly
``floor(overlap * n / page_tokens) * page_tokens`` leading tokens with its pool entry (e.g. 75 % of 1,024
tokens with 16-token KV pages = 768 tokens = 48 pages); the shared tokens of entry ``k`` are a fixed prefix
of one endless token sequence, so two prompts from the same entry with different lengths still share the
smaller of their two shared parts. Shared (pool) tokens come from ``[2**30, 2**31)``, unique tokens from
``[2**29, 2**30)``: a unique part can never continue a pool prefix by accident. The label
``shared_tokens`` gives the page-aligned prefix a request shares with its pool entry (or, in
``multi-turn``, with the previous turn) — its prefix hit if that was published before.

Determinism. Everything derives from ``seed``: the pool entries from ``(seed, scenario, entry)``, the
unique tokens and per-request choices (length, pool entry) from ``(seed, req_id)``, and the Poisson
arrival gaps from a separate generator seeded by ``seed``. Same seed + same sequence of
:meth:`SyntheticWorkload.update` calls → identical requests.

The idea of measuring prefix reuse on such workloads follows the Mooncake FAST'25 paper and its trace
release (``kvcache-ai/Mooncake FAST25-release/traces``), whose real traces :mod:`workload.trace` replays.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from workload.request import Request, _counter_tokens, _key

__all__ = ["SCENARIOS", "WorkloadSpec", "SyntheticWorkload", "shared_prefix_tokens", "MAX_OUTPUT_TOKENS"]

SCENARIOS = ("shared-system-prompt", "few-shot", "multi-turn", "random")
"""Valid values of :attr:`WorkloadSpec.scenario`."""

MAX_PROMPT_TOKENS = 1 << 20
"""Upper bound on :attr:`WorkloadSpec.prompt_tokens` (tokens), to keep memory bounded."""

MAX_POOL = 1 << 20
"""Upper bound on :attr:`WorkloadSpec.pool`."""

MAX_OUTPUT_TOKENS = 1 << 20
"""Upper bound on :attr:`WorkloadSpec.output_tokens` (tokens)."""

_SHARED_LOW, _SHARED_BITS = 1 << 30, 30  # pool (shared) tokens: [2**30, 2**31)
_UNIQUE_LOW, _UNIQUE_BITS = 1 << 29, 29  # per-request tokens:    [2**29, 2**30)

# domain tags for key derivation
_D_UNIQUE, _D_CHOICE, _D_ARRIVAL = 1, 2, 3
_D_POOL = {"shared-system-prompt": 10, "few-shot": 11, "multi-turn": 12}


def shared_prefix_tokens(n: int, overlap: float, page_tokens: int) -> int:
    """Shared tokens of an ``n``-token prompt: ``floor(overlap * n / page_tokens) * page_tokens``.

    A tolerance of 1e-9 pages absorbs binary rounding (``0.7 * 160 / 16`` counts as 7 pages).
    """
    pages = math.floor(overlap * n / page_tokens + 1e-9)
    return max(0, min(pages * page_tokens, (n // page_tokens) * page_tokens))


def _is_int(x: object) -> TypeGuard[int | np.integer]:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_num(x: object) -> bool:
    return (_is_int(x) or isinstance(x, (float, np.floating))) and math.isfinite(float(x))


@dataclass(frozen=True)
class WorkloadSpec:
    """Knobs of a synthetic workload (all can be changed mid-run with :meth:`SyntheticWorkload.update`).

    Attributes:
        scenario: one of :data:`SCENARIOS`.
        overlap: fraction in ``[0, 1]`` of each prompt's tokens that is shared prefix, realised exactly to
            KV-page granularity (see the module docstring). In ``multi-turn`` it applies to first turns.
        pool: number of system prompts / few-shot templates / concurrent conversations (>= 1).
        rate: requests per second (req/s) of Poisson arrivals; ``0`` = closed loop (``arrival_s`` None).
        prompt_tokens: mean prompt length in tokens (>= 1); in ``multi-turn`` the first-turn length.
        length_spread: ``0`` = every prompt exactly ``prompt_tokens``; else lengths are uniform in
            ``prompt_tokens ± length_spread * prompt_tokens`` (rounded, at least 1); in ``[0, 1]``.
        page_tokens: KV page size in tokens (>= 1) to which the overlap is aligned.
        zipf_s: Zipf exponent (>= 0) of pool popularity in ``shared-system-prompt``; 0 = uniform.
        seed: non-negative int from which everything is derived.
        output_tokens: tokens each request generates after its prompt (decode), in ``[1, MAX_OUTPUT_TOKENS]``:
            every request's ``output_tokens`` label, a saved trace's ``output_length`` (which aiperf sends as
            ``max_tokens``: a serving engine refuses 0). Prompts do not depend on it.
    """

    scenario: str = "shared-system-prompt"
    overlap: float = 0.75
    pool: int = 8
    rate: float = 0.0
    prompt_tokens: int = 1024
    length_spread: float = 0.0
    page_tokens: int = 16
    zipf_s: float = 1.1
    seed: int = 0
    output_tokens: int = 256

    def validate(self) -> None:
        """Raise ``ValueError`` with a one-line message if any knob is out of range."""
        if self.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.scenario!r} (valid: {', '.join(SCENARIOS)})")
        if not _is_num(self.overlap) or not 0.0 <= self.overlap <= 1.0:
            raise ValueError(f"overlap must be a fraction between 0 and 1, got {self.overlap!r}")
        if not _is_int(self.pool) or not 1 <= self.pool <= MAX_POOL:
            raise ValueError(f"pool must be an integer between 1 and {MAX_POOL}, got {self.pool!r}")
        if not _is_num(self.rate) or self.rate < 0:
            raise ValueError(f"rate must be >= 0 requests per second (0 = closed loop), got {self.rate!r}")
        if not _is_int(self.prompt_tokens) or not 1 <= self.prompt_tokens <= MAX_PROMPT_TOKENS:
            raise ValueError(
                f"prompt_tokens must be an integer between 1 and {MAX_PROMPT_TOKENS} tokens, got {self.prompt_tokens!r}"
            )
        if not _is_num(self.length_spread) or not 0.0 <= self.length_spread <= 1.0:
            raise ValueError(f"length_spread must be between 0 and 1, got {self.length_spread!r}")
        if not _is_int(self.page_tokens) or self.page_tokens < 1:
            raise ValueError(f"page_tokens must be an integer >= 1 tokens, got {self.page_tokens!r}")
        if not _is_num(self.zipf_s) or self.zipf_s < 0:
            raise ValueError(f"zipf_s must be >= 0, got {self.zipf_s!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        if not _is_int(self.output_tokens) or not 1 <= self.output_tokens <= MAX_OUTPUT_TOKENS:
            raise ValueError(f"output_tokens must be an integer between 1 and {MAX_OUTPUT_TOKENS} tokens, "
                             f"got {self.output_tokens!r}")


@dataclass
class _Conversation:
    conv_id: int
    turn: int
    tokens: np.ndarray


class SyntheticWorkload:
    """Endless, seeded stream of :class:`~workload.request.Request` for one :class:`WorkloadSpec`.

    ``next_request()`` / iteration yields requests with ``req_id`` 0, 1, 2, ...; knob changes made with
    :meth:`update` apply from the next request. Not thread-safe: drive it from one thread.
    """

    def __init__(self, spec: WorkloadSpec | None = None):
        spec = spec if spec is not None else WorkloadSpec()
        spec.validate()
        self._spec = spec
        self._next_id = 0
        self._clock_s = 0.0
        self._arrival_rng = self._new_arrival_rng(spec.seed)
        self._zipf_cache: tuple[tuple[int, float], np.ndarray] | None = None
        self._convs: dict[int, _Conversation] = {}
        self._next_conv_id = 0
        self._rr = 0

    @staticmethod
    def _new_arrival_rng(seed: int) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(_key(seed, _D_ARRIVAL)))

    @property
    def spec(self) -> WorkloadSpec:
        """The current knobs."""
        return self._spec

    def update(self, *, now_s: float | None = None, **changes: Any) -> WorkloadSpec:
        """Change knobs (e.g. ``overlap=0.5, rate=20``); validated, applied from the next request.

        Raises ``ValueError`` for an unknown knob or a bad value (the old spec then stays in force).
        Changing ``rate`` applies to the next inter-arrival gap, counted from the last Poisson arrival (0 s if
        there was none) or, when ``now_s`` (seconds on the arrival clock now: the driver's time since the run
        began, pauses excluded) is given and later, from ``now_s``: arrivals are due against that clock, so
        a clock left behind by a closed-loop stretch (where it does not advance) or by a rate the run could
        not keep up with would otherwise be caught up as a burst. Exponential gaps are memoryless, so the
        arrivals from ``now_s`` are the same Poisson process. Changing ``seed`` re-seeds the arrival
        generator and all later per-request draws; shrinking ``pool`` in ``multi-turn`` drops the
        conversations of the removed slots. Returns the new spec.
        """
        valid = [f.name for f in dataclasses.fields(WorkloadSpec)]
        for name in changes:
            if name not in valid:
                raise ValueError(f"unknown workload knob {name!r} (valid: {', '.join(valid)})")
        new = dataclasses.replace(self._spec, **changes)
        new.validate()
        old = self._spec
        self._spec = new
        if new.seed != old.seed:
            self._arrival_rng = self._new_arrival_rng(new.seed)
        if new.rate != old.rate and now_s is not None and now_s > self._clock_s:
            self._clock_s = float(now_s)
        if new.pool < old.pool:
            for slot in sorted(self._convs):
                if slot >= new.pool:
                    del self._convs[slot]
        return new

    def __iter__(self) -> Iterator[Request]:
        while True:
            yield self.next_request()

    def next_request(self) -> Request:
        """Build the next request from the current spec."""
        spec = self._spec
        req_id = self._next_id
        self._next_id += 1
        rng = np.random.Generator(np.random.PCG64(_key(spec.seed, _D_CHOICE, req_id)))
        n = self._draw_length(rng, spec)
        if spec.scenario == "random":
            tokens = self._unique(spec, req_id, 0, n)
            labels: tuple[tuple[str, str], ...] = (("shared_tokens", "0"),)
        elif spec.scenario == "multi-turn":
            tokens, labels = self._multi_turn(spec, req_id, n)
        else:
            if spec.scenario == "shared-system-prompt":
                entry = self._zipf_pick(rng, spec)
            else:  # few-shot: every template equally popular
                entry = int(rng.integers(spec.pool))
            shared = shared_prefix_tokens(n, spec.overlap, spec.page_tokens)
            tokens = np.concatenate(
                [self._pool_tokens(spec, spec.scenario, entry, shared), self._unique(spec, req_id, 0, n - shared)]
            )
            labels = (("pool", str(entry)), ("shared_tokens", str(shared)))
        labels += (("output_tokens", str(spec.output_tokens)),)
        tokens.flags.writeable = False
        if spec.rate > 0:
            self._clock_s += float(self._arrival_rng.exponential(1.0 / spec.rate))
            arrival: float | None = self._clock_s
        else:
            arrival = None
        return Request(
            req_id=req_id,
            tokens=tokens,
            arrival_s=arrival,
            cacheable_tokens=int(tokens.shape[0]),
            scenario=spec.scenario,
            labels=labels,
        )

    # -- helpers ---------------------------------------------------------------------------------------

    @staticmethod
    def _draw_length(rng: np.random.Generator, spec: WorkloadSpec) -> int:
        u = float(rng.random())  # always drawn so the stream does not depend on length_spread
        if spec.length_spread == 0:
            return spec.prompt_tokens
        delta = spec.length_spread * spec.prompt_tokens * (2.0 * u - 1.0)
        return max(1, int(round(spec.prompt_tokens + delta)))

    def _zipf_pick(self, rng: np.random.Generator, spec: WorkloadSpec) -> int:
        u = float(rng.random())
        cache_key = (spec.pool, float(spec.zipf_s))
        if self._zipf_cache is None or self._zipf_cache[0] != cache_key:
            weights = np.arange(1, spec.pool + 1, dtype=np.float64) ** -float(spec.zipf_s)
            cdf = np.cumsum(weights)
            self._zipf_cache = (cache_key, cdf / cdf[-1])
        cdf = self._zipf_cache[1]
        return min(int(np.searchsorted(cdf, u, side="right")), spec.pool - 1)

    @staticmethod
    def _pool_tokens(spec: WorkloadSpec, scenario: str, entry: int, n: int) -> np.ndarray:
        """First ``n`` tokens of pool entry ``entry`` of ``scenario`` (a fixed endless sequence)."""
        return _counter_tokens(_key(spec.seed, _D_POOL[scenario], entry), 0, n, _SHARED_LOW, _SHARED_BITS)

    @staticmethod
    def _unique(spec: WorkloadSpec, req_id: int, start: int, n: int) -> np.ndarray:
        """``n`` tokens unique to request ``req_id`` (from offset ``start`` of its own sequence)."""
        return _counter_tokens(_key(spec.seed, _D_UNIQUE, req_id), start, n, _UNIQUE_LOW, _UNIQUE_BITS)

    def _multi_turn(self, spec: WorkloadSpec, req_id: int, n: int) -> tuple[np.ndarray, tuple[tuple[str, str], ...]]:
        slot = self._rr % spec.pool
        self._rr += 1
        conv = self._convs.get(slot)
        reply, message = max(1, n // 4), max(1, n // 4)
        if conv is not None and conv.tokens.shape[0] + reply + message <= 4 * spec.prompt_tokens:
            prev = conv.tokens.shape[0]
            tokens = np.concatenate([conv.tokens, self._unique(spec, req_id, 0, reply + message)])
            conv.tokens, conv.turn = tokens, conv.turn + 1
            shared = (prev // spec.page_tokens) * spec.page_tokens
        else:
            shared = shared_prefix_tokens(n, spec.overlap, spec.page_tokens)
            tokens = np.concatenate(
                [self._pool_tokens(spec, "multi-turn", 0, shared), self._unique(spec, req_id, 0, n - shared)]
            )
            conv = _Conversation(conv_id=self._next_conv_id, turn=1, tokens=tokens)
            self._next_conv_id += 1
            self._convs[slot] = conv
        labels = (
            ("conversation", str(conv.conv_id)),
            ("turn", str(conv.turn)),
            ("slot", str(slot)),
            ("shared_tokens", str(shared)),
        )
        return tokens, labels
