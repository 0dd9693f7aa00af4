"""A deterministic, store-less frame source for tests, snapshot tests, and the SVG of ``kvtui report``.

:class:`DemoSource` feeds a real :class:`~kvtui.metrics.aggregate.Aggregator` with hand-made
:class:`~kvtui.core.events.RequestResult` s of a shared-prefix workload on a simulated clock (each ``frame()``
call advances it by ``tick_s``), so every figure on screen comes from the same code path as a live run.
:class:`DemoController` turns the knobs of a DemoSource through the same typed controls
(:mod:`kvtui.core.controls`) as the live session. Nothing here touches a store or an engine.

``DemoSource(trace="synthetic")`` replays a shipped FAST'25 trace instead (a real
:class:`~workload.trace.TraceWorkload`: its rows, prefix groups, ideal hits and speed), against a simulated
LRU store that holds a part of the trace's blocks, so the achieved hit rate falls short of the ideal one.

``DemoSource(disk_bytes=…)`` gives the simulated store a disk tier: the pages it evicts from DRAM are offloaded,
and the hits on a colder prefix come partly or wholly from disk (HIT_DISK, slower reads), so every view of the
tiers has something to show; without it the frames are exactly those of a store with one tier.

``DemoSource(replicate_hot=True)`` gives it hot-key replication: once a prefix's shared pages have been reloaded
:data:`HOT_READS` times, the master "copies" each to a second segment, and the hits on them count as hits with a
hot replica; the Store panel gets the copies started and done.

``python -m kvtui.testing.demo [--static | --trace NAME | --replay FILE] [--headless --duration S --screenshot
PATH --size WxH]`` runs the monitor on it (``--static``: one fixed fixture frame, as the snapshot tests use;
``--replay``: play a recorded session file, e.g. one that ctrl+r wrote from the demo; ``--disk``: a store with a
disk tier; ``--hot``: one that replicates hot keys), e.g. to look at a layout
change at once:

    python -m kvtui.testing.demo --static --headless --duration 0.5 --size 120x40 --screenshot /tmp/demo.svg

(The project's screenshots come from live runs instead: ``make screenshots``.)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, cast

from kvtui.core.codes import CONTENT_MISMATCH, NO_AVAILABLE_HANDLE, OBJECT_NOT_FOUND
from kvtui.core.controls import Control, SetKnob, SetLayout, SetTraceSpeed
from kvtui.core.events import EngineEvent, RequestResult
from kvtui.core.layout import PRESETS, PageLayout
from kvtui.core.misses import MissTracker
from kvtui.core.pages import PageState as S
from kvtui.core.panels import WorkloadPanel
from kvtui.metrics.aggregate import Aggregator
from kvtui.metrics.frame import Frame
from kvtui.metrics.producer import BuiltOnRead

if TYPE_CHECKING:
    from kvtui.session.writer import SessionWriter
    from workload.trace import TraceWorkload

TRACE_LAYOUT = PageLayout(layers=1, kv_heads=1, head_dim=1, page_tokens=512, elem_bytes=1)  # one page a block
TRACE_CAPACITY = 0.25  # the simulated store holds this share of a trace's distinct blocks (LRU)
DEMO_DISK_BYTES = 64 << 30  # --disk: the simulated store's disk tier
HOT_READS = 3  # --hot: a prefix's shared pages are copied to a second segment once reloaded this many times


def demo_key(model: str, *parts: int) -> str:
    """A store key of the demo's shape (``mc/ollama/<model>/<32 hex>``) for a page named by ``parts``."""
    return f"mc/ollama/{model}/" + hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


