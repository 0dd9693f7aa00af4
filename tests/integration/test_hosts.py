"""Emulated hosts (``--hosts auto``, :mod:`kvtui.mooncake.hosts`): each process in a network namespace of its
own, traffic between distinct addresses over veth links, a ``--link`` rate that the reloads cannot beat,
the soak's link-cut fault, and bad input in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from kvtui.metrics.figures import AGGREGATE_VS_LINKS
from kvtui.mooncake.hosts import missing_tools
from kvtui.mooncake.netns import isolation_possible

pytestmark = pytest.mark.integration

WHY = isolation_possible() or next((f"no {t}" for t in missing_tools()), None)
needs_root = pytest.mark.skipif(WHY is not None, reason=f"emulated hosts need network namespaces: {WHY}")
KVTUI = [sys.executable, "-m", "kvtui.cli"]
PAGE_128K = ["--layers", "4", "--kv-heads", "8", "--head-dim", "64", "--elem-bytes", "2", "--page-tokens", "16"]

PLACEMENT = r"""
import json, os, sys
from kvtui.mooncake.netns import isolate_network, current_netns
assert isolate_network() is None
from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster
from kvtui.mooncake.client import open_client
with EmbeddedCluster(ClusterOptions(store_bytes=64 << 20, hosts=True)) as cluster:
    ep = cluster.endpoints.as_dict()
    client = open_client(ep)  # kvtui's own namespace: the bridge address
    key, data = "kvtui-hosts-test", os.urandom(1 << 20)
    put = client._store.put(key, data)  # (the wheel's own put/get of Python bytes)
    got = client._store.get(key)
    out = {"me": current_netns(), "procs": {p.name: current_netns(p.pid) for p in cluster.processes},
           "master": ep["master"], "hosts": ep["hosts"], "put": put, "equal": got == data}
    print(json.dumps(out))
