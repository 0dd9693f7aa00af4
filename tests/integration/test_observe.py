"""Observe mode against real masters: `kvtui watch --observe` follows the load another process (a `kvtui run`
attached to the same master) puts on it, and records it like any session; a URL that is not a Mooncake
master is one line and exit 2; a master that goes away and comes back is an outage in the event log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import psutil
import pytest
from waits import wait_for

from kvtui.cli import main
from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster
from kvtui.observe import ObserveSession
from kvtui.session import SessionError
from kvtui.session.reader import SessionReader

pytestmark = pytest.mark.integration
ENV = {**os.environ, "KVTUI_ISOLATE": "off"}


def test_observed_rates_and_keys_follow_another_process_load(cluster, tmp_path):
    ep = cluster.endpoints
    rec = tmp_path / "obs.kvtui"
    obs = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "watch", "--observe", "--metrics-url", ep.metrics_url,
                            "--master", ep.master, "--headless", "--duration", "60", "--record", str(rec)],
                           env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def recorded(n: int) -> bool:
            try:
                return rec.exists() and len(SessionReader(rec)) >= n
            except SessionError:  # (the file is being created)
                return False

        wait_for(lambda: recorded(5), 30, "the observer's first frames")
        before = SessionReader(rec).final_frame().store
        out = tmp_path / "load.json"
        load = subprocess.run([sys.executable, "-m", "kvtui.cli", "run", "--scenario", "shared-system-prompt",
                               "--overlap", "50", "--pool", "4", "--requests", "120", "--rate", "60",
                               "--layout", "tiny", "--quiet", "--json", str(out),
                               "--model", f"obs-{uuid.uuid4().hex[:8]}",
                               "--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url],
                              env=ENV, capture_output=True, text=True, timeout=60)
        assert load.returncode == 0, load.stderr[-2000:]
        published = json.loads(out.read_text())["pages_published"]  # every page published is a new key
        assert published > 400

        def keys_followed() -> bool:
            try:
                f = SessionReader(rec).final_frame()
            except SessionError:
                return False
            # the key count followed the load (evictions may take a few), over at least 5 scrapes
            return f.store.get("keys", 0) >= before["keys"] + published * 0.9 and len(f.series.get("keys", ())) >= 5

        wait_for(keys_followed, 30, "the observed key count to follow the load over 5 scrapes")
        obs.terminate()  # SIGTERM ends the monitor cleanly, its recording closed
        assert obs.wait(20) == 143, obs.stderr.read()[-2000:]
    finally:
        if obs.poll() is None:
            obs.kill()
            obs.wait()
    reader = SessionReader(rec)
    frames = [reader.frame_at(i) for i in range(len(reader))]
    final = frames[-1]
    assert final.workload == {"kind": "observe", "name": ep.master}
    puts = max(f.store.get("put_rps", 0.0) for f in frames)
    gets = max(f.store.get("get_rps", 0.0) for f in frames)
    assert puts > 20 and gets > 10, (puts, gets)  # 60 req/s of 8 pages (batch items count one each), half reloaded
    assert max(final.series["put_rps"]) == pytest.approx(puts)
    assert final.series["keys"][-1] == final.store["keys"] and len(final.series["keys"]) >= 5
    assert final.store["segments"] and final.store["health"]["status"] == "ok"
    seg = final.store["segments"][0]
    assert seg["capacity_bytes"] > 0 and 0 < seg["used_bytes"] <= seg["capacity_bytes"]
    assert final.totals["requests"] == 0  # the observer itself ran nothing
    # replayable like any session
    shot = tmp_path / "replay.svg"
    assert main(["replay", str(rec), "--headless", "--duration", "0.5", "--screenshot", str(shot)]) == 0
    assert "observe mode (no workload)" in shot.read_text().replace("&#160;", " ")


def test_a_url_that_is_not_a_master_is_one_line(cluster, capsys):
    meta = cluster.endpoints.metadata_url.removesuffix("/metadata")  # an HTTP server, but not the master's admin
    assert main(["watch", "--observe", "--metrics-url", meta, "--headless", "--duration", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is not a Mooncake master's admin endpoint" in err
    assert main(["watch", "--observe", "--metrics-url", cluster.endpoints.metrics_url, "--trace", "synthetic",
                 "--headless", "--duration", "1"]) == 2
    assert "--trace does not go with --observe" in capsys.readouterr().err


def test_a_master_that_goes_away_and_comes_back_is_an_outage(tmp_path):
    own = EmbeddedCluster(ClusterOptions(store_bytes=64 << 20, segment_on="prefill", log_dir=str(tmp_path)))
    ep = own.start()  # (no store node: a master and its metadata server)
    session = ObserveSession(ep.metrics_url, ep.master, interval_s=0.2).start()
    session.want("test", 20)  # the frames the test reads
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    try:
        assert session.frame().store["up"] is True
        own.process("master").popen.kill()
        wait_for(lambda: session.frame().store["up"] is False, 10, "the outage")
        f = session.frame()
        assert f.status["outage"] and any(e.kind == "outage" and "does not answer" in e.text for e in f.events)
        own.restart_master()
        wait_for(lambda: session.frame().store["up"] is True, 15, "the master back")
        texts = [e.text for e in session.frame().events]
        assert any("answers again after" in t for t in texts)
        assert not session.frame().status.get("outage")
        # observing started nothing: no worker, no store client
        assert {p.pid for p in psutil.Process().children(recursive=True)} <= children | {own.process("master").pid}
    finally:
        session.stop()
        own.stop()
