"""LiveSession's control channel with a fake engine (no store): typed controls change the workload from the
next request, values outside a knob's range are refused with an event-log line (never clamped), and a
layout switch is all or nothing (a refusal leaves the workload, the engine, the header and the description
as they were)."""

from __future__ import annotations

import pytest
from waits import wait_for

from kvtui.config.workload import synthetic_description
from kvtui.core.controls import CONTROLS, Control, SetKnob, SetLayout, SetTraceSpeed
from kvtui.core.layout import PRESETS
from kvtui.live import LiveSession
from kvtui.testing.fake_engine import FakeCluster, FakeEngine
from workload import SyntheticWorkload, WorkloadSpec

TINY, SEED = PRESETS["tiny"], PRESETS["seed"]


def _session(paused: bool = True, engine: FakeEngine | None = None, cluster: FakeCluster | None = None,
             **kw) -> tuple[LiveSession, FakeEngine]:
    engine = engine or FakeEngine(TINY)
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=64, page_tokens=8, rate=200.0)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), layout_text=TINY.describe(),
                          layout_name="tiny", **kw, cluster=cluster or FakeCluster())
    session.want("test", 50)  # the frames the test reads
    if paused:
        session.driver.pause()  # nothing is issued; controls still apply
    return session.start(), engine


def _events_after(session: LiveSession, n_before: int, count: int = 1, timeout_s: float = 5.0) -> list[str]:
    """The texts of the events logged after the first ``n_before``, once there are ``count`` of them."""
    def texts() -> list[str]:
        return [e.text for e in session.frame().events][n_before:]

    def enough() -> list[str] | None:
        t = texts()
        return t if len(t) >= count else None

    return wait_for(enough, timeout_s, f"{count} new event(s)", interval_s=0.01, detail=texts)


def _n_events(session: LiveSession) -> int:
    """The events logged so far, in a frame built now (the newest frame may predate the session's start line)."""
    return len(session.producer.tick().events)


def test_the_controller_api_is_send_plus_the_immediate_actions():
    session, _ = _session()
    try:
        for name in ("send", "pause", "resume", "clear_store", "stop", "toggle_recording", "restart_master"):
            assert callable(getattr(session, name)), name
        for old in ("set_overlap", "set_pool", "set_rate", "set_scenario", "set_layout"):
            assert not hasattr(session, old), old  # one channel: typed messages through send
        samples = {SetKnob: SetKnob("pool", 1), SetLayout: SetLayout("x"), SetTraceSpeed: SetTraceSpeed(None)}
        assert set(samples) == set(CONTROLS) and all(isinstance(c, Control) for c in samples.values())
        with pytest.raises(TypeError):
            session.send(lambda: None)
    finally:
        session.stop()


@pytest.mark.parametrize("control,field,value,text", [
    (SetKnob("overlap", 0.6), "overlap", 0.6, "overlap → 60 %"),
    (SetKnob("overlap", 0), "overlap", 0.0, "overlap → 0 %"),
    (SetKnob("overlap", 1), "overlap", 1.0, "overlap → 100 %"),
    (SetKnob("pool", 5), "pool", 5, "pool → 5"),
    (SetKnob("rate", 20.0), "rate", 20.0, "rate → 20 req/s"),
    (SetKnob("rate", 0.0), "rate", 0.0, "rate → closed loop"),
    (SetKnob("scenario", "few-shot"), "scenario", "few-shot", "scenario → few-shot"),
])
def test_a_knob_control_changes_the_workload_and_logs_it(control, field, value, text):
    session, _ = _session()
    try:
        n = _n_events(session)
        session.send(control)
        assert _events_after(session, n) == [text]
        assert getattr(session.workload.spec, field) == value and session.description[field] == value
    finally:
        session.stop()


