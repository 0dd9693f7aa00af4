"""The keys of a frame's panels, defined once for the samplers that fill them and the views that read them.

The panels stay plain dicts, so a frame records to JSON and a session replays without kvtui's classes; these
``TypedDict`` s name their keys and units. Every key is optional (``total=False``): a panel carries what its
source knows.
"""

from __future__ import annotations

from typing import TypedDict


class StoreScrape(TypedDict, total=False):
    """The master's ``/metrics`` scrape (:mod:`kvtui.engine.samplers`), which grants no lease. ``up``: the
    last scrape answered (None before the first); ``keys``, ``used_bytes``, ``capacity_bytes``,
    ``evicted_keys``, ``alloc_failures``, ``clients``: the master's gauges (Mooncake ``master_*`` metrics);
    ``put_rps`` / ``get_rps``: put and get requests per second between the last two scrapes."""

    up: bool | None
    keys: int
    used_bytes: int
    capacity_bytes: int
    evicted_keys: int
    alloc_failures: int
    clients: int
    put_rps: float
    get_rps: float


class ProcRow(TypedDict, total=False):
    """One process kvtui runs: ``name`` (kvtui, prefill, decode, master, metadata, store), ``pid``,
    ``cpu_percent`` (of one CPU, since the last sample), ``rss_bytes``, ``alive``."""

    name: str
    pid: int
    cpu_percent: float
    rss_bytes: int
    alive: bool


class WorkloadPanel(TypedDict, total=False):
    """The workload now. ``kind``: ``synthetic`` or ``trace``. Synthetic: ``scenario``, ``overlap``
    (fraction 0–1), ``pool``, ``rate`` (req/s, 0 = closed loop), ``prompt_tokens``, ``layout`` (preset name
    or ``custom``). Trace: ``name`` (file name), ``done`` / ``total`` (rows), ``complete``."""

    kind: str
    scenario: str
    overlap: float
    pool: int
    rate: float
    prompt_tokens: int
    layout: str
    name: str
    done: int
    total: int
    complete: bool


class ReplayStatus(TypedDict, total=False):
    """Where a replay is: ``position`` / ``length`` (seconds of the recording), ``speed`` (×), ``paused``,
    ``ended``."""

    position: float
    length: float
    speed: float
    paused: bool
    ended: bool


class FrameStatus(TypedDict, total=False):
    """The run's state. ``mode``: ``live`` or ``replay``; ``store_mode``: ``embedded`` or ``attached``;
    ``store_up``: the master's last scrape answered (None before the first); ``paused``; ``layout``: the page
    layout in words; ``finished``: the workload ended; ``error``: why the run stopped; ``outage``: the master
    does not answer; ``recording`` / ``record_path``; ``window_s``: length of the latency window (s);
    ``replay``: :class:`ReplayStatus` in replay mode."""

    mode: str
    store_mode: str
    store_up: bool | None
    paused: bool
    layout: str
    finished: bool
    error: str
    outage: bool
    recording: bool
    record_path: str
    window_s: float
    replay: ReplayStatus