class DemoSource(BuiltOnRead):
    """Synthetic shared-prefix traffic, ``per_tick`` requests per ``tick_s`` of simulated time (seeded); with
    ``trace`` (a shipped trace's name) that trace's rows at ``speed`` (None: ``per_tick`` rows a tick);
    ``capacity_bytes``: the simulated DRAM (None: 8 GiB, or 4 GiB in front of a disk tier, so that it offloads);
    ``disk_bytes``: a disk tier of that size behind it (synthetic traffic; 0: none); ``replicate_hot``: the simulated
    master copies hot prefixes' pages to a second segment (synthetic traffic)."""

    def __init__(self, seed: int = 7, *, tick_s: float = 0.1, per_tick: int = 2, layout: PageLayout | None = None,
                 capacity_bytes: int | None = None, rows: int = 64, trace: str | None = None, speed: float | None = 8.0,
                 disk_bytes: int = 0, replicate_hot: bool = False):
        self.rng = random.Random(seed)
        self.layout = layout or (TRACE_LAYOUT if trace else PRESETS["seed"])
        self.t = 0.0
        self.tick_s, self.per_tick = tick_s, per_tick
        self.disk = disk_bytes
        self.agg = Aggregator(rows=rows, history=600, window_s=30.0, clock=lambda: self.t, tiered=bool(disk_bytes),
                              replicated=replicate_hot)
        self.hot = replicate_hot
        self.reads: dict[int, int] = {}  # --hot: reloads of each prefix so far
        self.copies = 0  # --hot: pages copied to a second segment
        self.workload: WorkloadPanel = {"kind": "synthetic", "scenario": "shared-system-prompt", "overlap": 0.75,
                                        "pool": 8, "rate": 20.0, "prompt_tokens": 2048}
        self.trace: TraceWorkload | None = None
        if trace is not None:
            self._start_trace(trace, speed)
        self.paused = False
        self.capacity = capacity_bytes if capacity_bytes is not None else (4 << 30 if disk_bytes else 8 << 30)
        self.published: set[tuple[int, int]] = set()  # (pool prefix, page) in the store
        self.stored_pages = 0
        self.evicted = 0
        self.req_id = 0
        self.misses = MissTracker()  # the miss reasons of each result, as the engine gives them
        self.alloc_failures = 0
        self._last_rates: dict = {}
        self.writer: SessionWriter | None = None  # while recording (DemoController.toggle_recording)
        self.agg.event(EngineEvent("info", 0.0, "embedded store up: master 127.0.0.1:50051, 8.0 GiB segment"))

    # -- a trace -------------------------------------------------------------------------------------------
    def _start_trace(self, name: str, speed: float | None) -> None:
        from kvtui.core.traces import resolve_trace
        from workload.trace import TraceWorkload, read_trace

        rows, _ = read_trace(resolve_trace(name))
        self._rows = rows
        self.trace = TraceWorkload(rows, speed=speed, name=name, tokens=False)  # (the simulation needs no tokens)
        self._requests = iter(self.trace)
        self._next = next(self._requests, None)
        distinct = len({h for r in rows for h in r.hash_ids[: r.input_length // 512]})
        self._lru: OrderedDict[int, None] = OrderedDict()
        self._lru_blocks = max(1, int(distinct * TRACE_CAPACITY))
        self.workload = {"kind": "trace", "name": name, "done": 0, "total": len(rows), "complete": False}

    def _trace_result(self, req) -> RequestResult:
        """A trace request against the simulated LRU store: the leading cached blocks hit, the others are
        published (or already present, when a later block is still cached)."""
        pt, pb = self.layout.page_tokens, self.layout.page_bytes
        n_tokens = self._rows[req.req_id].input_length
        ids = self._rows[req.req_id].hash_ids[: req.cacheable_tokens // pt]
        lru, states, hits = self._lru, [], 0
        for h in ids:
            if h not in lru:
                break
            hits += 1
        for i, h in enumerate(ids):
            states.append(S.HIT if i < hits else (S.PRESENT if h in lru else S.PUBLISHED))
            if h in lru:
                lru.move_to_end(h)
            else:
                lru[h] = None
                if len(lru) > self._lru_blocks:
                    lru.popitem(last=False)
        if n_tokens > len(ids) * pt:
            states.append(S.PARTIAL)
        published = states.count(S.PUBLISHED)
        self.stored_pages += published
        keys = (demo_key("demo-model", ids[0]), demo_key("demo-model", ids[-1])) if ids else ()
        self.misses.begin(req.req_id, [str(h) for h in ids], self.t)  # (a trace's hash ids are prefix chains: keys)
        return RequestResult(
            req_id=req.req_id, scenario=req.scenario, n_tokens=n_tokens, cacheable_tokens=req.cacheable_tokens,
            page_tokens=pt, page_bytes=pb, pages_total=len(ids), pages_hit=hits, states=bytes(states),
            pages_published=published, pages_already_present=states.count(S.PRESENT), bytes_loaded=hits * pb,
            bytes_written=published * pb, verified=hits, probe_ms=self.rng.lognormvariate(-1.6, 0.4),
            read_ms=hits * 0.02 * self.rng.uniform(0.8, 1.5), put_ms=published * 0.03 * self.rng.uniform(0.8, 1.6),
            publish_probe_ms=0.15 if published else 0.0, labels=req.labels, keys=keys, t_start=self.t, t_end=self.t,
            reasons=self.misses.finish(req.req_id, states, self.t, self.t))

    def _trace_step(self) -> None:
        """The rows due by now (at the trace's speed), or ``per_tick`` rows as fast as possible."""
        n = 0
        while self._next is not None and (self._next.arrival_s is None and n < self.per_tick
                                          or self._next.arrival_s is not None and self._next.arrival_s <= self.t):
            self.agg.add(self._trace_result(self._next))
            self.workload["done"] += 1
            n += 1
            self._next = next(self._requests, None)
        self.workload["complete"] = self._next is None

    # -- traffic -------------------------------------------------------------------------------------------
    def _result(self) -> RequestResult:
        rng, pt, pb = self.rng, self.layout.page_tokens, self.layout.page_bytes
        self.req_id += 1
        w = self.workload
        n_tokens = int(w["prompt_tokens"] * rng.uniform(0.8, 1.25))
        pages = n_tokens // pt
        prefix = min(int(rng.paretovariate(1.2)) - 1, w["pool"] - 1)
        shared = min(pages, int(w["overlap"] * w["prompt_tokens"]) // pt)
        states: list[int] = []
        codes: dict[int, int] = {}
        hits = 0
        cached = shared and all((prefix, p) in self.published for p in range(shared))
        for p in range(pages):
            if p < shared and cached:
                states.append(S.HIT)
                hits += 1
            elif p < shared:
                present = (prefix, p) in self.published or rng.random() < 0.05
                states.append(S.PRESENT if present else S.PUBLISHED)
                self.published.add((prefix, p))
            else:
                states.append(S.PUBLISHED)
        if cached and rng.random() < 0.06:  # a page vanished between probe and read
            k = rng.randrange(shared)
            states[k:shared] = [S.EVICTED] + [S.PUBLISHED] * (shared - k - 1)
            hits, codes[OBJECT_NOT_FOUND] = k, 1
        elif cached and rng.random() < 0.02:
            k = rng.randrange(shared)
            states[k:shared] = [S.MISMATCH] + [S.PUBLISHED] * (shared - k - 1)
            hits, codes[CONTENT_MISMATCH] = k, 1
        if rng.random() < 0.05 and pages > shared:  # puts refused
            k = rng.randrange(shared, pages)
            states[k:] = [S.FAILED] * (pages - k)
            codes[NO_AVAILABLE_HANDLE] = pages - k
            self.alloc_failures += 1
            self.agg.event(EngineEvent("error", self.t, f"NO_AVAILABLE_HANDLE ×{pages - k} on publish "
                                                        f"(req {self.req_id})", {"code": NO_AVAILABLE_HANDLE}))
        elif rng.random() < 0.06:  # decode-side request: computed, not published
            states[shared:] = [S.COMPUTED] * (pages - shared)
        if n_tokens % pt:
            states.append(S.PARTIAL)
        published = states.count(S.PUBLISHED)
        self.stored_pages += published
        read_ms = hits * pb / 6e9 * 1e3 * rng.uniform(0.8, 1.6)
        put_ms = published * pb / 4e9 * 1e3 * rng.uniform(0.8, 1.8)
        disk_pages, disk_ms = 0, 0.0
        if self.disk and hits:  # a colder prefix has left DRAM for the disk tier, its later pages first
            in_dram = shared * max(0, w["pool"] - 2 * prefix) // w["pool"]
            for p in range(in_dram, hits):
                states[p] = S.HIT_DISK
            disk_pages = max(0, hits - in_dram)
            disk_ms = disk_pages * pb / 1.5e9 * 1e3 * rng.uniform(0.8, 1.6)
            read_ms = (hits - disk_pages) * pb / 6e9 * 1e3 * rng.uniform(0.8, 1.6) + disk_ms
        replicated = 0
        if self.hot and hits:  # a prefix reloaded HOT_READS times has its shared pages copied (from the next read on)
            replicated = hits - disk_pages if self.reads.get(prefix, 0) >= HOT_READS else 0
            self.reads[prefix] = self.reads.get(prefix, 0) + 1
            if self.reads[prefix] == HOT_READS:
                self.copies += shared

        def key(p: int) -> str:  # a shared page is named by its pool entry, the others by the request
            return demo_key("demo-model", prefix, p) if p < shared else demo_key("demo-model", -self.req_id, p)

        first, last = key(0), key(pages - 1)
        self.misses.begin(self.req_id, [key(p) for p in range(pages)], self.t)
        labels = (("pool", str(prefix)), ("shared_tokens", str(shared * pt))) if shared else (("shared_tokens", "0"),)
        return RequestResult(
            req_id=self.req_id, scenario=w["scenario"], n_tokens=n_tokens, cacheable_tokens=pages * pt,
            page_tokens=pt, page_bytes=pb, pages_total=pages, pages_hit=hits, states=bytes(states),
            pages_published=published, pages_already_present=states.count(S.PRESENT),
            pages_failed=states.count(S.FAILED), bytes_loaded=hits * pb, bytes_written=published * pb,
            verified=hits + states.count(S.MISMATCH), mismatches=states.count(S.MISMATCH),
            probe_ms=rng.lognormvariate(-1.2, 0.5), read_ms=read_ms, put_ms=put_ms,
            publish_probe_ms=rng.lognormvariate(-1.4, 0.4) if published else 0.0, codes=codes,
            t_start=self.t, t_end=self.t, labels=labels, keys=(first, last) if pages else (),
            reasons=self.misses.finish(self.req_id, states, self.t, self.t), pages_hit_disk=disk_pages,
            disk_read_ms=disk_ms, pages_replicated=replicated)

    def step(self) -> None:
        """Advance the simulated clock one tick and add that tick's requests."""
        self.t = round(self.t + self.tick_s, 6)
        if self.trace is not None:
            if not self.paused:
                self._trace_step()
            return
        if not self.paused:
            for _ in range(self.per_tick):
                self.agg.add(self._result())

    def panels(self) -> dict:
        """The store / procs / workload / status panels of the current moment."""
        pb = self.layout.page_bytes
        cap_pages = self.capacity // pb
        if self.trace is not None:  # the simulated LRU store of the trace
            self.stored_pages, cap_pages = self.stored_pages, self._lru_blocks
            self.capacity = cap_pages * pb
        self.evicted = max(self.evicted, self.stored_pages - cap_pages)
        keys = min(self.stored_pages, cap_pages)
        rates = self._last_rates
        store = {"keys": keys, "used_bytes": keys * pb, "capacity_bytes": self.capacity,
                 "evicted_keys": self.evicted, "alloc_failures": self.alloc_failures,
                 "put_rps": rates.get("publish_MBps", 0.0) * 1e6 / pb,
                 "get_rps": rates.get("reuse_MBps", 0.0) * 1e6 / pb}
        if self.disk:  # the pages DRAM evicted went to disk, which evicts its oldest when full
            disk_pages = self.disk // pb
            store.update(offloaded_keys=self.evicted, disk_used_bytes=min(self.evicted, disk_pages) * pb,
                         disk_capacity_bytes=self.disk, disk_evicted_keys=max(0, self.evicted - disk_pages),
                         promoted_keys=0)
        if self.hot:
            store.update(copies_started=self.copies, copies_done=self.copies)
        busy = 0.0 if self.paused else 1.0
        procs = (
            {"name": "kvtui ui", "pid": 41001, "cpu_percent": 6.0 + self.rng.random(), "rss_bytes": 96 << 20},
            {"name": "prefill worker", "pid": 41002, "cpu_percent": busy * (71.0 + 8 * self.rng.random()),
             "rss_bytes": 612 << 20},
            {"name": "decode worker", "pid": 41003, "cpu_percent": busy * (38.0 + 6 * self.rng.random()),
             "rss_bytes": 540 << 20},
            {"name": "mooncake master", "pid": 41000, "cpu_percent": 3.0 + self.rng.random(), "rss_bytes": 74 << 20},
        )
        status = {"store_mode": "embedded", "store_up": True, "paused": self.paused,
                  "layout": self.layout.describe(), "mode": "live"}
        if self.writer is not None:
            status.update(recording=True, record_path=str(self.writer.path))
        workload = dict(self.workload)
        if self.trace is not None:
            p = self.trace.progress()
            workload.update(speed=p["speed"], position_s=p["position_s"], length_s=p["length_s"])
        return {"store": store, "procs": procs, "workload": workload, "status": status}

    def frame(self) -> Frame:
        """One tick later: the aggregator's frame with every panel filled."""
        self.step()
        frame = self.agg.frame(**self.panels())
        self._last_rates = frame.rates
        if self.writer is not None:
            self.writer.write(frame)
        return frame


class DemoController:
    """Turns the knobs of a :class:`DemoSource` (the fake engine end of the control channel)."""

    def __init__(self, source: DemoSource, record_dir: str = "."):
        self.source, self.record_dir = source, record_dir

    def send(self, control: Control) -> None:
        """Apply a knob change at once (the next ``frame()`` shows it): SetKnob sets that workload knob;
        SetLayout only records the preset's name (``workload["layout"]``:
        the demo's pages keep their size); SetTraceSpeed changes a trace's speed from the next row.
        ``TypeError`` for anything else."""
        w = self.source.workload
        match control:
            case SetKnob(name, value):
                cast(dict, w)[name] = value  # (a knob's name is its frame.workload key)
            case SetLayout(name):
                w["layout"] = name
            case SetTraceSpeed(speed) if self.source.trace is not None:
                self.source.trace.set_speed(speed, now_s=self.source.t)
            case _:
                raise TypeError(f"not a control: {control!r}")

    def pause(self) -> None:
        self.source.paused = True

    def resume(self) -> None:
        self.source.paused = False

    def clear_store(self) -> int:
        n = min(self.source.stored_pages, self.source.capacity // self.source.layout.page_bytes)
        self.source.published.clear()
        self.source.stored_pages = 0
        self.source.misses.reset()
        return n

    def toggle_recording(self) -> tuple[bool, str | None]:
        """Start recording the demo's frames into ``record_dir/kvtui-demo-YYYYmmdd-HHMMSS.kvtui``, or stop."""
        src = self.source
        if src.writer is not None:
            writer, src.writer = src.writer, None
            writer.close()
            return False, str(writer.path)
        from kvtui.session.writer import SessionWriter

        os.makedirs(self.record_dir, exist_ok=True)
        path = os.path.join(self.record_dir, time.strftime("kvtui-demo-%Y%m%d-%H%M%S.kvtui"))
        src.writer = SessionWriter(path, {"demo": True, "layout": src.layout.describe(),
                                          "workload": dict(src.workload)})
        src.agg.begin_span()  # as a live session does: the file's report covers what follows
        return True, path

    def stop(self) -> None:
        if self.source.writer is not None:
            self.toggle_recording()


class StaticSource(BuiltOnRead):
    """Always the same frame (for snapshots)."""

    def __init__(self, frame: Frame):
        self._frame = frame

    def frame(self) -> Frame:
        return self._frame


def fixture_frame(ticks: int = 150, seed: int = 7, **kwargs) -> Frame:
    """The frame after ``ticks`` ticks of a seeded :class:`DemoSource` (identical on every call)."""
    src = DemoSource(seed, **kwargs)
    frame = src.frame()
    for _ in range(ticks - 1):
        frame = src.frame()
    return frame


def trace_fixture_frame(name: str = "synthetic", ticks: int = 150, then: float = 16.0, then_ticks: int = 20) -> Frame:
    """The frame of a seeded trace demo: ``ticks`` ticks as fast as possible (13 rows a tick), then
    ``then_ticks`` ticks at speed ``then`` (identical on every call; it takes seconds to build)."""
    src = DemoSource(trace=name, speed=None, per_tick=13)
    for _ in range(ticks):
        src.frame()
    assert src.trace is not None
    src.trace.set_speed(then, now_s=src.t)
    frame = src.frame()
    for _ in range(then_ticks - 1):
        frame = src.frame()
    return frame


def main(argv: list[str] | None = None) -> int:
    from kvtui.tui.app import run_app

    ap = argparse.ArgumentParser(prog="python -m kvtui.testing.demo", description=__doc__.split("\n")[0])
    ap.add_argument("--static", action="store_true", help="show one fixed fixture frame (knobs go nowhere)")
    ap.add_argument("--replay", metavar="FILE", default=None, help="play a recorded session file")
    ap.add_argument("--trace", metavar="NAME", default=None, help="replay a shipped trace (synthetic, "
                    "conversation-head) against a simulated store holding a quarter of its blocks")
    ap.add_argument("--headless", action="store_true")
    ap.add_argument("--duration", type=float, default=None, help="seconds before exiting")
    ap.add_argument("--screenshot", default=None, help="SVG written before exiting (with --duration)")
    ap.add_argument("--size", default="120x40", help="WxH of the headless terminal")
    ap.add_argument("--disk", action="store_true", help="a simulated store with a disk tier behind its DRAM")
    ap.add_argument("--hot", action="store_true", help="a simulated store that copies hot prefixes to a second segment")
    args = ap.parse_args(argv)
    disk_bytes = DEMO_DISK_BYTES if args.disk else 0
    w, h = (int(v) for v in args.size.lower().split("x"))
    if args.replay:
        from kvtui.session.reader import ReplayPlayer, SessionReader

        return run_app(None, None, player=ReplayPlayer(SessionReader(args.replay)), headless=args.headless,
                       duration_s=args.duration, screenshot=args.screenshot, size=(w, h))
    if args.static:
        frame = trace_fixture_frame(args.trace) if args.trace else fixture_frame(disk_bytes=disk_bytes,
                                                                                 replicate_hot=args.hot)
        return run_app(StaticSource(frame), DemoController(DemoSource(trace=args.trace)),
                       headless=args.headless,
                       duration_s=args.duration, screenshot=args.screenshot, size=(w, h), clock=lambda: 0.0)
    src = DemoSource(trace=args.trace, disk_bytes=disk_bytes, replicate_hot=args.hot)
    return run_app(src, DemoController(src), headless=args.headless, duration_s=args.duration,
                   screenshot=args.screenshot, size=(w, h))


if __name__ == "__main__":
    raise SystemExit(main())
