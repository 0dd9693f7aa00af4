"""`kvtui run` against the real store: trace ground truth, JSON fields, teardown with no orphans."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest
from waits import wait_for

from kvtui.cli import main
from kvtui.metrics.summary import RunSummary
from kvtui.testing.shapes import shape_errors

pytestmark = pytest.mark.integration
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "traces"
SMALL = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"]


def _attach(cluster):
    ep = cluster.endpoints
    return ["--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url]


@pytest.mark.parametrize("name,hits,hit_tokens,input_tokens", [
    ("conversation_head1000.jsonl", 5780, 2959360, 13732944),
    ("synthetic_trace.jsonl", 77740, 39802880, 61194628),
])
def test_trace_replay_reproduces_ground_truth(cluster, tmp_path, name, hits, hit_tokens, input_tokens):
    path = TRACES / name
    if not path.exists():
        pytest.skip("../shared/data/traces is not present")
    out = tmp_path / "run.json"
    rc = main(["run", "--trace", str(path), "--speed", "max", "--quiet", "--json", str(out),
               "--model", f"gt-{uuid.uuid4().hex[:8]}", *SMALL, *_attach(cluster)])
    assert rc == 0
    s = json.loads(out.read_text())
    assert shape_errors(s, RunSummary) == []  # a trace's summary: its ideal and aiperf figures too
    assert s["pages_hit"] == hits
    assert s["tokens_hit"] == hit_tokens
    assert s["tokens_input"] == input_tokens
    assert round(s["token_hit_rate"], 4) == round(hit_tokens / input_tokens, 4)
    assert s["mismatches"] == 0 and s["verified_pages"] == hits
    assert s["errors"] == {}
    assert s["workload"]["done"] == s["workload"]["total"] == s["requests"] and s["workload"]["complete"]
    for field in ("requests", "pages_total", "pages_published", "pages_already_present", "reload_ms",
                  "publish_ms", "throughput"):
        assert field in s


def test_scenario_run_json_fields(cluster, tmp_path):
    out = tmp_path / "s.json"
    rc = main(["run", "--scenario", "shared-system-prompt", "--overlap", "75", "--pool", "2", "--requests", "20",
               "--layout", "tiny", "--prompt-tokens", "128", "--quiet", "--json", str(out),
               "--model", f"sc-{uuid.uuid4().hex[:8]}", *_attach(cluster)])
    assert rc == 0
    s = json.loads(out.read_text())
    assert shape_errors(s, RunSummary) == []  # every key and type as the summary's type declares them
    assert s["requests"] == 20
    # 2 pool prompts, 75 % of 128 tokens shared = 12 of 16 pages: after the first use of each prompt,
    # every request hits exactly its 12 shared pages.
    assert s["pages_hit"] == 12 * (20 - 2)
    assert s["verified_pages"] == s["pages_hit"]
    # the store as its master said after the last request: this run's pages are among its keys (the module's
    # cluster is shared), published pages are 4 KiB each
    store = s["store_at_end"]
    assert store["keys"] >= s["pages_published"] > 0 and store["used_bytes"] >= s["pages_published"] * 4096
    assert store["capacity_bytes"] == s["setup"]["store_capacity_bytes"] and store["alloc_failures"] >= 0


def test_random_scenario_has_no_hits(cluster, tmp_path):
    out = tmp_path / "r.json"
    assert main(["run", "--scenario", "random", "--requests", "15", "--layout", "tiny", "--quiet", "--json",
                 str(out), "--model", f"rnd-{uuid.uuid4().hex[:8]}", *_attach(cluster)]) == 0
    s = json.loads(out.read_text())
    assert s["requests"] == 15 and s["pages_hit"] == 0 and s["pages_published"] == s["pages_total"] > 0


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:  # gone, or a zombie between its exit and its reaping
        return ""


def _children(parent: psutil.Process) -> list[psutil.Process]:
    """Live descendants of ``parent``: zombies are exited already."""
    out = []
    for p in parent.children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def test_embedded_run_leaves_no_process(tmp_path):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    rc = main(["run", "--requests", "5", "--layout", "tiny", "--store-size", "64MiB", "--quiet"])
    assert rc == 0

    def left() -> list[tuple[int, str]]:  # (a zombie counts: kvtui must reap what it started)
        rows = [(p.pid, _cmdline(p)) for p in psutil.Process().children(recursive=True) if p.pid not in before]
        # multiprocessing's resource tracker is this test process's own: started by its first spawn (this
        # run's when the test runs alone), it lives as long as this process does
        return [r for r in rows if "multiprocessing.resource_tracker" not in r[1]]

    wait_for(lambda: not left(), 5, "exit of every process the run started", detail=left)


@pytest.mark.parametrize("where", ["embedded", "attached", "--log-dir"])
def test_a_clean_run_leaves_no_log_folder(cluster, tmp_path, monkeypatch, capsys, where):
    """The native logs' temporary folder lasts as long as the run: one that ends without trouble removes it and
    says nothing about logs (embedded: the cluster's and the workers' logs; attached: the workers'), while a
    folder given with --log-dir keeps them."""
    import tempfile

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    argv = ["run", "--requests", "5", "--layout", "tiny", "--quiet", "--model", f"logs-{uuid.uuid4().hex[:6]}"]
    argv += ["--store-size", "64MiB"] if where == "embedded" else _attach(cluster)
    if where == "--log-dir":
        argv += ["--log-dir", str(tmp_path / "mine")]
    assert main(argv) == 0
    assert sorted(temp.glob("kvtui-logs-*")) == []
    assert "logs of" not in capsys.readouterr().err
    if where == "--log-dir":
        assert {f.name for f in (tmp_path / "mine").iterdir()} == {"prefill.log", "decode.log"}


def test_sigkill_of_kvtui_takes_every_child_down(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "run", "--duration", "60", "--layout", "tiny",
                             "--store-size", "64MiB", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parent = psutil.Process(proc.pid)

    def started() -> list[psutil.Process] | None:
        assert proc.poll() is None, f"kvtui run exited ({proc.returncode}) before its processes started"
        kids = _children(parent)
        names = " ".join(_cmdline(k) for k in kids)
        # the master, the metadata server, the store node (mooncake_client) and the two workers
        if "mooncake_master" in names and "mooncake_client" in names and len(kids) >= 5:
            return kids
        return None

    try:
        kids = wait_for(started, 30, "cluster and workers of kvtui run",
                        detail=lambda: [_cmdline(k) for k in _children(parent)])
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    gone, alive = psutil.wait_procs(kids, timeout=15)
    assert alive == [], [" ".join(p.cmdline()) for p in alive]


def test_attaching_to_a_cluster_with_no_segment_is_one_line_exit_2(tmp_path, capsys):
    """A master no client has mounted a segment on says 0 bytes of capacity: one line at start, exit 2 (a run
    would fail every put, saying the same store-full line every 30 s)."""
    from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster

    with EmbeddedCluster(ClusterOptions(segment_on="prefill", log_dir=str(tmp_path))) as c:  # (no store node)
        ep = c.endpoints
        rc = main(["run", "--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url,
                   "--requests", "400", "--rate", "1", "--layout", "tiny", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert "has 0 bytes of capacity" in err and "master_total_capacity_bytes 0" in err


def test_busy_explicit_port_is_one_line_exit_2(capsys):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rc = main(["run", "--requests", "1", "--layout", "tiny", "--master-port", str(port)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and f"port {port}" in err and "busy" in err and len(err.splitlines()) == 1


SUMMARY_FIELDS = {
    "requests", "pages_total", "pages_hit", "tokens_input", "tokens_cacheable", "tokens_hit", "pages_published",
    "pages_already_present", "pages_failed", "verified_pages", "mismatches", "bytes_loaded", "bytes_written",
    "read_ms_total", "put_ms_total", "page_hit_rate", "token_hit_rate", "elapsed_s", "errors", "reload_ms",
    "publish_ms", "probe_ms", "throughput", "layout", "page_bytes", "workload", "bad_rows_skipped", "concurrency",
    "store_mode", "interrupted", "reloads_probe_only", "reloads_unusable", "setup",
    "ttft_saved_ms", "prefill_gpu_s_saved", "reload_vs_recompute", "reloads_slower_than_recompute", "ttft_estimate",
    "workers", "requests_lost", "requests_rerun", "context", "store_at_end", "misses"}


def test_exported_summary_names_are_stable(cluster, tmp_path):
    """Scripts read `kvtui run --json`: its field names are a contract; change this list only on purpose."""
    out = tmp_path / "n.json"
    assert main(["run", "--requests", "3", "--layout", "tiny", "--quiet", "--json", str(out),
                 "--model", f"names-{uuid.uuid4().hex[:6]}", *_attach(cluster)]) == 0
    s = json.loads(out.read_text())
    assert set(s) == SUMMARY_FIELDS
    assert set(s["throughput"]) == {"requests_per_s", "tokens_skipped_per_s", "reuse_read_MBps", "publish_write_MBps"}
    assert set(s["reload_ms"]) == {"count", "min", "p50", "p90", "p99", "mean", "max"}


def test_json_dash_writes_the_summary_to_stdout(cluster, capsys):
    assert main(["run", "--requests", "2", "--layout", "tiny", "--quiet", "--json", "-",
                 "--model", f"dash-{uuid.uuid4().hex[:6]}", *_attach(cluster)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["requests"] == 2


def test_trace_run_cut_short_says_so(cluster, capsys, tmp_path):
    path = TRACES / "conversation_head1000.jsonl"
    if not path.exists():
        pytest.skip("../shared/data/traces is not present")
    out = tmp_path / "cut.json"
    for quiet in ([], ["--quiet"]):
        assert main(["run", "--trace", str(path), "--speed", "max", "--requests", "50", *quiet, "--json", str(out),
                     "--model", f"cut-{uuid.uuid4().hex[:6]}", *SMALL, *_attach(cluster)]) == 0
        s = json.loads(out.read_text())
        assert s["workload"]["done"] == 50 and s["workload"]["total"] == 1000 and not s["workload"]["complete"]
        said = "stopped after 50 of 1,000 trace rows" in capsys.readouterr().err
        assert said != bool(quiet)  # a note: --quiet drops it, the JSON keeps it


def test_a_recording_the_disk_cut_short_is_exit_3(cluster, tmp_path, capsys, monkeypatch):
    """The disk fills while `--record` writes (SQLite's "database or disk is full" after the first frame; a run
    writes at least two, its first and its final one): the run
    goes on to its summary and `--json`, says in one line where the recording stopped, and exits 3 (an
    output that could not be written), not 0; the frames written stay readable."""
    import sqlite3

    from kvtui.commands.output import open_session
    from kvtui.session import writer

    class FullDisk:  # the recording's database once the disk is full: every insert fails as SQLite says it
        def __init__(self, db):
            self.db = db

        def execute(self, sql, *args):
            if sql.startswith("INSERT"):
                raise sqlite3.OperationalError("database or disk is full")
            return self.db.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.db, name)

    real_write = writer.SessionWriter.write

    def write(self, frame):
        if self._seq >= 1 and not isinstance(self.db, FullDisk):
            self.db = FullDisk(self.db)
        real_write(self, frame)

    monkeypatch.setattr(writer.SessionWriter, "write", write)
    rec, out = tmp_path / "cut.kvtui", tmp_path / "cut.json"
    rc = main(["run", "--requests", "30", "--layout", "tiny", "--quiet", "--record", str(rec), "--json", str(out),
               "--model", f"cut-{uuid.uuid4().hex[:6]}", *_attach(cluster)])
    err = capsys.readouterr().err
    assert rc == 3, err
    assert f"kvtui: recording to {rec} stopped after 1 frame: database or disk is full" in err.splitlines()
    assert json.loads(out.read_text())["requests"] == 30
    assert len(open_session(str(rec))) == 1


@pytest.mark.parametrize("argv", [["run", "--requests", "80", "--quiet"], ["watch", "--headless", "--duration", "3"]])
def test_the_last_frame_shows_the_store_as_the_run_left_it(tmp_path, capsys, argv):
    """The Store panel of a run's final frame (report --svg, replay's end) came from the last periodic scrape,
    up to a second old: 3,206 keys against 4,046 pages published. It is scraped again for the final frame, so
    a fresh embedded store that evicted nothing holds exactly the pages the run published."""
    from kvtui.session.reader import SessionReader

    rec = tmp_path / "r.kvtui"
    assert main([*argv, "--layout", "tiny", "--record", str(rec)]) == 0, capsys.readouterr().err
    final = SessionReader(str(rec)).final_frame()
    assert final.totals["pages_published"] > 0 and final.store.get("evicted_keys") == 0
    assert final.store.get("keys") == final.totals["pages_published"]
