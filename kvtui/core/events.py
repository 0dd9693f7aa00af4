"""Plain-data events the engine emits: one :class:`RequestResult` per request, :class:`EngineEvent` for the rest.

These are the only things that flow from the engine to metrics and views (the one-way flow: workload →
engine → events → metrics → views). They hold no store objects and pickle/JSON cleanly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kvtui.core.misses import counts


@dataclass
class RequestResult:
    """What happened to one request. Units: tokens, bytes, milliseconds; ``t_*`` are seconds since the
    engine started (monotonic). ``states``: one :class:`kvtui.core.pages.PageState` value per page cell
    (full cacheable pages, then partial/uncacheable cells). ``codes``: failing store return codes by value.

    ``tokens_hit`` counts only pages reloaded from the store before this request computed anything, so a
    request never counts pages it published itself (and retries are not hits).

    ``reasons``: why each full page missed, one :class:`kvtui.core.misses.MissReason` byte per full page
    (``pages_total`` of them, 0 for a hit; :mod:`kvtui.core.misses` gives the rule); ``b""`` when the engine
    kept no key history (a source that does not classify).
    """

    req_id: int
    scenario: str
    n_tokens: int
    cacheable_tokens: int
    page_tokens: int
    page_bytes: int
    pages_total: int
    pages_hit: int
    states: bytes
    pages_published: int = 0
    pages_already_present: int = 0
    pages_failed: int = 0
    bytes_loaded: int = 0
    bytes_written: int = 0
    verified: int = 0
    mismatches: int = 0
    probe_ms: float = 0.0
    read_ms: float = 0.0
    verify_ms: float = 0.0
    publish_probe_ms: float = 0.0
    compute_ms: float = 0.0
    put_ms: float = 0.0
    codes: dict[int, int] = field(default_factory=dict)
    arrival_s: float | None = None
    t_start: float = 0.0
    t_end: float = 0.0
    labels: tuple[tuple[str, str], ...] = ()
    keys: tuple[str, ...] = ()  # the first and last page key (store keys of the cacheable pages; () when none)
    decode_worker: int = 0  # index of the decode worker that reloaded it (kvtui.core.topology.worker_name)
    prefill_worker: int = 0  # index of the prefill worker that published it
    bytes_local: int = 0  # of bytes_loaded, read from the decode worker's own segment (--segment-on decode)
    pages_hit_disk: int = 0  # of pages_hit, read from the store's disk tier (cells HIT_DISK)
    disk_read_ms: float = 0.0  # of read_ms, reading those pages
    pages_replicated: int = 0  # of pages_hit, those the store held in two memory replicas or more (hot keys)
    reasons: bytes = b""  # one MissReason per full page (see the class docstring)
    keys_forgotten: int = 0  # keys the miss reasons' history dropped since the previous result (kvtui.core.misses)

    @property
    def tokens_hit(self) -> int:
        """Prompt tokens whose prefill was skipped (reloaded from the store)."""
        return self.pages_hit * self.page_tokens

    def miss_counts(self) -> dict[str, int]:
        """Missed full pages by reason name (:data:`kvtui.core.misses.NAMES`, every reason, 0 included);
        empty when the request has full pages but carries no reasons (not classified)."""
        return counts(self.reasons) if self.reasons or not self.pages_total else {}

    @property
    def reload_ms(self) -> float:
        """Prefix reload latency: probe + read (verification excluded, reported separately)."""
        return self.probe_ms + self.read_ms

    @property
    def publish_ms(self) -> float:
        """Publish latency: probe + put of the absent pages (page computation excluded)."""
        return self.publish_probe_ms + self.put_ms

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (states as a list of ints)."""
        d = asdict(self)
        d["states"] = list(self.states)
        d["reasons"] = list(self.reasons)
        d["labels"] = [list(kv) for kv in self.labels]
        d["keys"] = list(self.keys)
        return d


@dataclass
class EngineEvent:
    """Something other than a request result: ``kind`` is one of ``control``, ``error``, ``outage``,
    ``info``; ``t`` seconds since engine start; ``text`` one line for the event log."""

    kind: str
    t: float
    text: str
    data: dict[str, Any] = field(default_factory=dict)  # JSON-ready details, e.g. {"repeat": 3}