@pytest.mark.parametrize("control,message", [
    (SetKnob("overlap", 1.5), "control refused: overlap must be within 0-100 %, got 150"),
    (SetKnob("overlap", -0.05), "control refused: overlap must be within 0-100 %, got -5"),
    (SetKnob("overlap", float("nan")), "control refused: overlap must be a finite number"),
    (SetKnob("pool", 0), "control refused: pool must be within 1-1048576, got 0"),
    (SetKnob("pool", 2.5), "control refused: pool must be a whole number, got 2.5"),
    (SetKnob("rate", -1.0), "control refused: rate must be at least 0 req/s, got -1"),
    (SetKnob("scenario", "chat"), "control refused: unknown scenario 'chat'"),
    (SetLayout("huge"), "control refused: unknown layout 'huge'"),
])
def test_a_value_out_of_range_is_refused_not_clamped(control, message):
    session, _ = _session()
    before = session.workload.spec
    try:
        n = _n_events(session)
        session.send(control)
        texts = _events_after(session, n)
        assert len(texts) == 1 and texts[0].startswith(message), texts
        assert session.workload.spec == before  # nothing changed, not even to the nearest end of the range
    finally:
        session.stop()


def test_a_trace_workload_has_no_knobs():
    engine = FakeEngine(TINY)
    session = LiveSession(engine, iter(()), {"kind": "trace", "name": "t.jsonl", "done": 0, "total": 0,
                                             "complete": False}, cluster=FakeCluster())
    session.want("test", 50)  # the frames the test reads
    session.driver.pause()
    session.start()
    try:
        n = _n_events(session)
        session.send(SetKnob("pool", 3))
        session.send(SetLayout("seed"))
        assert _events_after(session, n, 2) == ["this workload (a trace) has no knobs to change",
                                                "this workload (a trace) keeps the page layout it started with"]
        assert engine.layouts_set == []
    finally:
        session.stop()


def test_layout_switch_moves_workload_engine_and_header_together():
    session, engine = _session(paused=False, prompt_pages=8)
    try:
        assert _events_after(session, 0, 1)  # "started: …"
        wait_for(lambda: session.driver.completed >= 5, 5, "5 finished requests", interval_s=0.01)
        n = _n_events(session)
        session.send(SetLayout("seed"))
        texts = _events_after(session, n)
        assert texts == [f"layout → seed ({SEED.describe()})"]
        assert engine.options.layout == SEED and engine.layouts_set == [SEED]
        spec = session.workload.spec
        assert (spec.page_tokens, spec.prompt_tokens) == (256, 8 * 256)  # prompts keep their length in pages
        assert session.layout_text == SEED.describe() and session.frame().status["layout"] == SEED.describe()
        d = session.description
        assert d["layout"] == "seed" and d["prompt_tokens"] == 8 * 256
    finally:
        session.stop()


@pytest.mark.parametrize("why", ["worker", "prompt", "segment"])
def test_a_refused_layout_switch_changes_nothing(why):
    """A worker refusing (the engine puts both back), prompts out of range, or a prompt larger than the
    store segment: one "control refused" line, and the workload, the engine, the header and the description
    are as they were."""
    # embedded (the segment is kvtui's own): its size bounds a prompt
    cluster = FakeCluster(embedded=True, store_bytes=64 << 20) if why == "segment" else FakeCluster()
    session, engine = _session(prompt_pages=8 if why != "prompt" else 5000, engine=FakeEngine(TINY), cluster=cluster)
    if why == "worker":
        engine.refuse = RuntimeError("decode worker refused the layout")
    spec, desc, header = session.workload.spec, session.description, session.layout_text
    try:
        n = _n_events(session)
        session.send(SetLayout("seed"))
        texts = _events_after(session, n)
        assert len(texts) == 1 and texts[0].startswith("control refused: "), texts
        assert {"worker": "decode worker refused", "prompt": "prompt_tokens must be",
                "segment": "larger than the store segment"}[why] in texts[0]
        assert session.workload.spec == spec and session.description == desc and session.layout_text == header
        assert engine.options.layout == TINY and engine.layouts_set == []
    finally:
        session.stop()


@pytest.mark.parametrize("control,change,size", [(SetKnob("pool", 40), "pool 40", "16MiB"),
                                                 (SetKnob("scenario", "multi-turn"), "scenario multi-turn", "16MiB"),
                                                 (SetLayout("seed"), "layout seed", "1.1GiB")])
