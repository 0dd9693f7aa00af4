"""A live session: engine + driver + aggregator + samplers behind the two interfaces the TUI needs.

:class:`LiveSession` is the UI's ``FrameSource`` (``frame()``) and ``Controller`` (knob changes, pause,
clear store, stop). Knob changes go to the workload on the driver's feeder thread, so they apply from the
next request; every control change is also logged as an engine event (shown in the event log).
"""

from __future__ import annotations

from kvtui.core.events import EngineEvent
from kvtui.engine.samplers import PanelThread, ProcessSampler, StoreSampler
from kvtui.metrics.aggregate import Aggregator, Frame

LAYOUT_WAIT_S = 10.0  # a layout switch waits this long for the requests under way to finish


class LiveSession:
    """Owns a running :class:`~kvtui.engine.driver.Driver` over an started engine.

    ``workload``: the request source (a ``SyntheticWorkload`` accepts knob changes; a trace does not);
    ``description``: the ``frame.workload`` dict; ``layout_text``: shown in the header.
    """

    def __init__(self, engine, workload, description: dict, *, concurrency: int = 1, max_requests=None,
                 duration_s=None, aggregator: Aggregator | None = None, layout_text: str = "",
                 header: dict | None = None, owns_engine: bool = True, prompt_pages: int | None = None,
                 layout_name: str = "custom"):
        from kvtui.engine.driver import Driver

        self.engine = engine
        self.workload = workload
        self.description = dict(description)
        self.layout_text = layout_text
        self.agg = aggregator or Aggregator()
        self.driver = Driver(engine, workload, self._on_result, self.agg.event, concurrency=concurrency,
                             max_requests=max_requests, duration_s=duration_s)
        ep = engine.endpoints
        self.panels = PanelThread(StoreSampler(ep.metrics_url if ep else None), ProcessSampler(engine.worker_pids()))
        self._stopped = False
        self._started = False
        self.header = dict(header or {})
        self.owns_engine = owns_engine  # False: stop() leaves the engine running (the bench reuses it)
        self.recorder = None  # RecordingThread while recording
        self.prompt_pages = prompt_pages  # prompts of this many pages of the layout (None: --prompt-tokens fixed)
        if self.description.get("kind") == "synthetic":
            self.description["layout"] = layout_name

    def start(self) -> "LiveSession":
        """Start sampling and issuing requests."""
        self._started = True
        self.panels.start()
        self.driver.start()
        self._log("info", f"started: {self._workload_text()}")
        return self

    def _on_result(self, result) -> None:
        self.agg.add(result)
        if self.description.get("kind") == "trace":
            self.description["done"] = self.driver.completed
            self.description["complete"] = self.driver.completed >= self.description.get("total", 0)

    def _log(self, kind: str, text: str) -> None:
        self.agg.event(EngineEvent(kind, self.agg.now(), text))

    def _workload_text(self) -> str:
        d = self.description
        if d.get("kind") == "trace":
            return f"trace {d['name']} ({d['total']} rows)"
        return f"{d['scenario']}, overlap {d['overlap']:.0%}, pool {d['pool']}, rate {d['rate'] or 'closed loop'}"

    # -- FrameSource ------------------------------------------------------------------------------------
    def frame(self) -> Frame:
        """The newest frame (rates since the previous call)."""
        ep = self.engine.endpoints
        store = self.panels.store
        status = {"store_mode": "embedded" if ep is None or ep.embedded else "attached",
                  "store_up": store.get("up"), "paused": self.driver.paused,  # None until the first scrape
                  "layout": self.layout_text, "mode": "live", "finished": self.driver.done.is_set()}
        if self.driver.error is not None:
            status["error"] = str(self.driver.error)
        if self.driver.outage:
            status["outage"] = True
        rec = self.recorder
        if rec is not None:
            status.update(recording=True, record_path=str(rec.writer.path))
        return self.agg.frame(store=store, procs=self.panels.procs, workload=dict(self.description), status=status)

    # -- Controller -------------------------------------------------------------------------------------
    def _update(self, **changes) -> None:
        if not hasattr(self.workload, "update"):
            self._log("control", "this workload (a trace) has no knobs to change")
            return

        def apply() -> None:
            try:
                spec = self.workload.update(**changes)
            except ValueError as exc:
                self._log("error", f"control refused: {exc}")
                return
            self.description.update(synthetic_description(spec))
            self._log("control", ", ".join(_change_text(k, v) for k, v in changes.items()))

        self.driver.control(apply)

    def set_overlap(self, fraction: float) -> None:
        """Shared-prefix fraction 0..1, from the next request."""
        self._update(overlap=min(1.0, max(0.0, round(float(fraction), 4))))

    def set_pool(self, n: int) -> None:
        """Pool size (≥ 1), from the next request."""
        self._update(pool=max(1, int(n)))

    def set_rate(self, rps: float) -> None:
        """Arrival rate in requests/s (0 = closed loop), from the next request."""
        self._update(rate=max(0.0, float(rps)))

    def set_scenario(self, name: str) -> None:
        """Switch scenario, from the next request."""
        self._update(scenario=name)

    def set_layout(self, name: str) -> None:
        """Switch to page layout preset ``name`` (``kvtui.layout.PRESETS``) from the next request: the
        requests under way finish first (up to ``LAYOUT_WAIT_S``), then both workers and the workload switch
        (prompts of ``prompt_pages`` pages follow the new page size). Synthetic workloads only; refused, with
        an event-log line, when one prompt's pages would not fit the store's segment, or when the pages would
        reuse the current pages' keys with another size (same tokens per page, other bytes)."""
        from kvtui.core.layout import PRESETS

        if self.description.get("kind") != "synthetic":
            self._log("control", "this workload (a trace) keeps the page layout it started with")
            return
        if name not in PRESETS:
            self._log("error", f"control refused: unknown layout {name!r} (choose from {', '.join(sorted(PRESETS))})")
            return
        new = PRESETS[name]

        def apply() -> None:
            old = self.engine.options.layout
            store_bytes = self.engine.options.store_bytes if self.engine.cluster is not None else None
            if new == old:
                self.description["layout"] = name
                return
            if new.page_tokens == old.page_tokens and new.page_bytes != old.page_bytes:
                self._log("error", f"control refused: layout {name} has {new.page_tokens} tokens per page like "
                                   "the current one but other page bytes: its pages would take the stored pages' "
                                   "keys")
                return
            changes = {"page_tokens": new.page_tokens}
            if self.prompt_pages:
                changes["prompt_tokens"] = self.prompt_pages * new.page_tokens
            prompt_pages = changes.get("prompt_tokens", self.description["prompt_tokens"]) // new.page_tokens
            if store_bytes is not None and prompt_pages * new.page_bytes > store_bytes:
                self._log("error", f"control refused: one {name} prompt ({prompt_pages} pages of "
                                   f"{new.page_bytes / 2**20:.1f} MiB) is larger than the store segment "
                                   f"({store_bytes / 2**20:.0f} MiB): every publish would fail")
                return
            if not self.driver.wait_idle(LAYOUT_WAIT_S):
                self._log("error", f"control refused: requests still under way after {LAYOUT_WAIT_S:g} s; "
                                   "layout unchanged")
                return
            try:
                self.workload.update(**changes)  # first: a refused spec leaves the workers as they were
                self.engine.set_layout(new)
            except Exception as exc:
                self.workload.update(page_tokens=old.page_tokens, prompt_tokens=self.description["prompt_tokens"])
                self._log("error", f"control refused: layout {name}: {exc}")
                return
            self.layout_text = new.describe()
            self.description.update(synthetic_description(self.workload.spec), layout=name)
            self._log("control", f"layout → {name} ({self.layout_text})")

        self.driver.control(apply)

    def pause(self) -> None:
        """Stop issuing requests (in-flight ones finish)."""
        self.driver.pause()
        self._log("control", "workload paused")

    def resume(self) -> None:
        """Resume issuing requests."""
        self.driver.resume()
        self._log("control", "workload resumed")

    def clear_store(self) -> int:
        """Remove every object from the store (pauses issuing around it; the few requests already submitted
        may still run meanwhile); returns the count removed."""
        was_paused = self.driver.paused
        self.driver.pause()
        try:
            n = self.engine.clear_store()
            self._log("control", f"store cleared: {n} keys removed")
            return n
        finally:
            if not was_paused:
                self.driver.resume()

    # -- recording --------------------------------------------------------------------------------------
    def start_recording(self, path: str) -> str:
        """Record frames and events into a session file at ``path`` (``SessionError`` if it cannot)."""
        from kvtui.session.writer import RecordingThread, SessionWriter

        if self.recorder is not None:
            return str(self.recorder.writer.path)
        header = {**self.header, "workload_now": dict(self.description)}
        self.recorder = RecordingThread(self, SessionWriter(path, header)).start()
        self._log("control", f"recording → {path}")
        return path

    def stop_recording(self, final: Frame | None = None) -> str | None:
        """Stop recording (writing ``final`` as the last frame when given); returns the file path."""
        rec, self.recorder = self.recorder, None
        if rec is None:
            return None
        self._log("control", f"recording stopped: {rec.writer.path}")
        rec.stop(final)
        return str(rec.writer.path)

    def toggle_recording(self) -> tuple[bool, str | None]:
        """Ctrl+R: start recording into ``kvtui-YYYYmmdd-HHMMSS.kvtui`` (current folder) or stop."""
        if self.recorder is not None:
            return False, self.stop_recording()
        import os
        import time

        stem = time.strftime("kvtui-%Y%m%d-%H%M%S")
        path, n = f"{stem}.kvtui", 1
        while os.path.exists(path):
            path, n = f"{stem}-{n}.kvtui", n + 1
        return True, self.start_recording(path)

    def final_frame(self) -> Frame:
        """The frame a finished run is summarised from (and recorded as its last frame)."""
        return self.frame()

    def restart_master(self) -> None:
        """Embedded mode: start the master kvtui owns again on the same ports (``RuntimeError`` otherwise).
        Dispatch resumes by itself once the master answers (the driver watches it)."""
        self.engine.restart_master()
        self.panels.proc_sampler.set_pids(self.engine.worker_pids())  # the new master has a new pid
        self._log("control", "master restarted on the same ports (it starts with no keys)")

    def stop(self, final: Frame | None = None) -> None:
        """Stop recording (``final`` becomes the last recorded frame), the driver, samplers, workers and the
        (embedded) cluster. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        self.stop_recording(final)
        if self._started:
            self.driver.stop()
            self.driver.done.wait(5)
            self.panels.stop()
        if self.owns_engine:
            self.engine.stop()


def _change_text(knob: str, value) -> str:
    """The event-log line of a knob change (the UI shows its own request with the same text until then)."""
    if knob == "overlap":
        return f"overlap → {value * 100:g} %"
    if knob == "rate":
        return f"rate → {value:g} req/s" if value > 0 else "rate → closed loop"
    return f"{knob} → {value}"


def synthetic_description(spec) -> dict:
    """The ``frame.workload`` dict of a ``workload.WorkloadSpec`` (the knobs the monitor shows)."""
    return {"kind": "synthetic", "scenario": spec.scenario, "overlap": spec.overlap, "pool": spec.pool,
            "rate": spec.rate, "prompt_tokens": spec.prompt_tokens}