"""


@needs_root
def test_each_process_lives_on_its_own_host_and_bytes_cross_between_addresses():
    proc = subprocess.run([sys.executable, "-c", PLACEMENT], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    procs = out["procs"]
    assert procs["master"] == procs["metadata"] != procs["store"]  # the metadata server shares the master's host
    assert out["me"] not in (procs["master"], procs["store"])
    hosts = out["hosts"]
    assert set(hosts) == {"master", "store", "prefill", "decode"}
    assert len({h["address"] for h in hosts.values()}) == 4
    assert all(h["address"].startswith("10.77.0.") for h in hosts.values())
    assert out["master"].startswith(hosts["master"]["address"] + ":")
    assert out["put"] == 0 and out["equal"]  # a 1 MiB object to the store host's segment and back, byte-exact


@needs_root
def test_a_run_on_emulated_hosts_reloads_no_faster_than_its_link(tmp_path):
    out = tmp_path / "run.json"
    env = _marked(tmp_path)
    proc = subprocess.run(KVTUI + ["run", "--hosts", "auto", "--link", "100mbit", "--duration", "8", "--store-size",
                                   "64MiB", "--prompt-tokens", "128", "--json", str(out)] + PAGE_128K,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "emulated hosts on a private bridge" in proc.stderr
    s = json.loads(out.read_text())
    assert s["setup"]["hosts"] == "auto" and s["setup"]["link"] == "100mbit"
    assert s["pages_hit"] > 0 and s["mismatches"] == 0 and s["verified_pages"] == s["pages_hit"]
    # every reloaded byte crossed the store host's 100 mbit/s link: busy reload throughput is at most the
    # link's rate (12.5 MB/s; tbf lets a 64 KiB burst through, hence the margin)
    read = s["throughput"]["reuse_read_MBps"]
    assert 0 < read <= 12.5 * 1.15, read
    assert not _holders(Path(env["TMPDIR"]))  # the processes holding the hosts' namespaces went with kvtui


def _holders(mark: Path) -> set[int]:
    """Pids of the ``sleep infinity`` processes (what holds an emulated host's namespace) started by a kvtui run
    with ``TMPDIR=mark`` (:func:`_marked`): those of other tests running meanwhile are not counted."""
    pids = set()
    for p in psutil.process_iter(["cmdline"]):
        try:
            if (p.info["cmdline"] or [])[:2] == ["sleep", "infinity"] and p.environ().get("TMPDIR") == str(mark):
                pids.add(p.pid)
        except psutil.Error:
            continue
    return pids


def _marked(tmp_path: Path) -> dict[str, str]:
    """The environment of a kvtui run whose processes :func:`_holders` can tell apart: its own ``TMPDIR``."""
    mark = tmp_path / "tmp"
    mark.mkdir(exist_ok=True)
    return dict(os.environ, TMPDIR=str(mark))


@needs_root
@pytest.mark.parametrize("argv, words", [
    (["--link", "1gbit"], "--link shapes the links of emulated hosts: add --hosts auto"),
    (["--hosts", "auto", "--link", "fast"], "--link rate must be bits per second"),
    (["--hosts", "auto", "--master-port", "12345"], "--master-port"),
    (["--hosts", "auto", "--master", "127.0.0.1:1", "--metadata", "http://127.0.0.1:2/metadata"],
     "cannot attach (--master)"),
    (["--hosts", "auto", "--isolate-network", "off"], "drop --isolate-network off"),
])
def test_bad_host_flags_get_one_line_and_exit_2(argv, words):
    proc = subprocess.run(KVTUI + ["run", "--duration", "3", "--layout", "tiny"] + argv, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("kvtui: error:")]
    assert len(lines) == 1 and (words is None or words in lines[0]), proc.stderr


@needs_root
def test_a_delay_needs_the_kernels_netem_or_gets_one_line():
    proc = subprocess.run(KVTUI + ["run", "--hosts", "auto", "--link", "1gbit,1ms", "--duration", "3", "--layout",
                                   "tiny"], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr
    if proc.returncode == 2:  # a kernel without sch_netem (this VM's)
        assert "no netem qdisc" in proc.stderr and proc.stderr.count("kvtui: error:") == 1, proc.stderr
        assert "logs of the embedded cluster" not in proc.stderr  # nothing ran whose logs would help
    else:
        assert proc.returncode == 0, proc.stderr


@needs_root
def test_a_chaos_soak_on_emulated_hosts_recovers_from_link_cuts(tmp_path):
    out, series = tmp_path / "soak.json", tmp_path / "soak.csv"
    # 25 s at 10 faults a minute, seed 2: link-cut at 1.5 s, master-kill at 8.6 s, link-cut at 16 s (the five
    # kinds without emulated hosts, master-kill included, recover in tests/integration/test_soak_chaos.py)
    proc = subprocess.run(KVTUI + ["soak", "--hosts", "auto", "--duration", "25", "--chaos", "10", "--seed", "2",
                                   "--faults", "link-cut,master-kill", "--layout", "tiny", "--store-size", "64MiB",
                                   "--client-ttl", "3", "--pause-s", "1.5", "--sample-s", "2", "--quiet",
                                   "--json", str(out), "--series", str(series)],
                          capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = json.loads(out.read_text())
    f = s["faults"]
    assert f["by_kind"]["link-cut"]["injected"] >= 1 and f["by_kind"]["master-kill"]["injected"] >= 1, f
    assert f["recovered"] == f["injected"] and f["inject_errors"] == 0, s["fault_events"]
    cuts = [e for e in s["fault_events"] if e["kind"] == "link-cut" and e["t_s"] is not None]
    assert all(e["detail"]["host"] == "store" and e["detail"]["veth"] == "kvh-store" for e in cuts), cuts
    assert s["mismatches"] == 0 and s["orphans"] == [] and s["targets"]["zero_orphans"]
    # the TCP columns count the hosts' namespaces too (psutil alone sees only kvtui's)
    import csv

    with open(series, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert max(int(r["tcp_established"]) for r in rows) >= 6, [r["tcp_established"] for r in rows]


@needs_root
def test_bench_link_reports_reload_against_the_links_rate(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(KVTUI + ["bench", "--link", "200mbit", "--iterations", "3", "--prompt-tokens", "256",
                                   "--shared-tokens", "192", "--store-size", "64MiB", "--json", str(out)] + PAGE_128K,
                          capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr[-2000:]
    b = json.loads(out.read_text())
    assert b["link"]["text"] == "200mbit" and b["link"]["rate_MBps"] == 25.0
    assert b["pages_reloaded"] == 12 and b["verified"]  # 192 shared tokens = 12 pages of 16
    assert b["ratios"]["reload_vs_link"] == pytest.approx(b["reload"]["MBps_p50"] / 25.0)
    assert b["ratios"]["raw_vs_link"] == pytest.approx(b["raw_MBps_p50"] / 25.0)
    assert 0 < b["ratios"]["reload_vs_link"] <= 1.15  # the link is the limit: no reload beats its rate
    assert "reload ÷ link" in proc.stdout


@needs_root
def test_several_workers_each_get_a_host_and_aggregate_reloads_are_held_to_their_links(tmp_path):
    out = tmp_path / "run.json"
    env = _marked(tmp_path)
    proc = subprocess.run(KVTUI + ["run", "--hosts", "auto", "--decode-workers", "3", "--prefill-workers", "2",
                                   "--requests", "60", "--layout", "tiny", "--store-size", "64MiB", "--quiet",
                                   "--json", str(out)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = json.loads(out.read_text())
    hosts = {w["name"]: w["host"] for w in s["workers"]}
    assert set(hosts) == {"decode-0", "decode-1", "decode-2", "prefill-0", "prefill-1"}
    assert len(set(hosts.values())) == 5 and all(h.startswith("10.77.0.") for h in hosts.values()), hosts
    assert s["mismatches"] == 0 and s["requests"] == 60 and not _holders(Path(env["TMPDIR"]))
    bench = tmp_path / "bench.json"
    proc = subprocess.run(KVTUI + ["bench", "--link", "200mbit", "--decode-workers", "1,2", "--iterations", "2",
                                   "--prompt-tokens", "256", "--shared-tokens", "256", "--store-size", "64MiB",
                                   "--json", str(bench)] + PAGE_128K, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr[-2000:]
    b = json.loads(bench.read_text())
    assert [r["decode_workers"] for r in b["runs"]] == [1, 2] and b["verified"]
    for r in b["runs"]:
        ratio = b["ratios"]["aggregate_vs_links"][str(r["decode_workers"])]
        assert ratio == pytest.approx(r["aggregate_MBps_p50"] / (25.0 * r["decode_workers"]))
        assert 0 < ratio <= 1.15  # no more than the readers' links carry
    assert f"{AGGREGATE_VS_LINKS.name}, M = 2" in proc.stdout
    bad = subprocess.run(KVTUI + ["bench", "--decode-workers", "2"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "add --link RATE" in bad.stderr and "Traceback" not in bad.stderr
