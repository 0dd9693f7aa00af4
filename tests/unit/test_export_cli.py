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


def _session(path, rows: int) -> None:
    agg = Aggregator()
    w = SessionWriter(path, {"command": "test"})
    for i in range(rows):
        w.add_request(request_row(RequestResult(i, "random", 16, 16, 8, 4096, 2, 0, bytes(2), pages_published=2,
                                                t_start=i, t_end=i + 0.5)))
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
