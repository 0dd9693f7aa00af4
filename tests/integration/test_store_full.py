"""A store too small for the working set, against a real master: said once before the run, and a burst of
refused puts (NO_AVAILABLE_HANDLE) makes exactly one event-log line and one stderr line naming cause and
remedy, not one per failure."""

from __future__ import annotations

import json
import uuid

import pytest

from kvtui.cli import main

pytestmark = pytest.mark.integration
MIB_PAGES = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1024", "--page-tokens", "256", "--elem-bytes", "2"]


def test_a_too_small_store_gives_one_burst_line(tmp_path, capsys):
    """8 prompts × 6 shared pages of 1 MiB are leased by every probe of them; a 16 MiB segment keeps 14 pages
    below the 90 % watermark, so puts are refused over and over."""
    rec, out = tmp_path / "full.kvtui", tmp_path / "full.json"
    rc = main(["run", "--scenario", "shared-system-prompt", "--pool", "8", "--store-size", "16MiB", *MIB_PAGES,
               "--duration", "8", "--record", str(rec), "--json", str(out), "--model", f"full-{uuid.uuid4().hex[:6]}"])
    assert rc == 0
    err = capsys.readouterr().err.splitlines()
    s = json.loads(out.read_text())
    refused = s["errors"].get("NO_AVAILABLE_HANDLE", 0)
    assert refused >= 5, (s["errors"], s["requests"], err)  # a burst, not a single failure
    warned = [line for line in err if "warning: --store-size 16MiB keeps 14 pages" in line]
    assert len(warned) == 1 and "--store-size 80MiB would fit" in warned[0]  # (8 pages of 1 MiB above 90 %)
    burst = [line for line in err if line.startswith("kvtui: store full:")]
    assert len(burst) == 1, err
    assert "NO_AVAILABLE_HANDLE" in burst[0] and "raise --store-size to 80MiB or lower --pool" in burst[0]

    from kvtui.session.reader import SessionReader

    events = [e.text for e in SessionReader(rec).final_frame().events if e.text.startswith("store full:")]
    assert events == [burst[0].removeprefix("kvtui: ")]


def test_attach_mode_only_warns(cluster, capsys):
    """The session cluster has 256 MiB; seed multi-turn keeps ~2.9 GiB live: a warning, and the run goes on."""
    ep = cluster.endpoints
    rc = main(["run", "--scenario", "multi-turn", "--requests", "1", "--quiet", "--master", ep.master,
               "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url,
               "--model", f"att-{uuid.uuid4().hex[:6]}"])
    err = capsys.readouterr().err
    assert rc == 0
    assert "warning: the attached cluster's 256.0 MiB keep 16 pages below a 90 % eviction watermark" in err
    assert len([line for line in err.splitlines() if "warning" in line]) == 1


def test_the_default_monitor_refuses_no_put_in_the_scenarios_its_keys_reach(monkeypatch):
    """The seed demo (``kvtui watch --layout seed``: 14 MiB pages) in a real session, switched the way its keys
    switch it: multi-turn (``s`` twice), then overlap 0 % (``[``), a few seconds each, refuses no put. Its store
    used to be 1 GiB, sized for the starting knobs only: multi-turn keeps ~3 GiB live, and puts were refused
    within seconds."""
    import time
    from collections import Counter

    import kvtui.commands.watch as watch_cmd
    from kvtui.core.codes import NO_SPACE
    from kvtui.core.controls import SetKnob
    from kvtui.launch import open_session

    plans = []
    monkeypatch.setattr(watch_cmd, "_run", lambda plan, *a, **k: plans.append(plan) or 0)
    assert main(["watch", "--layout", "seed", "--headless", "--duration", "60"]) == 0
    session = open_session(plans[0])
    codes: Counter = Counter()
    done = []
    session.subscribe_results(lambda r: (codes.update(r.codes), done.append(r.scenario)))
    session.start()
    try:
        for control, seconds in ((SetKnob("scenario", "multi-turn"), 8.0), (SetKnob("overlap", 0.0), 5.0)):
            session.send(control)
            time.sleep(seconds)
    finally:
        session.stop()
    assert done.count("multi-turn") >= 10, Counter(done)
    assert codes[NO_SPACE] == 0, (codes, plans[0].cluster.store_bytes)


@pytest.mark.parametrize("client,nodes", [("dummy", "1"), ("real", "1"), ("real", "3")])
def test_the_store_gets_the_store_size_to_the_byte(tmp_path, capsys, client, nodes):
    """A --store-size that is no whole MiB (60,000,001 bytes) is the master's capacity to the byte, with the
    standalone real client (dummy workers) as with store nodes of kvtui's own (split over 3: 20,000,001 +
    20,000,000 + 20,000,000), so the pages the warning says the store keeps are the pages it keeps."""
    out = tmp_path / "run.json"
    asked = 60_000_001
    rc = main(["run", "--scenario", "shared-system-prompt", "--pool", "64", "--requests", "4", *MIB_PAGES,
               "--store-size", str(asked), "--worker-client", client, "--store-nodes", nodes, "--json", str(out),
               "--model", f"exact-{uuid.uuid4().hex[:6]}"])
    assert rc == 0
    s = json.loads(out.read_text())
    assert s["store_at_end"]["capacity_bytes"] == asked
    err = capsys.readouterr()
    keeps = int(asked * 0.9) // (1 << 20)  # 1 MiB pages below the 90 % watermark
    assert f"--store-size {asked} keeps {keeps} pages" in err.err
    assert "of 57.2 MiB" in err.out  # the summary's store line: 60,000,001 bytes, not 57.0 MiB
