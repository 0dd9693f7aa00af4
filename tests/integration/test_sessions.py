"""Record sessions on the real store, report and replay them with no store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path

import psutil
import pytest
from waits import wait_for

from kvtui.cli import main
from kvtui.mooncake.ops import MooncakeCluster

pytestmark = pytest.mark.integration
CORE = ("requests", "pages_total", "pages_hit", "tokens_input", "tokens_hit", "token_hit_rate", "pages_published",
        "pages_already_present", "verified_pages", "mismatches", "errors", "reload_ms", "publish_ms", "probe_ms",
        "reloads_probe_only", "reloads_unusable")


def _attach(cluster):
    ep = cluster.endpoints
    return ["--master", ep.master, "--metadata", ep.metadata_url, "--metrics-url", ep.metrics_url]


@pytest.fixture(scope="module")
def recorded(cluster, tmp_path_factory):
    d = tmp_path_factory.mktemp("rec")
    rc = main(["run", "--requests", "60", "--layout", "tiny", "--pool", "3", "--prompt-tokens", "96", "--quiet",
               "--record", str(d / "s.kvtui"), "--json", str(d / "live.json"),
               "--model", f"rec-{uuid.uuid4().hex[:6]}", *_attach(cluster)])
    assert rc == 0
    return d


def test_record_then_report_gives_the_live_summary(recorded, capsys):
    assert main(["report", str(recorded / "s.kvtui"), "--json", str(recorded / "report.json")]) == 0
    live = json.loads((recorded / "live.json").read_text())
    rep = json.loads((recorded / "report.json").read_text())
    for k in CORE:
        assert rep[k] == live[k], k
    # the recording began as the run did, a few ms after the clock started: the same span within that
    assert rep["elapsed_s"] == pytest.approx(live["elapsed_s"], abs=0.5) and rep["span"]["from_s"] < 0.5
    assert rep["throughput"]["reuse_read_MBps"] == live["throughput"]["reuse_read_MBps"]
    assert rep["requests"] == 60 and rep["pages_hit"] > 0
    assert rep["layout"] == live["layout"] and rep["workload"] == live["workload"]
    assert rep["session"]["frames"] >= 2 and rep["session"]["mooncake_version"].startswith("mooncake")


def test_report_names_the_layout_at_the_end_after_a_switch(recorded, tmp_path):
    """A session whose layout was switched while recording: `layout` is the one it started with,
    `layout_at_end` the one on screen at the end (the totals cover both)."""
    import dataclasses

    from kvtui.commands.output import open_session
    from kvtui.core.layout import PRESETS
    from kvtui.session.writer import SessionWriter

    reader = open_session(str(recorded / "s.kvtui"))
    final = reader.final_frame()
    switched = tmp_path / "switched.kvtui"
    writer = SessionWriter(switched, reader.header)
    writer.write(reader.frame_at(0))
    writer.write(dataclasses.replace(final, status={**final.status, "layout": PRESETS["seed"].describe()}))
    writer.close()
    assert main(["report", str(switched), "--json", str(tmp_path / "r.json")]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["layout"] == PRESETS["tiny"].as_dict() and rep["layout_at_end"] == PRESETS["seed"].as_dict()
    assert main(["report", str(recorded / "s.kvtui"), "--json", str(tmp_path / "same.json")]) == 0
    assert "layout_at_end" not in json.loads((tmp_path / "same.json").read_text())


def test_report_svg(recorded):
    svg, out = recorded / "final.svg", recorded / "final.json"
    assert main(["report", str(recorded / "s.kvtui"), "--svg", str(svg), "--json", str(out)]) == 0
    text = svg.read_text().replace("&#160;", " ")
    assert text.startswith("<svg") and "requests" in text and ">60<" in text  # the final request count
    assert reader_final_status(recorded / "s.kvtui").get("recording") is True  # the frame says it was recorded…
    assert "REC" not in text  # …but the report's picture is no recording
    assert os.stat(out).st_mode == os.stat(svg).st_mode  # both with the umask


def test_report_svg_on_a_full_disk_is_one_line_and_leaves_nothing(recorded, capsys, monkeypatch):
    """A disk that fills while the SVG is written (ENOSPC from the write, as a full filesystem gives it):
    exit 3, one line, no file and no temporary left (before: a traceback from inside the app, exit 0, and
    a truncated SVG)."""
    import errno

    import kvtui.core.files as files_module  # (where every SVG and JSON output is written)

    class FullFile:
        def __init__(self, fd, *args, **kwargs):
            os.close(fd)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, _text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files_module.os, "fdopen", FullFile)
    folder = recorded / "full"
    folder.mkdir()
    capsys.readouterr()
    assert main(["report", str(recorded / "s.kvtui"), "--svg", str(folder / "final.svg")]) == 3
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"kvtui: error: could not write {folder / 'final.svg'}: "
                                        "No space left on device"], err
    assert list(folder.iterdir()) == []


def reader_final_status(path) -> dict:
    from kvtui.commands.output import open_session

    return dict(open_session(str(path)).final_frame().status)


def test_report_covers_only_the_recorded_span(cluster, tmp_path):
    """Recording started mid-session (as Ctrl+R does): the report counts only the requests after it."""
    from kvtui.config.workload import synthetic_description
    from kvtui.core.layout import PRESETS
    from kvtui.engine.engine import Engine, EngineOptions
    from kvtui.live import LiveSession
    from workload import SyntheticWorkload, WorkloadSpec

    layout = PRESETS["tiny"]
    engine = Engine(EngineOptions(layout=layout, model=f"span-{uuid.uuid4().hex[:6]}"), endpoints=cluster.endpoints)
    engine.start()
    spec = WorkloadSpec(scenario="shared-system-prompt", pool=3, prompt_tokens=96, page_tokens=8)
    session = LiveSession(engine, SyntheticWorkload(spec), synthetic_description(spec),
                          layout_text=layout.describe(), cluster=MooncakeCluster.attach(cluster.endpoints))
    drv = session.driver

    def settled(n_at_least: int) -> int:
        """Wait until at least ``n_at_least`` requests finished, pause, and wait for the in-flight ones."""
        wait_for(lambda: session.agg.totals()["requests"] >= n_at_least, 60, f"{n_at_least} finished requests")
        session.pause()
        wait_for(lambda: drv.paused and session.agg.totals()["requests"] == drv.issued, 60,
                 "the paused workload's last requests", detail=lambda: (drv.issued, session.agg.totals()["requests"]))
        return session.agg.totals()["requests"]

    path = tmp_path / "span.kvtui"
    try:
        session.start()
        before = settled(30)
        session.recording.start(str(path))
        session.resume()
        after = settled(before + 20)
        session.stop(session.final_frame())
    finally:
        session.stop()
    assert main(["report", str(path), "--json", str(tmp_path / "span.json")]) == 0
    rep = json.loads((tmp_path / "span.json").read_text())
    assert before >= 30 and rep["requests"] == after - before > 0
    assert rep["reload_ms"]["count"] + rep["reloads_probe_only"] + rep["reloads_unusable"] == after - before
    assert rep["probe_ms"]["count"] == after - before
    assert rep["span"]["from_s"] > 0 and rep["span"]["latency_covers"] == "span"
    assert rep["elapsed_s"] == pytest.approx(rep["span"]["to_s"] - rep["span"]["from_s"])


def test_replay_runs_without_a_store(recorded, tmp_path):
    # a `mooncake` package that refuses to import proves the replay never touches the store
    fake = tmp_path / "fake"
    (fake / "mooncake").mkdir(parents=True)
    (fake / "mooncake" / "__init__.py").write_text("raise ImportError('no store on this machine')\n")
    env = dict(os.environ, PYTHONPATH=f"{fake}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    shot = tmp_path / "replay.svg"
    r = subprocess.run([sys.executable, "-m", "kvtui.cli", "replay", str(recorded / "s.kvtui"), "--headless",
                        "--duration", "1.5", "--speed", "8", "--screenshot", str(shot)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-800:]
    assert "REPLAY" in shot.read_text().replace("&#160;", " ")


def test_killed_recorder_leaves_a_readable_session(tmp_path, capsys):
    path = tmp_path / "killed.kvtui"
    proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "run", "--duration", "60", "--layout", "tiny",
                             "--store-size", "32MiB", "--quiet", "--record", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def frames() -> int:
        try:  # (closed at once: an open reader would keep the writer from checkpointing)
            with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                return int(db.execute("SELECT count(*) FROM frames").fetchone()[0])
        except sqlite3.Error:  # not created yet
            return 0

    def recorded() -> bool:
        assert proc.poll() is None, f"kvtui run exited ({proc.returncode}) first"
        return frames() >= 20

    wait_for(recorded, 40, "20 recorded frames", interval_s=0.2, detail=frames)
    kids = psutil.Process(proc.pid).children(recursive=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    psutil.wait_procs(kids, timeout=15)
    out = tmp_path / "k.json"
    assert main(["report", str(path), "--json", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["session"]["frames"] >= 20 and s["requests"] > 0
    # the file alone, without the -wal the killed recorder left beside it: the user is told to copy it too
    (tmp_path / "copy").mkdir()
    alone = _copy(path, tmp_path / "copy" / path.name)
    assert Path(f"{path}-wal").exists() and not Path(f"{alone}-wal").exists()
    rc = main(["report", str(alone), "--json", str(tmp_path / "alone.json")])
    err = capsys.readouterr().err
    assert "the -wal file beside it holds the last frames: copy it too" in err and "another SQLite" not in err
    assert rc == 2 or json.loads((tmp_path / "alone.json").read_text())["session"]["wal_missing"] is True


def _copy(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    return dst


@pytest.mark.parametrize("case,needle", [
    ("newer", "newer than this kvtui reads"),
    ("truncated", "is cut short (3,000 of"),
    ("foreign_sqlite", "not a kvtui session"),
    ("text", "not a kvtui session"),
    ("missing", "no such session file"),
    ("empty", "not a kvtui session"),
])
def test_bad_session_files_are_one_line_exit_2(recorded, tmp_path, capsys, case, needle):
    src = recorded / "s.kvtui"
    target = tmp_path / f"{case}.kvtui"
    if case == "newer":
        _copy(src, target)
        with sqlite3.connect(target) as db:
            db.execute("UPDATE meta SET value='99' WHERE key='format_version'")
    elif case == "truncated":
        target.write_bytes(src.read_bytes()[:3000])
    elif case == "foreign_sqlite":
        with sqlite3.connect(target) as db:
            db.execute("CREATE TABLE t (x)")
    elif case == "text":
        target.write_text("hello\n")
    elif case == "empty":
        target.write_bytes(b"")
    for cmd in (["report", str(target)], ["replay", str(target), "--headless", "--duration", "1"]):
        assert main(cmd) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err
