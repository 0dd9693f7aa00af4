"""Bad input of the export flags is one line and exit 2, before anything starts (no store needed); `kvtui
report --requests-log` writes a session's request rows, or nothing at all."""

from __future__ import annotations

import csv
import socket

import pytest

from kvtui.cli import main
from kvtui.core.events import RequestResult
from kvtui.export.request_log import NAMES, request_row
from kvtui.metrics.aggregate import Aggregator
from kvtui.session.writer import SessionWriter


def one_line_error(capsys, text: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvtui: error: ") and "\n" not in err and text in err, err
    return err


def test_a_busy_prometheus_port(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["run", "--prometheus", f"127.0.0.1:{port}", "--requests", "1"]) == 2
    one_line_error(capsys, f"--prometheus: cannot listen on 127.0.0.1:{port}")


@pytest.mark.parametrize("argv,text", [
    (["run", "--prometheus", "localhost:http"], "--prometheus: expected [HOST:]PORT"),
    (["run", "--prometheus", "99999"], "--prometheus: port 99999 is outside 0-65535"),
    (["run", "--prometheus-linger", "5"], "--prometheus-linger needs --prometheus"),
    (["run", "--prometheus", "0", "--prometheus-linger", "-1"], "--prometheus-linger must be 0 or more"),
    (["run", "--requests-log", "/nonexistent-folder/r.csv"], "--requests-log: folder /nonexistent-folder"),
    (["watch", "--observe", "--headless", "--duration", "1"], "--observe needs --metrics-url"),
    (["watch", "--observe", "--metrics-url", "ftp://x", "--headless", "--duration", "1"], "must be an http:// URL"),
])
def test_bad_flags(capsys, argv, text):
    assert main(argv) == 2
    one_line_error(capsys, text)


def test_parquet_without_pyarrow(capsys, tmp_path, monkeypatch):
    import kvtui.export.request_log as rl

    monkeypatch.setattr(rl, "parquet_available", lambda: False)
    assert main(["run", "--requests-log", str(tmp_path / "r.parquet"), "--requests", "1"]) == 2
    one_line_error(capsys, "a .parquet log needs pyarrow (pip install 'kvtui[parquet]')")


def _session(path, rows: int, frames: int = 1) -> None:
    clock = iter(float(t) for t in range(10_000))  # one second a frame
    agg = Aggregator(clock=lambda: next(clock))
    w = SessionWriter(path, {"command": "test"})
    for i in range(rows):
        w.add_request(request_row(RequestResult(i, "random", 16, 16, 8, 4096, 2, 0, bytes(2), pages_published=2,
                                                t_start=i, t_end=i + 0.5)))
    for _ in range(frames):
        w.write(agg.frame())
    w.close()


def test_report_writes_the_recorded_rows(tmp_path, capsys):
    _session(tmp_path / "s.kvtui", 7)
    out = tmp_path / "r.csv"
    assert main(["report", str(tmp_path / "s.kvtui"), "--requests-log", str(out)]) == 0
    assert "7 request rows" in capsys.readouterr().err
    rows = list(csv.DictReader(out.open()))
    assert [r["id"] for r in rows] == [str(i) for i in range(7)] and list(rows[0]) == list(NAMES)


def test_report_of_a_session_without_rows_writes_nothing(tmp_path, capsys):
    _session(tmp_path / "s.kvtui", 0)
    out = tmp_path / "r.csv"
    assert main(["report", str(tmp_path / "s.kvtui"), "--requests-log", str(out)]) == 2
    one_line_error(capsys, "holds no request rows")
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["s.kvtui"]


@pytest.mark.parametrize("argv", [
    ["run", "--requests", "1", "--json", "{other}"],
    ["report", "{src}", "--json", "{other}"],
    ["report", "{src}", "--svg", "{other}"],
    ["export", "{src}", "--cast", "{other}"],
    ["compare", "{src}", "{src}", "--json", "{other}"],
])
def test_no_output_writes_over_another_recorded_session(tmp_path, capsys, argv):
    """`run --json s1.kvtui` for s1.json replaced the recording with JSON, exit 0: every output refuses a file
    that is a kvtui session (SQLite with kvtui's application_id), as --record refuses any existing file."""
    src, other = tmp_path / "src.kvtui", tmp_path / "other.kvtui"
    _session(src, 2, frames=3)
    _session(other, 3)
    before = other.read_bytes()
    assert main([a.format(src=src, other=other) for a in argv]) == 2
    one_line_error(capsys, f"{other} is a recorded kvtui session; kvtui never writes over one")
    assert other.read_bytes() == before


def test_a_plain_sqlite_file_or_a_stale_output_is_still_overwritten(tmp_path, capsys):
    import sqlite3

    db = tmp_path / "plain.db"
    sqlite3.connect(db).execute("create table t (x)").connection.commit()
    from kvtui.session import is_session_file

    _session(tmp_path / "s.kvtui", 2)
    assert is_session_file(tmp_path / "s.kvtui") and not is_session_file(db) and not is_session_file(tmp_path / "none")
    (tmp_path / "old.json").write_text("{}")
    assert main(["report", str(tmp_path / "s.kvtui"), "--json", str(tmp_path / "old.json")]) == 0
    assert '"requests"' in (tmp_path / "old.json").read_text()


@pytest.mark.parametrize("argv,flag", [
    (["export", "{src}", "--cast", "-"], "--cast"),
    (["report", "{src}", "--svg", "-"], "--svg"),
    (["compare", "{src}", "{src}", "--svg", "-"], "--svg"),
])
def test_dash_is_standard_output_for_json_only(tmp_path, capsys, monkeypatch, argv, flag):
    """`export --cast -` wrote a file named '-': only --json takes - (standard output); the others refuse it."""
    monkeypatch.chdir(tmp_path)
    _session(tmp_path / "s.kvtui", 2, frames=3)
    assert main([a.format(src=tmp_path / "s.kvtui") for a in argv]) == 2
    one_line_error(capsys, f"{flag}: - (standard output) is taken by --json only")
    assert not (tmp_path / "-").exists()
    assert main(["report", str(tmp_path / "s.kvtui"), "--json", "-"]) == 0  # (still standard output)
    assert '"requests"' in capsys.readouterr().out


@pytest.mark.parametrize("size", ["1001x40", "120x501", "100000x100000"])
def test_export_and_headless_sizes_have_a_ceiling(tmp_path, capsys, size):
    """`export --size 100000x100000` grew to 24 GB until the kernel killed it (exit 137, no line)."""
    _session(tmp_path / "s.kvtui", 2, frames=3)
    assert main(["export", str(tmp_path / "s.kvtui"), "--cast", str(tmp_path / "x.cast"), "--size", size]) == 2
    one_line_error(capsys, "is beyond the largest screen, 1000x500 cells")
    assert main(["watch", "--headless", "--duration", "1", "--size", size]) == 2
    one_line_error(capsys, "is beyond the largest screen")


def test_export_of_a_one_frame_recording_says_so_not_from(tmp_path, capsys):
    _session(tmp_path / "s.kvtui", 2)  # (one frame written)
    assert main(["export", str(tmp_path / "s.kvtui"), "--cast", str(tmp_path / "x.cast")]) == 2
    err = one_line_error(capsys, "nothing to film: ")
    assert "holds 1 frame, spanning 0 s" in err and "--from" not in err


def test_gif_width_without_a_gif_is_refused(tmp_path, capsys):
    _session(tmp_path / "s.kvtui", 2, frames=3)
    assert main(["export", str(tmp_path / "s.kvtui"), "--cast", str(tmp_path / "x.cast"), "--gif-width", "900"]) == 2
    one_line_error(capsys, "--gif-width sets the width of a GIF: it needs --gif PATH")


def test_an_older_recording_cannot_be_exported_as_a_trace(tmp_path, capsys):
    """A recording whose request rows keep no pages (as every recording did) cannot become a trace: one line,
    exit 2, no file."""
    _session(tmp_path / "s.kvtui", 3)
    out = tmp_path / "t.jsonl"
    assert main(["export", str(tmp_path / "s.kvtui"), "--trace", str(out)]) == 2
    one_line_error(capsys, "was recorded by an older kvtui, which kept no pages of its requests: it cannot be exported "
                           "as a trace")
    assert not out.exists()
    _session(tmp_path / "empty.kvtui", 0)
    assert main(["export", str(tmp_path / "empty.kvtui"), "--trace", str(out)]) == 2
    one_line_error(capsys, "holds no request rows")
    assert main(["export", str(tmp_path / "s.kvtui")]) == 2
    one_line_error(capsys, "nothing to export: give --cast PATH, --gif PATH, --svg-anim PATH or --trace PATH")


def test_a_recording_exports_the_trace_save_trace_wrote(tmp_path, capsys):
    """A run recorded with --record and saved with --save-trace: `kvtui export REC --trace FILE` writes the same
    rows (lengths, output lengths, hash ids; times to the millisecond) and says the block size."""
    from waits import wait_for

    from kvtui.config.exports import ExportPlan
    from kvtui.config.workload import synthetic_description
    from kvtui.core.layout import PRESETS
    from kvtui.launch import Outputs
    from kvtui.live import LiveSession
    from kvtui.testing.fake_engine import FakeCluster, FakeEngine
    from workload import SyntheticWorkload, WorkloadSpec
    from workload.trace import read_trace

    tiny = PRESETS["tiny"]
    spec = WorkloadSpec(scenario="multi-turn", pool=3, prompt_tokens=60, page_tokens=tiny.page_tokens, rate=500.0,
                        output_tokens=123)
    saved, rec, out = tmp_path / "saved.jsonl", tmp_path / "s.kvtui", tmp_path / "exported.jsonl"
    session = LiveSession(FakeEngine(tiny), SyntheticWorkload(spec), synthetic_description(spec), max_requests=30,
                          cluster=FakeCluster())
    try:
        with Outputs(ExportPlan(save_trace=str(saved))) as outputs:
            outputs.attach(session)
            session.recording.start(str(rec))
            session.start()
            wait_for(lambda: session.counts().completed >= 30, 10.0, "30 requests")
            session.stop()
    finally:
        session.stop()
    capsys.readouterr()
    assert main(["export", str(rec), "--trace", str(out)]) == 0
    said = capsys.readouterr().out
    assert said == (f"kvtui export: {out}: 30 rows in blocks of {tiny.page_tokens} tokens; replay it with "
                    f"--trace-block-tokens {tiny.page_tokens} (aiperf: --isl-block-size {tiny.page_tokens}, "
                    f"analyze-trace --block-size {tiny.page_tokens})\n")
    a, _ = read_trace(saved, block_tokens=tiny.page_tokens, strict=True)
    b, _ = read_trace(out, block_tokens=tiny.page_tokens, strict=True)
    assert [(r.input_length, r.output_length, r.hash_ids) for r in b] == \
        [(r.input_length, r.output_length, r.hash_ids) for r in a]
    assert {r.output_length for r in b} == {123} and len(b) == 30
    assert all(abs(x.timestamp_ms - y.timestamp_ms) <= 1 for x, y in zip(a, b))
