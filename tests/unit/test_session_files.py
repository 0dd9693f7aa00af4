"""Files kvtui writes and reads besides the store: JSON outputs follow the umask like the SVGs; a recording
copied without its -wal (the writer still running, or killed) says which file is missing."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from kvtui.cli import main
from kvtui.commands.output import write_json_atomic
from kvtui.core.events import RequestResult
from kvtui.metrics.aggregate import Aggregator
from kvtui.session import SessionError
from kvtui.session.reader import WAL_MISSING, SessionReader
from kvtui.session.writer import CHECKPOINT_FRAMES, SessionWriter


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _result(i: int) -> RequestResult:
    return RequestResult(req_id=i, scenario="s", n_tokens=64, cacheable_tokens=64, page_tokens=16, page_bytes=4096,
                         pages_total=4, pages_hit=2, states=bytes([1, 1, 2, 2]), pages_published=2,
                         bytes_loaded=2 * 4096, bytes_written=2 * 4096, verified=2, probe_ms=0.5, read_ms=1.5)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_json_outputs_are_written_with_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        write_json_atomic(str(tmp_path / "out.json"), {"a": 1})
        with open(tmp_path / "plain.svg", "w") as f:  # what an SVG written by open() gets
            f.write("<svg/>")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "out.json").st_mode) == mode
    assert stat.S_IMODE(os.stat(tmp_path / "plain.svg").st_mode) == mode
    assert (tmp_path / "out.json").read_text() == '{\n  "a": 1\n}\n'


def _copy_alone(src, folder):
    folder.mkdir()
    return shutil.copy(src, folder / src.name)


def test_a_recording_copied_without_its_wal_says_to_copy_it(tmp_path, capsys):
    clock = Clock()
    agg = Aggregator(clock=clock)
    path = tmp_path / "live.kvtui"
    w = SessionWriter(path, {})
    agg.begin_span()

    def frames(n):
        for _ in range(n):
            agg.add(_result(agg.totals()["requests"]))
            clock.t += 0.1
            w.write(agg.frame())

    frames(5)  # the writer runs: everything since it opened the file is in live.kvtui-wal
    assert (tmp_path / "live.kvtui-wal").exists()
    early = _copy_alone(path, tmp_path / "early")
    with pytest.raises(SessionError, match=WAL_MISSING) as exc:
        SessionReader(early)
    assert "another SQLite database" not in str(exc.value) and "live.kvtui-wal" in str(exc.value)
    assert sorted(os.listdir(tmp_path / "early")) == ["live.kvtui"]  # reading left no -wal/-shm beside it
    assert main(["report", str(early)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(WAL_MISSING) and len(err.splitlines()) == 1

    frames(CHECKPOINT_FRAMES + 5)  # past the first checkpoint: the file alone holds its first 50 frames
    late = _copy_alone(path, tmp_path / "late")
    r = SessionReader(late)
    assert r.wal_missing and len(r) == CHECKPOINT_FRAMES and WAL_MISSING in r.warning("reporting")
    assert main(["report", str(late), "--json", str(tmp_path / "late.json")]) == 0
    assert WAL_MISSING in capsys.readouterr().err

    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(path, both / path.name)
    shutil.copy(f"{path}-wal", both / f"{path.name}-wal")
    r = SessionReader(both / path.name)  # read whole, but its recorder has not closed it: said so
    assert not r.wal_missing and len(r) == CHECKPOINT_FRAMES + 10
    assert r.warning("reporting").endswith(f"was not closed (its recorder still runs, or was killed): reporting its "
                                           f"{CHECKPOINT_FRAMES + 10} frames so far")
    assert main(["report", str(both / path.name), "--json", str(tmp_path / "both.json")]) == 0
    assert "was not closed" in capsys.readouterr().err
    assert json.loads((tmp_path / "both.json").read_text())["session"]["not_closed"] is True
    w.close()
    r = SessionReader(path)  # closed: one self-contained file
    assert not r.wal_missing and len(r) == CHECKPOINT_FRAMES + 10 and not (tmp_path / "live.kvtui-wal").exists()
    assert not r.not_closed and r.warning("reporting") is None


def test_a_recording_closes_cleanly_while_another_process_reads_it(tmp_path):
    """``kvtui report`` on a live recording holds a read lock; the writer's close must not fail ("database is
    locked" was a traceback and exit 1), and the file stays readable with every frame."""
    import sqlite3

    clock = Clock()
    agg = Aggregator(clock=clock)
    path = tmp_path / "live.kvtui"
    writer = SessionWriter(str(path), {"command": "test"})
    for i in range(5):
        agg.add(_result(i))
        clock.t += 0.1
        writer.write(agg.frame())
    reader_db = sqlite3.connect(str(path))
    reader_db.execute("BEGIN")
    assert reader_db.execute("SELECT COUNT(*) FROM frames").fetchone()[0] == 5  # a read transaction is open
    writer.close()  # must not raise
    reader_db.close()
    reader = SessionReader(str(path))
    assert len(reader) == 5
    assert reader.final_frame().totals["requests"] == 5


