"""Decode and prefill workers on another host join a running ``kvtui run --listen`` (kvtui.engine.remote):
two emulated hosts on a private bridge, the coordinator in one, ``kvtui worker --join`` in the other, against
a real master on a third; a wrong token is refused and logged, a remote worker that dies costs no request, a
join to nothing is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvtui.mooncake.hosts import missing_tools
from kvtui.mooncake.netns import isolation_possible

pytestmark = pytest.mark.integration

WHY = isolation_possible() or next((f"no {t}" for t in missing_tools()), None)
needs_root = pytest.mark.skipif(WHY is not None, reason=f"emulated hosts need network namespaces: {WHY}")
KVTUI = [sys.executable, "-m", "kvtui.cli"]
# the coordinator's --duration: its remote workers join ~2.5 s after it starts here (1 s listening, 1.5 s a
# worker's start-up in its namespace), which leaves 5 s of margin for a loaded machine
RUN_S = 8

SCENE = r"""
import csv, json, subprocess, sys, time
sys.path.insert(0, sys.argv[2])  # tests/, for its waits
from waits import wait_for
from kvtui.mooncake.netns import isolate_network
assert isolate_network() is None
from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster
from kvtui.mooncake.hosts import nsenter_argv

out_path, duration, modes = sys.argv[1], sys.argv[3], sys.argv[4:]
log_path = out_path + ".csv"
kvtui = [sys.executable, "-m", "kvtui.cli"]
with EmbeddedCluster(ClusterOptions(store_bytes=64 << 20, hosts=True, worker_names=("coord", "remote"))) as cluster:
    ep = cluster.endpoints
    coord, remote = cluster.emulated.hosts["coord"], cluster.emulated.hosts["remote"]
    attach = ["--master", ep.master, "--metadata", ep.metadata_url]
    listen = f"{coord.address}:7070"
    run = subprocess.Popen(nsenter_argv(coord) + kvtui + [
        "run", "--layout", "tiny", "--duration", duration, "--quiet", "--decode-workers", "1", "--listen", listen,
        "--token", "s3cret", "--json", out_path, "--requests-log", log_path] + attach,
        stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    lines = []
    while time.monotonic() < deadline:  # the coordinator says where it listens once its engine runs
        line = run.stderr.readline()
        lines.append(line)
        if "listening for remote workers" in line:
            break
    # the workers join first (the run's --duration counts from its start), then a wrong token is refused
    worker = subprocess.Popen(nsenter_argv(remote) + kvtui + ["worker", "--join", listen, "--token", "s3cret"],
                              stderr=subprocess.PIPE, text=True)
    prefill = None
    if "prefill" in modes:  # and a remote prefill worker beside it
        prefill = subprocess.Popen(nsenter_argv(remote) + kvtui + ["worker", "--role", "prefill", "--join", listen,
                                                                    "--token", "s3cret"],
                                   stderr=subprocess.PIPE, text=True)
    bad = subprocess.run(nsenter_argv(remote) + kvtui + ["worker", "--join", listen, "--token", "wrong"],
                         capture_output=True, text=True, timeout=30)
    if "kill" in modes:  # the remote worker (decode worker 1 in the requests log) dies once it served a while
        def remote_served():
            try:
                with open(log_path, newline="") as fh:
                    return sum(row["decode_worker"] == "1" for row in csv.DictReader(fh)) >= 50
            except FileNotFoundError:
                return False

        wait_for(remote_served, 30, "50 requests served by the remote decode worker", interval_s=0.1)
        worker.kill()
    rest = run.stderr.read()
    rc = run.wait(60)
    worker_rc = worker.wait(30)
    prefill_rc = prefill.wait(30) if prefill is not None else None
    print(json.dumps({"rc": rc, "stderr": "".join(lines) + rest, "bad_rc": bad.returncode, "bad": bad.stderr,
                      "worker_rc": worker_rc, "worker": worker.stderr.read(), "remote": remote.address,
                      "prefill_rc": prefill_rc, "prefill": prefill.stderr.read() if prefill is not None else "",
                      "coord": coord.address}))
"""
TESTS = str(Path(__file__).resolve().parents[1])


def _scene(out: Path, *modes: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", SCENE, str(out), TESTS, str(RUN_S), *modes], capture_output=True,
                          text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_join_to_nothing_and_bad_flags_get_one_line_and_exit_2():
    for argv, words in ((["worker", "--join", "127.0.0.1:1", "--token", "t"], "nothing listens at 127.0.0.1:1"),
                        (["worker", "--join", "nohost", "--token", "t"], "--join: expected HOST:PORT"),
                        (["worker", "--join", "127.0.0.1:1"], "needs the coordinator's --token"),
                        (["run", "--layout", "tiny", "--listen", "7070"], "--listen needs --token"),
                        (["run", "--layout", "tiny", "--listen", "7070", "--token", "t"], "add --master"),
                        (["run", "--layout", "tiny", "--token", "t"], "add --listen"),
                        (["run", "--layout", "tiny", "--listen", "x:y", "--token", "t"], "--listen must be")):
        proc = subprocess.run(KVTUI + argv, capture_output=True, text=True, timeout=60,
                              env={**__import__("os").environ, "KVTUI_TOKEN": ""})
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@needs_root
def test_the_coordinator_survives_a_remote_worker_that_dies_and_counts_what_it_lost(tmp_path):
    out = tmp_path / "run.json"
    scene = _scene(out, "kill")
    assert scene["rc"] == 0, scene["stderr"][-3000:]  # the run went on to its end
    assert scene["worker_rc"] == -9
    s = json.loads(out.read_text())
    remote = [w for w in s["workers"] if w.get("remote")]
    local = [w for w in s["workers"] if w["role"] == "decode" and not w.get("remote")]
    assert remote and remote[0]["requests"] > 0 and local[0]["requests"] > 0
    assert s["requests_rerun"] > 0 and s["requests_lost"] == 0 and s["mismatches"] == 0  # run again elsewhere


@needs_root
def test_remote_decode_and_prefill_workers_join_across_emulated_hosts_and_serve_requests(tmp_path):
    """A remote decode worker and a remote prefill worker join the coordinator on another host (a wrong token
    is refused meanwhile): the remote decode worker reloads pages across its link, the remote prefill
    worker publishes, and the counts of local and remote workers add up to the run's."""
    out = tmp_path / "run.json"
    scene = _scene(out, "prefill")
    assert scene["rc"] == 0 and scene["prefill_rc"] == 0, scene["stderr"][-3000:] + scene["prefill"][-2000:]
    assert scene["bad_rc"] == 2 and "refused the token" in scene["bad"] and "Traceback" not in scene["bad"]
    assert "refused a remote worker" in scene["stderr"] and "wrong token" in scene["stderr"]  # logged
    assert "joined" in scene["worker"] and scene["worker_rc"] == 0, scene["worker"]
    s = json.loads(out.read_text())
    remote = {w["role"]: w for w in s["workers"] if w.get("remote")}
    assert set(remote) == {"decode", "prefill"}, s["workers"]
    assert remote["decode"]["host"] == remote["prefill"]["host"] == scene["remote"], s["workers"]
    assert remote["decode"]["requests"] > 0 and remote["decode"]["pages_hit"] > 0  # it reloaded across its link
    assert remote["prefill"]["requests"] > 0
    local = [w for w in s["workers"] if w["role"] == "decode" and not w.get("remote")]
    assert local and local[0]["host"] is None  # (the coordinator's own processes: no emulated host of kvtui's)
    assert s["mismatches"] == 0 and s["verified_pages"] == s["pages_hit"] > 0
    assert sum(w["requests"] for w in s["workers"] if w["role"] == "decode") == s["requests"]
    assert sum(w["requests"] for w in s["workers"] if w["role"] == "prefill") == s["requests"]
    assert sum(w["pages_published"] for w in s["workers"] if w["role"] == "prefill") == s["pages_published"]
