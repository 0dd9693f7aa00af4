"""Record sessions on the real store, report and replay them with no store."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from kvtui.cli import main

pytestmark = pytest.mark.integration
CORE = ("requests", "pages_total", "pages_hit", "tokens_input", "tokens_hit", "token_hit_rate", "pages_published",
        "pages_already_present", "verified_pages", "mismatches", "errors", "reload_ms", "publish_ms", "throughput",
        "elapsed_s")


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
    writer.write(dataclasses.replace(final, status={**final.status, "layout": PRESETS["seed"].describe()}))
    writer.close()
    assert main(["report", str(switched), "--json", str(tmp_path / "r.json")]) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["layout"] == PRESETS["tiny"].as_dict() and rep["layout_at_end"] == PRESETS["seed"].describe()
    assert main(["report", str(recorded / "s.kvtui"), "--json", str(tmp_path / "same.json")]) == 0
    assert "layout_at_end" not in json.loads((tmp_path / "same.json").read_text())


def test_report_svg(recorded):
    svg = recorded / "final.svg"
    assert main(["report", str(recorded / "s.kvtui"), "--svg", str(svg)]) == 0
    text = svg.read_text().replace("&#160;", " ")
    assert text.startswith("<svg") and "requests" in text and ">60<" in text  # the final request count


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


def test_killed_recorder_leaves_a_readable_session(tmp_path):
    path = tmp_path / "killed.kvtui"
    proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "run", "--duration", "60", "--layout", "tiny",
                             "--store-size", "32MiB", "--quiet", "--record", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if path.exists():
            try:
                with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                    if db.execute("SELECT count(*) FROM frames").fetchone()[0] >= 20:
                        break
            except sqlite3.Error:
                pass
    kids = psutil.Process(proc.pid).children(recursive=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    psutil.wait_procs(kids, timeout=15)
    out = tmp_path / "k.json"
    assert main(["report", str(path), "--json", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["session"]["frames"] >= 20 and s["requests"] > 0


def _copy(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    return dst


@pytest.mark.parametrize("case,needle", [
    ("newer", "newer than this kvtui reads"),
    ("truncated", "not a readable kvtui session"),
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
