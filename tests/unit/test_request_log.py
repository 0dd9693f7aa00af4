"""The per-request log: its rows, the CSV stream (rows land as requests finish), the atomic report mode,
Parquet (with pyarrow), a log that fails mid-run, and the request rows a recorded session keeps."""

from __future__ import annotations

import csv
import sqlite3

import pytest

from kvtui.core.codes import NO_AVAILABLE_HANDLE
from kvtui.core.events import RequestResult
from kvtui.export.request_log import NAMES, RequestLog, open_log, parquet_available, request_row
from kvtui.metrics.aggregate import Aggregator
from kvtui.session.reader import SessionReader
from kvtui.session.writer import SessionWriter


def result(i: int, hit: int = 3, codes=None, labels=(("pool", "2"), ("shared_tokens", "48"))) -> RequestResult:
    return RequestResult(req_id=i, scenario="shared-system-prompt", n_tokens=70, cacheable_tokens=64, page_tokens=8,
                         page_bytes=4096, pages_total=8, pages_hit=hit, states=bytes(8), pages_published=8 - hit,
                         bytes_loaded=hit * 4096, bytes_written=(8 - hit) * 4096, verified=hit, probe_ms=0.25,
                         read_ms=1.5, put_ms=2.0, publish_probe_ms=0.125, codes=codes or {}, arrival_s=0.5 * i,
                         t_start=1.0 + i, t_end=1.25 + i, labels=labels)


class Est:
    active = True

    def recompute_ms(self, k: int) -> float:
        return 0.5 * k


def test_a_row_has_every_column_with_its_unit():
    row = request_row(result(4, codes={NO_AVAILABLE_HANDLE: 2}), Est())
    assert tuple(row) == NAMES
    assert row["group"] == "sys 2" and row["trace_row"] is None and row["pages"] == 8 and row["pages_hit"] == 3
    assert row["reload_ms"] == 1.75 and row["publish_ms"] == 2.125 and row["tokens_hit"] == 24
    assert row["arrival_s"] == 2.0 and row["start_s"] == 5.0 and row["finish_s"] == 5.25
    assert row["errors"] == "NO_AVAILABLE_HANDLE:2" and row["decode_worker"] == row["prefill_worker"] == 0
    assert row["ttft_saved_ms"] == 0.5 * 24 - 1.75  # an estimate: recompute of the reloaded tokens − reload
    assert request_row(result(1, hit=0), Est())["ttft_saved_ms"] is None  # nothing reloaded: nothing saved
    assert request_row(result(1))["ttft_saved_ms"] is None  # no estimator
    trace = request_row(result(2, labels=(("row", "57"), ("output_tokens", "9"))))
    assert trace["trace_row"] == "57" and trace["output_tokens"] == 9  # the decode length the request carries
    assert request_row(result(1))["output_tokens"] is None  # (a request that carries none)


def test_csv_rows_land_as_requests_finish(tmp_path):
    path = tmp_path / "r.csv"
    log = RequestLog(path)
    for i in range(3):
        log.add(result(i))
        lines = path.read_text().splitlines()  # before close: streamed, one whole line per request
        assert len(lines) == 2 + i and lines[0].split(",") == list(NAMES)
    log.close()
    log.close()
    rows = list(csv.DictReader(path.open()))
    assert [r["id"] for r in rows] == ["0", "1", "2"] and rows[1]["pages_hit"] == "3" and rows[0]["trace_row"] == ""
    assert log.rows == 3 and log.error is None


def test_an_atomic_log_appears_whole_or_not_at_all(tmp_path):
    path = tmp_path / "a.csv"
    log = RequestLog(path, atomic=True)
    log.add(result(0))
    assert not path.exists()
    log.close()
    assert len(path.read_text().splitlines()) == 2
    other = tmp_path / "b.csv"
    log = RequestLog(other, atomic=True)
    log.add(result(0))
    log.discard()
    assert not other.exists() and list(tmp_path.iterdir()) == [path]  # no temporary file left either


def test_a_failing_write_stops_the_log_not_the_run(tmp_path):
    log = RequestLog(tmp_path / "f.csv")
    log._f.close()  # the file goes away under it (as a full disk would fail the write)
    log.add(result(0))
    log.add(result(1))
    assert log.error and "dropped" in log.error and log.rows == 0


@pytest.mark.skipif(not parquet_available(), reason="pyarrow (the optional `parquet` extra) is not installed")
def test_parquet_rows_in_row_groups(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    import kvtui.export.request_log as rl

    monkeypatch.setattr(rl, "PARQUET_ROW_GROUP", 4)
    path = tmp_path / "r.parquet"
    log = open_log(path, Est())
    for i in range(10):
        log.add(result(i, codes={NO_AVAILABLE_HANDLE: 1} if i == 3 else None))
    assert not path.exists()  # written whole at close (Parquet's footer)
    log.close()
    f = pq.ParquetFile(path)
    assert f.metadata.num_rows == 10 and f.metadata.num_row_groups == 3
    t = f.read().to_pydict()
    assert t["id"] == list(range(10)) and t["errors"][3] == "NO_AVAILABLE_HANDLE:1" and t["trace_row"][0] is None
    assert t["reload_ms"][0] == 1.75 and t["ttft_saved_ms"][0] == 10.25


def test_a_session_keeps_the_request_rows_and_old_files_have_none(tmp_path):
    agg = Aggregator()
    path = tmp_path / "s.kvtui"
    w = SessionWriter(path, {"command": "test"})
    for i in range(5):
        w.add_request(request_row(result(i)))
        if i % 2:
            w.write(agg.frame())
    w.close()  # the rows after the last frame are written too
    reader = SessionReader(path)
    rows = list(reader.request_rows())
    assert [r["id"] for r in rows] == list(range(5)) and rows[0] == request_row(result(0))
    assert reader.request_columns == NAMES
    old = tmp_path / "old.kvtui"  # a file of the first format: no requests table, no request_columns
    w = SessionWriter(old, {"command": "test"})
    w.write(agg.frame())
    w.close()
    db = sqlite3.connect(old)
    db.execute("DROP TABLE requests")
    db.commit()
    db.close()
    reader = SessionReader(old)
    assert list(reader.request_rows()) == [] and reader.request_columns == () and len(reader) == 1


def test_the_docs_columns_table_is_the_generated_one():
    from pathlib import Path

    from kvtui.export.request_log import markdown_table

    text = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "request-log.md").read_text()
    assert markdown_table() in text, "docs/reference/request-log.md differs: make docs"


def test_a_log_that_cannot_write_its_header_leaves_no_temporary_file(tmp_path, monkeypatch):
    import pytest

    from kvtui.export.request_log import RequestLog

    def full(self, values):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RequestLog, "_write_line", full)
    with pytest.raises(OSError):
        RequestLog(tmp_path / "r.csv", atomic=True)
    assert list(tmp_path.iterdir()) == []
