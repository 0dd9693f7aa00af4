"""One producer builds the frames (kvtui/metrics/producer.py): readers never build, so what one consumer does
(a Prometheus scrape) cannot change what another sees (the monitor, the recording)."""

from __future__ import annotations

import threading

import pytest

from kvtui.core.events import RequestResult
from kvtui.core.pages import PageState
from kvtui.metrics.aggregate import Aggregator
from kvtui.metrics.producer import FrameProducer


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _result(i: int) -> RequestResult:
    states = bytes([PageState.HIT] * 3 + [PageState.PUBLISHED])
    return RequestResult(req_id=i, scenario="s", n_tokens=32, cacheable_tokens=32, page_tokens=8, page_bytes=64,
                         states=states, pages_total=4, pages_hit=3, pages_published=1, bytes_loaded=192,
                         bytes_written=64, read_ms=1.0 + i % 3, put_ms=0.5, probe_ms=0.1)


def _replay(scrapes_between_ticks: int) -> list:
    """Feed one aggregator a fixed script of results and clock steps, ticking a producer 40 times; between
    ticks a scraper reads ``latest()`` that many times. Returns the frames the recorder got."""
    clock = Clock()
    agg = Aggregator(clock=clock)
    producer = FrameProducer(agg.frame)
    recorded: list = []
    producer.subscribe(recorded.append)
    for step in range(40):
        clock.t = step * 0.1
        agg.add(_result(step))
        producer.tick()
        for _ in range(scrapes_between_ticks):
            clock.t += 0.01  # the scrapes come later than the tick, as a real scrape would
            producer.latest()
        clock.t = step * 0.1 + 0.05
    return recorded


def test_scrapes_read_the_latest_frame_and_change_nothing_another_consumer_sees():
    quiet, scraped = _replay(0), _replay(25)
    assert len(quiet) == len(scraped) == 40
    for a, b in zip(quiet, scraped):
        assert (a.t, a.totals, a.rates, a.series, a.window_totals, a.series_seq) == \
               (b.t, b.totals, b.rates, b.series, b.window_totals, b.series_seq)
        assert a.latency == b.latency


def test_latest_builds_only_the_first_frame():
    builds = []
    producer = FrameProducer(lambda: builds.append(1) or len(builds))
    assert producer.latest() == 1 and producer.latest() == 1 and producer.builds == 1


def test_the_thread_builds_only_while_a_consumer_wants_frames():
    built = threading.Event()
    count = []

    def build():
        count.append(1)
        built.set()
        return len(count)

    producer = FrameProducer(build)
    assert producer.rate_hz == 0 and producer.builds == 0
    producer.want("monitor", 4)
    producer.want("recorder", 10)
    assert producer.rate_hz == 10
    assert built.wait(5)
    producer.unwant("recorder")
    producer.unwant("monitor")
    assert producer.rate_hz == 0
    n = producer.builds
    producer.poke()  # nobody wants frames: a poke builds nothing
    assert not threading.Event().wait(0.3) and producer.builds <= n + 1
    producer.stop()


def test_a_poke_builds_at_once_and_subscribers_get_every_frame():
    seen = []
    got = threading.Event()
    producer = FrameProducer(lambda: producer.builds)
    producer.subscribe(lambda f: (seen.append(f), got.set()))
    producer.want("slow", 0.01)  # one frame every 100 s unless poked
    producer.poke()
    assert got.wait(5)
    producer.stop()
    assert seen == list(range(len(seen))) and len(seen) >= 1


def test_finish_freezes_the_last_frame_for_every_later_reader():
    n = []
    producer = FrameProducer(lambda: n.append(1) or len(n))
    producer.want("monitor", 20)
    last = producer.finish()
    assert producer.latest() == last and producer.tick() == last
    assert producer.finish() == last  # (twice: the same)
    producer.want("late", 5)  # no thread starts after the end
    assert producer.latest() == last


def test_a_rate_out_of_range_is_refused():
    producer = FrameProducer(lambda: 1)
    for hz in (0, -1, 1000):
        with pytest.raises(ValueError, match="frame rate"):
            producer.want("x", hz)


def test_scrapes_during_a_recorded_live_session_build_no_frame(tmp_path):
    """``kvtui watch --record --prometheus``: the monitor, the recording and the exporter all read the frames
    the session's one producer built; a burst of scrapes builds none, so it cannot change what the monitor
    shows or the recording keeps."""
    import urllib.request

    from kvtui.config.exports import ExportPlan
    from kvtui.config.workload import synthetic_description
    from kvtui.launch import Outputs
    from kvtui.live import LiveSession
    from kvtui.session.reader import SessionReader
    from kvtui.testing.fake_engine import FakeCluster, FakeEngine
    from workload import SyntheticWorkload, WorkloadSpec

    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=64, page_tokens=8, rate=200.0)
    session = LiveSession(FakeEngine(), SyntheticWorkload(spec), synthetic_description(spec), layout_name="tiny",
                          cluster=FakeCluster())
    built: list = []
    session.producer.subscribe(built.append)
    served: list = []
    with Outputs(ExportPlan(prometheus=("127.0.0.1", 0))) as outputs:
        outputs.attach(session)
        session.want("monitor", 4)
        session.recording.start(str(tmp_path / "s.kvtui"))
        session.start()
        try:
            for _ in range(60):  # scrapes, as fast as they come
                with urllib.request.urlopen(outputs.url, timeout=5) as r:
                    assert b"kvtui_requests_total" in r.read()
                served.append(outputs.exporter.current_frame())
            final = session.final_frame()
        finally:
            session.stop(final)
    ids = {id(f) for f in built}
    assert all(id(f) in ids for f in served)  # every scrape served a frame the producer had built
    assert session.producer.builds == len(built) < 60  # ~8 frames a second, whatever the scrapes
    recorded = SessionReader(tmp_path / "s.kvtui")
    times = {f.t for f in built}
    assert len(recorded) >= 2 and all(recorded.frame_at(i).t in times for i in range(len(recorded)))
    assert recorded.final_frame().totals == final.totals