def test_a_change_that_would_outgrow_the_store_kvtui_sized_is_refused(control, change, size):
    """The store kvtui sized (no --store-size) holds every scenario and overlap the monitor reaches at the pool
    and layout it started with; a larger pool, or a layout of larger pages, that would need more is refused in
    one line naming the --store-size that would take it (a store the user sized takes any change: below)."""
    session, _ = _session(store_limit=1 << 20, prompt_pages=8)  # 1 MiB: 230 tiny pages below the watermark
    spec = session.workload.spec
    try:
        n = _n_events(session)
        session.send(control)
        texts = _events_after(session, n)
        assert len(texts) == 1 and texts[0].startswith(f"control refused: {change} would make "), texts
        assert "the 1.0 MiB store kvtui sized" in texts[0], texts
        assert texts[0].endswith(f"start with --store-size {size} for it"), texts
        assert session.workload.spec == spec
        n = _n_events(session)
        session.send(SetKnob("pool", 2))  # less than now: never refused
        assert _events_after(session, n) == ["pool → 2"]
    finally:
        session.stop()


def test_a_store_the_user_sized_takes_any_change_in_range():
    session, _ = _session(store_limit=None)
    try:
        n = _n_events(session)
        session.send(SetKnob("pool", 40))
        assert _events_after(session, n) == ["pool → 40"]
    finally:
        session.stop()


def test_description_follows_the_workload_spec():
    """The header's workload figures are read from the workload's spec, so they cannot drift from it."""
    session, _ = _session()
    try:
        n = _n_events(session)
        session.send(SetKnob("overlap", 0.25))
        session.send(SetKnob("pool", 2))
        assert _events_after(session, n, 2) == ["overlap → 25 %", "pool → 2"]
        spec = session.workload.spec
        assert (spec.overlap, spec.pool) == (0.25, 2)
        expected = {**synthetic_description(spec), "layout": "tiny"}
        assert session.description == expected and session.frame().workload == expected
    finally:
        session.stop()


def test_a_rate_set_after_closed_loop_is_honoured_at_once():
    """Closed loop for a while, then a rate (the settings dialog, ``r`` / ``R``): the requests after the
    change arrive from the time of the change at that rate, not from the run's start (a burst that catches
    up with the closed-loop stretch, which showed ~3× the rate in the header for tens of seconds)."""
    engine = FakeEngine(TINY)
    spec = WorkloadSpec(scenario="random", prompt_tokens=64, page_tokens=8, rate=0.0)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec), layout_text=TINY.describe(),
                          layout_name="tiny", cluster=FakeCluster())
    session.want("test", 50)
    session.start()
    try:
        wait_for(lambda: session.driver.elapsed() >= 1.0, 10, "a second of closed loop")
        before = session.driver.elapsed()  # seconds of closed loop on the arrival clock
        n = _n_events(session)
        session.send(SetKnob("rate", 20.0))
        assert _events_after(session, n) == ["rate → 20 req/s"]
        wait_for(lambda: sum(r.arrival_s is not None for r in engine.submitted) >= 3, 10, "three timed arrivals")
        arrivals = [r.arrival_s for r in list(engine.submitted) if r.arrival_s is not None]
        assert len(arrivals) >= 3
        assert min(arrivals) >= before, (before, arrivals[:5])  # none scheduled back in the closed-loop stretch
    finally:
        session.stop()


def test_a_saved_trace_keeps_its_page_size(tmp_path):
    """kvtui watch --save-trace FILE: the file's hash ids are blocks of the page size it started with, so a
    layout switch to another page size is refused in one line while it writes (the engine keeps its layout)."""
    from kvtui.cli import build_parser
    from kvtui.config.exports import ExportPlan
    from kvtui.launch import Outputs

    path = tmp_path / "t.jsonl"
    assert build_parser().parse_args(["watch", "--save-trace", str(path)]).save_trace == str(path)
    session, engine = _session(prompt_pages=8)
    try:
        with Outputs(ExportPlan(save_trace=str(path))) as outputs:
            outputs.attach(session)
            assert session.page_size_pinned_by == f"--save-trace {path}"
            n = _n_events(session)
            session.send(SetLayout("seed"))
            assert _events_after(session, n) == [
                f"control refused: layout seed has 256 tokens per page, but --save-trace {path} writes blocks of "
                "8: a trace has one block size"]
            assert engine.layouts_set == []
    finally:
        session.stop()
