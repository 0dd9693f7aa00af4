"""Observe mode in the monitor: a frame whose workload is ``observe`` shows the master's dashboard (health,
figures with their history, segments) instead of the page grid and the latency panels; the clear key is
disabled (observe mode writes nothing to the store); a master that is down says so."""

from __future__ import annotations

import dataclasses

from tui_helpers import RecordingController, pilot_test

from kvtui.metrics.aggregate import Aggregator
from kvtui.testing.demo import StaticSource
from kvtui.tui.app import KvtuiApp
from kvtui.tui.widgets.master_panel import MasterPanel, spark

STORE = {"up": True, "keys": 4321, "used_bytes": 3 << 30, "capacity_bytes": 8 << 30, "evicted_keys": 17,
         "alloc_failures": 2, "clients": 3, "put_rps": 120.0, "get_rps": 80.5, "evict_kps": 4.0, "evict_fail_ps": 0.5,
         "alloc_fail_ps": 1.0, "put_fail_ps": 0.0, "get_fail_ps": 0.0, "get_hit_ratio": 0.9, "put_discards": 1,
         "put_releases": 1, "remove_failures": 0, "soft_pinned_keys": 0,
         "segments": [{"name": "10.0.0.5:13001", "used_bytes": 1 << 30, "capacity_bytes": 4 << 30, "status": "OK"},
                      {"name": "10.0.0.6:13001", "used_bytes": 2 << 30, "capacity_bytes": 4 << 30, "status": "OK"}],
         "health": {"status": "ok", "role": "leader", "ha_state": "serving", "service_ready": True}}
SERIES = {"keys": (1000.0, 2000.0, 4321.0), "put_rps": (0.0, 60.0, 120.0), "get_rps": (0.0, 10.0, 80.5)}


def observe_frame(store=STORE):
    f = Aggregator().frame(store=dict(store), workload={"kind": "observe", "name": "10.0.0.5:50051"},
                           status={"mode": "live", "store_mode": "attached", "store_up": store.get("up")})
    return dataclasses.replace(f, series=dict(SERIES), rates={k: v[-1] for k, v in SERIES.items()})


def test_spark_scales_to_the_maximum():
    assert spark((0, 5, 10), 3) == "▁▅█" and spark((1, 2, 3, 4), 2) == "▆█" and spark((), 5) == ""
    assert spark((0, 0), 4) == "▁▁"


def test_the_master_dashboard_replaces_the_grid():
    app = KvtuiApp(StaticSource(observe_frame()), RecordingController(), refresh_hz=10)

    async def scenario(pilot):
        panel = app.query_one(MasterPanel)
        text = "\n".join(t.plain for t in panel.lines(100))
        assert panel.display and not app.query_one("#grid").display and not app.query_one("#side").display
        assert app.check_action("clear_store", ()) is None  # shown disabled: nothing is written to the store
        assert app.check_action("knob", ("overlap", 1)) is None  # no workload knobs
        return text, app.query_one("#kpis").plain

    text, header = pilot_test(app, scenario)
    lines = text.splitlines()
    assert lines[0] == "master ● up · ok · leader · serving"
    assert lines[1].split() == ["keys", "4,321", "▃▄█"] and lines[3].split() == ["puts", "120/s", "▁▅█"]
    assert lines[7] == "get hit ratio         90 % "
    assert "evicted 17" in text and "alloc failures 2" in text and "clients 3" in text
    assert "segments (2)" in text and lines[-1].startswith("  10.0.0.6:13001 OK █") and \
        lines[-1].endswith("50 % 2.0 GiB / 4.0 GiB")
    assert "observing 10.0.0.5:50051 (no workload)" in header


def test_a_down_master_says_its_figures_are_the_last_sample():
    app = KvtuiApp(StaticSource(observe_frame({**STORE, "up": False})), None, refresh_hz=10)

    async def scenario(pilot):
        return "\n".join(t.plain for t in app.query_one(MasterPanel).lines(100))

    text = pilot_test(app, scenario)
    assert "● DOWN" in text and "last sample" in text


def test_a_live_frame_keeps_the_grid():
    from kvtui.testing.demo import fixture_frame

    app = KvtuiApp(StaticSource(fixture_frame(5)), None, refresh_hz=10)

    async def scenario(pilot):
        return app.query_one(MasterPanel).display, app.query_one("#grid").display

    assert pilot_test(app, scenario) == (False, True)


def test_an_ha_cluster_shows_each_master_its_role_lag_and_the_leader():
    masters = [{"name": "master-0", "url": "http://10.0.0.5:9003", "up": False, "role": "down", "ha_state": ""},
               {"name": "master-1", "url": "http://10.0.0.6:9003", "up": True, "role": "leader",
                "ha_state": "serving", "leader": "10.0.0.6:50051"},
               {"name": "master-2", "url": "http://10.0.0.7:9003", "up": True, "role": "standby",
                "ha_state": "standby", "leader": "10.0.0.6:50051", "lag": 12}]
    app = KvtuiApp(StaticSource(observe_frame({**STORE, "masters": masters, "leader": "10.0.0.6:50051"})), None,
                   refresh_hz=10)

    async def scenario(pilot):
        return [t.plain for t in app.query_one(MasterPanel).lines(100)]

    lines = pilot_test(app, scenario)
    assert lines[1].split() == ["master-0", "down", "http://10.0.0.5:9003"]
    assert lines[2].split() == ["master-1", "leader", "http://10.0.0.6:9003"]
    assert lines[3].split() == ["master-2", "standby", "lag", "12", "http://10.0.0.7:9003"]
    assert lines[4].split() == ["leader", "RPC", "10.0.0.6:50051"] and lines[5].startswith("keys")


def test_no_serving_master_is_said():
    masters = [{"name": "master-0", "url": "http://a:1", "up": True, "role": "warm-up", "ha_state": "leader_warmup"}]
    app = KvtuiApp(StaticSource(observe_frame({**STORE, "up": False, "masters": masters})), None, refresh_hz=10)

    async def scenario(pilot):
        return [t.plain for t in app.query_one(MasterPanel).lines(100)]

    lines = pilot_test(app, scenario)
    assert lines[1].split()[:2] == ["master-0", "warm-up"] and lines[2] == "  leader RPC none (no master serves)"