class _FullAfter:
    """Stands for the writer's SQLite connection: its ``n``-th statement on fails as on a full disk."""

    def __init__(self, db, n: int):
        self.db, self.n = db, n

    def execute(self, *args):
        import sqlite3

        self.n -= 1
        if self.n < 0 and args[0].startswith("INSERT"):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(*args)

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_a_full_disk_stops_the_recording_not_the_run_and_keeps_what_was_written(tmp_path):
    clock = Clock()
    agg = Aggregator(clock=clock)
    path = tmp_path / "full.kvtui"
    w = SessionWriter(path, {})
    agg.begin_span()
    w.db = _FullAfter(w.db, 6)
    for _ in range(10):
        agg.add(_result(agg.totals()["requests"]))
        clock.t += 0.1
        w.write(agg.frame())  # never raises
    assert w.error == f"recording to {path} stopped after 6 frames: database or disk is full"
    w.close()
    r = SessionReader(path)
    assert len(r) == 6 and not (tmp_path / "full.kvtui-wal").exists()


def test_a_recording_that_cannot_start_leaves_no_file_behind(tmp_path, monkeypatch):
    import sqlite3

    import kvtui.session.writer as writer

    real_connect = sqlite3.connect

    def connect(*a, **k):
        db = real_connect(*a, **k)
        db.execute("CREATE TABLE frames (x)")  # the schema's own CREATE then fails: the file exists by now
        return db

    monkeypatch.setattr(writer.sqlite3, "connect", connect)
    path = tmp_path / "x.kvtui"
    with pytest.raises(SessionError, match="cannot record to"):
        SessionWriter(path, {})
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(writer.sqlite3, "connect", real_connect)
    SessionWriter(path, {}).close()  # a retry with the same name is not refused
    assert path.exists()


@pytest.fixture(scope="module")
def demo_recording(tmp_path_factory):
    """A closed recording of 300 frames of a seeded DemoSource, each with a few request rows (hundreds of
    SQLite pages)."""
    from kvtui.testing.demo import DemoController, DemoSource

    src = DemoSource(3, tick_s=0.5)
    ctl = DemoController(src, record_dir=str(tmp_path_factory.mktemp("cut")))
    on, path = ctl.toggle_recording()
    assert on
    for i in range(300):
        for j in range(5):
            src.writer.add_request({"req_id": 5 * i + j, "scenario": "demo", "pages_hit": (i * j) % 7})
        src.frame()
    ctl.stop()
    return path


@pytest.mark.parametrize("fraction", [0.05, 0.2, 0.5, 0.9, 0.999])
def test_a_recording_cut_short_reads_up_to_its_last_intact_frame(demo_recording, tmp_path, capsys, fraction):
    """A file cut short (a copy that stopped, a full disk) is no longer refused whole ("database disk image
    is malformed"): its frames up to the cut are read and said to be so, each the same frame as in the whole
    file, for report and replay alike."""
    whole = SessionReader(demo_recording)
    data = open(demo_recording, "rb").read()
    size = int(len(data) * fraction)
    cut = tmp_path / "cut.kvtui"
    cut.write_bytes(data[:size])
    r = SessionReader(cut)
    assert r.cut_short and r.damaged and 1 <= len(r) <= len(whole)
    if len(data) - size >= 4 * 4096:  # (a cut within the last pages may take only a page of requests or the index)
        assert len(r) < len(whole)
    assert len(r) >= len(whole) * fraction * 0.8 - 8  # most frames before the cut (the first pages: the schema)
    for i in (0, len(r) // 2, len(r) - 1):
        assert r.frame_at(i) == whole.frame_at(i)
    assert r.times == whole.times[:len(r)]
    rows = list(r.request_rows())  # the request rows up to the cut
    assert rows == list(whole.request_rows())[:len(rows)] and (rows or fraction < 0.5)
    warning = r.warning("reporting")
    assert warning == (f"{cut} is cut short ({size:,} of {len(data):,} bytes): reporting its first {len(r)} "
                       "frames, those before the cut")
    assert main(["report", str(cut), "--json", str(tmp_path / "cut.json")]) == 0
    assert capsys.readouterr().err.strip() == f"kvtui: {warning}"
    session = json.loads((tmp_path / "cut.json").read_text())["session"]
    assert session["damaged"] is True and session["frames"] == len(r)


def test_a_recording_cut_before_its_first_frame_says_so(demo_recording, tmp_path):
    data = open(demo_recording, "rb").read()
    for size in (100, 4096, 3 * 4096):  # inside the header page; the header page alone; before any frame
        cut = tmp_path / f"cut{size}.kvtui"
        cut.write_bytes(data[:size])
        with pytest.raises(SessionError) as exc:
            SessionReader(cut)
        assert str(exc.value) == (f"{cut} is cut short ({size:,} of {len(data):,} bytes) before its first "
                                  "complete frame")
