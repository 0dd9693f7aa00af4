"""Stopping, with real processes: Ctrl-C / SIGTERM / q end `kvtui run` and `kvtui watch` within 2 s with
every process gone (requests under way are abandoned, not drained), exit 130 / 143 / 0, an interrupted run
still prints its summary and writes `--json` with `"interrupted": true` and a readable recording, and
`--duration` bounds the whole command (≤ duration + 1.5 s, teardown included).

Each case starts `python -m kvtui.cli …` on a pseudo-terminal (so `run` shows its progress bar and `watch` its
screen) and waits on its progress, never a fixed sleep. The seed layout (14 MiB pages) with 16-page prompts
is the case that used to take 5-8.6 s: up to 9 submitted requests of 224 MiB each were drained first.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import threading
import time
from contextlib import closing
from pathlib import Path

import psutil
import pytest
from waits import wait_for

import kvtui

pytestmark = pytest.mark.integration
ROOT = Path(kvtui.__file__).resolve().parent.parent
# The targets are 2 s and duration + 1.5 s (measured 0.2-1.0 s and + 0.3-0.6 s on a quiet machine: README
# "Stopping"). The tests check the behaviour with bounds a loaded 2-core machine also meets but the old
# drain-everything code did not (it took 5-9 s to stop and ran duration + 8-10 s): tests check behaviour, not timings.
STOP_BUDGET_S = 4.5  # signal (or key) → the last process kvtui started is gone
DURATION_SLACK_S = 5.0  # --duration D: the whole command ends within D + this
SEED_LONG = ["--layout", "seed", "--prompt-tokens", "4096", "--pool", "1", "--store-size", "512MiB"]  # 16 pages
TINY = ["--layout", "tiny", "--store-size", "32MiB"]


def _default_sigint() -> None:
    """In the child: SIGINT and SIGHUP as a terminal gives them (a test run from a background job or under
    nohup inherits them ignored, and Python, like kvtui, then leaves them ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


class Cli:
    """``python -m kvtui.cli ARGV`` on a 120×40 pseudo-terminal; every process it starts is tracked."""

    def __init__(self, argv: list[str], cwd: Path, env: dict | None = None):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = dict(os.environ, TERM="xterm-256color", PYTHONPATH=str(ROOT), KVTUI_ISOLATE="off", **(env or {}))
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", *argv], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, cwd=cwd, start_new_session=True,
                                     preexec_fn=_default_sigint)
        os.close(slave)
        self.master = master
        self.out = bytearray()
        self.seen: dict[int, psutil.Process] = {self.proc.pid: psutil.Process(self.proc.pid)}
        self._done = threading.Event()
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._track, daemon=True)]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                break
            if not data:
                break
            self.out.extend(data)

    def _track(self) -> None:
        parent = self.seen[self.proc.pid]
        while not self._done.is_set() and self.proc.poll() is None:
            try:
                for child in parent.children(recursive=True):
                    self.seen.setdefault(child.pid, child)
            except psutil.Error:
                pass
            time.sleep(0.02)  # (a sampler's pace: it records every process the command starts)

    def text(self) -> str:
        return bytes(self.out).decode("utf-8", "replace")

    def wait_for(self, cond, timeout_s: float, what: str) -> None:
        """Wait until ``cond()``; fails at once if the command exits first, with the end of its output."""
        def ready() -> bool:
            if cond():
                return True
            assert self.proc.poll() is None, f"exited ({self.proc.returncode}) before {what}:\n{self.text()[-3000:]}"
            return False

        wait_for(ready, timeout_s, what, detail=lambda: self.text()[-3000:])

    def wait_for_text(self, pattern: str, timeout_s: float = 60) -> None:
        self.wait_for(lambda: re.search(pattern, self.text()), timeout_s, repr(pattern))

    def _alive(self) -> list[psutil.Process]:
        alive = []
        for p in self.seen.values():
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        return alive

    def finish(self, timeout_s: float = 30) -> tuple[int | None, float]:
        """Wait for the exit and for every tracked process to be gone: (exit code, when the last was gone,
        in monotonic seconds). Kills what is left after ``timeout_s`` (the code is then None). (Polls every
        10 ms rather than wait_for: the moment the last process is gone is a measurement, and what is left
        at the deadline is killed, not just reported.)"""
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self._done.set()
        while self._alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        gone = time.monotonic()
        left = self._alive()
        for p in left:
            p.kill()
        rc = self.proc.poll()
        if rc is None:
            self.proc.kill()
            self.proc.wait()
        for t in self._threads:
            t.join(2)
        os.close(self.master)
        assert not left, [_cmdline(p) for p in left]
        return rc, gone


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:  # (killed just above)
        return f"pid {p.pid}"


def _frames(path: Path) -> int:
    """Frames recorded so far in a session file being written (0 if it cannot be read yet)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:  # closed: an open reader would
            return int(db.execute("SELECT count(*) FROM frames").fetchone()[0])  # keep the writer from closing
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("layout,sig,code", [
    (SEED_LONG, signal.SIGTERM, 143),
    (TINY, signal.SIGINT, 130),
    (TINY, signal.SIGHUP, 129),  # a closed terminal: the same teardown and summary
], ids=["seed-sigterm", "tiny-sigint", "tiny-sighup"])
def test_interrupted_run_stops_within_2s_and_keeps_its_summary(tmp_path, layout, sig, code):
    from kvtui.session.reader import SessionReader

    out, rec = tmp_path / "run.json", tmp_path / "run.kvtui"
    cli = Cli(["run", *layout, "--duration", "120", "--json", str(out), "--record", str(rec)], tmp_path)
    cli.wait_for_text(r"published [1-9]")  # the progress bar: requests finish, more are under way
    cli.proc.send_signal(sig)
    sent = time.monotonic()
    rc, gone = cli.finish()
    text = cli.text()
    assert rc == code, text[-3000:]
    assert gone - sent < STOP_BUDGET_S, f"{gone - sent:.2f} s from the signal to the last process gone"
    assert "Traceback" not in text
    assert "requests " in text and "KV page hits" in text  # the summary was printed
    s = json.loads(out.read_text())
    assert s["interrupted"] is True and s["requests"] >= 1 and s["mismatches"] == 0
    r = SessionReader(rec)
    assert not r.damaged and len(r) >= 1


@pytest.mark.parametrize("case", ["seed-multi-turn", "tiny-store-node-killed", "tiny-store-node-killed-real",
                                  "trace-waiting-for-a-row"])
def test_duration_bounds_the_whole_command(tmp_path, case):
    duration = 6.0
    if case == "seed-multi-turn":
        argv = ["run", "--scenario", "multi-turn", "--layout", "seed", "--prompt-tokens", "2048",
                "--store-size", "512MiB"]
    elif case == "trace-waiting-for-a-row":  # slowed 1000×: the second row arrives minutes after the first
        argv = ["run", "--trace", "synthetic", "--trace-speedup", "0.001", "--layout", "tiny"]
    else:  # the store node: mooncake_client with dummy workers (the default), a kvtui store node with real ones
        argv = ["run", *TINY] + (["--worker-client", "real"] if case.endswith("-real") else [])
    cli = Cli([*argv, "--duration", f"{duration:g}", "--json", str(tmp_path / "d.json")], tmp_path)
    cli.wait_for_text(r"published [1-9]|kvtui run", timeout_s=duration + 30)
    running = time.monotonic()  # start-up is over: the run shows its progress
    if case.startswith("tiny-store-node-killed"):
        node = "kvtui.mooncake.store_node" if case.endswith("-real") else "mooncake_client"
        store = next(p for p in list(cli.seen.values()) if node in " ".join(p.cmdline()))
        store.kill()
    rc, gone = cli.finish(timeout_s=duration + 60)
    killed = case.startswith("tiny-store-node-killed")
    # a store node of the run's own cluster that dies stops the run at once (nothing would restart it): exit 2
    assert rc == (2 if killed else 0), cli.text()[-3000:]
    # the bound holds once start-up is over; on a machine so loaded that start-up itself took longer than
    # the duration, the run ends as soon as it starts
    bound = max(cli.t0 + duration, running) + DURATION_SLACK_S
    assert gone <= bound, f"ran {gone - cli.t0:.2f} s for --duration {duration:g} (start-up {running - cli.t0:.2f} s)"
    s = json.loads((tmp_path / "d.json").read_text())
    assert s["interrupted"] is killed
    if killed:
        assert s["stopped_by"].startswith("the store node kvtui started died (exit code -9)"), s["stopped_by"]
        assert "Traceback" not in cli.text(), cli.text()[-3000:]


@pytest.mark.parametrize("how,code", [("q", 0), ("ctrl+c", 130), ("sigterm", 143)])
def test_watch_stops_within_2s(tmp_path, how, code):
    rec = tmp_path / "w.kvtui"
    cli = Cli(["watch", *SEED_LONG, "--record", str(rec)], tmp_path)
    cli.wait_for(lambda: _frames(rec) >= 15, 90, "15 recorded frames")  # the monitor runs, requests are under way
    if how == "sigterm":
        cli.proc.send_signal(signal.SIGTERM)
    else:
        os.write(cli.master, b"q" if how == "q" else b"\x03")
    sent = time.monotonic()
    rc, gone = cli.finish()
    assert rc == code, cli.text()[-3000:]
    assert gone - sent < STOP_BUDGET_S, f"{gone - sent:.2f} s from {how} to the last process gone"
    assert "Traceback" not in cli.text()


# -- the engine's part, in-process -------------------------------------------------------------------------
def _synthetic(scenario: str, layout, pages: int = 8):
    from workload import SyntheticWorkload, WorkloadSpec

    return SyntheticWorkload(WorkloadSpec(scenario=scenario, pool=1, prompt_tokens=pages * layout.page_tokens,
                                          page_tokens=layout.page_tokens))


def test_a_worker_stuck_in_a_store_call_does_not_delay_the_stop():
    """The store node frozen (SIGSTOP) mid-transfer of 14 MiB pages: the workers' store calls hang, and
    Engine.stop still has every process gone within ~1 s (a worker still in its call is killed)."""
    import uuid

    from kvtui.core.layout import PRESETS
    from kvtui.engine.driver import Driver
    from kvtui.engine.engine import EngineOptions
    from kvtui.launch import start_stack
    from kvtui.mooncake.cluster import ClusterOptions

    layout = PRESETS["seed"]
    stack = start_stack(EngineOptions(layout=layout, model=f"stuck-{uuid.uuid4().hex[:6]}", store_bytes=256 << 20),
                        ClusterOptions())
    engine = stack.engine
    procs = [psutil.Process(pid) for pid in {**engine.worker_pids(), **stack.cluster.pids()}.values()]
    store = stack.cluster.process("store")
    done: list = []
    d = Driver(engine, _synthetic("shared-system-prompt", layout), done.append).start()
    try:
        wait_for(lambda: len(done) >= 2, 60, "two finished requests")
        os.kill(store.pid, signal.SIGSTOP)
        marks = [(time.monotonic(), len(done))]

        def stalled() -> bool:  # no request finished for 0.5 s: the calls under way hang on the frozen node
            now, n = time.monotonic(), len(done)
            if n != marks[-1][1]:
                marks.append((now, n))
            return now - marks[-1][0] >= 0.5

        wait_for(stalled, 20, "stalled store calls", interval_s=0.02)
        assert d.issued > d.completed  # requests are under way
        t0 = time.monotonic()
        d.stop()
        stack.stop()
        took = time.monotonic() - t0
    finally:
        d.stop()
        stack.stop()
    gone, alive = psutil.wait_procs(procs, timeout=5)
    assert alive == [], [p.name() for p in alive]
    assert took < 4.0, f"the stop took {took:.2f} s"  # a stuck store call is killed (it used to block the stop)
    assert d.error is None


def test_results_of_an_abandoned_run_never_reach_the_next_run(fresh_cluster):
    """A run stopped with requests under way, then another on the same engine (the bench reuses engines):
    the second sees only its own requests' results."""
    import uuid

    from kvtui.core.layout import PageLayout
    from kvtui.engine.engine import Engine, EngineOptions

    # 4 MiB pages, 64 MiB a request (≈ 50 ms), well beyond the collector's last 20 ms wait once the run is
    # abandoned; a store of this test's own, emptied before each attempt, so no put is refused (a refused put
    # ends its request at once and makes decode back off: then nothing is under way at the stop)
    layout = PageLayout(8, 4, 128, 256, 2)
    engine = Engine(EngineOptions(layout=layout, model=f"abandon-{uuid.uuid4().hex[:6]}"),
                    endpoints=fresh_cluster.endpoints)
    engine.start()
    try:
        _abandon_then_run_again(engine, layout)
    finally:
        engine.stop()


def _abandon_then_run_again(engine, layout) -> None:
    from kvtui.engine.driver import Driver

    for _attempt in range(10):  # whether a request is under way at the stop is timing: stop until one was
        engine.clear_store()
        first: list = []
        a = Driver(engine, _synthetic("random", layout, pages=16), first.append).start()
        wait_for(lambda first=first: len(first) >= 1, 60, "a finished request", interval_s=0.02)
        a.stop()
        assert a.done.wait(1.0)
        if a.abandoned > 0:
            break
    assert a.abandoned > 0, "no run was stopped with a request under way"
    second: list = []
    b = Driver(engine, _synthetic("shared-system-prompt", layout), second.append, max_requests=3)
    b.run()
    assert [r.scenario for r in second] == ["shared-system-prompt"] * 3
    assert b.completed == 3 and b.error is None


def _spawned(cli: Cli) -> int:
    """Processes of ``cli`` started by multiprocessing's spawn (workers, the resource tracker, a bare loop)."""
    n = 0
    for p in list(cli.seen.values()):
        try:
            n += "spawn_main" in " ".join(p.cmdline())
        except psutil.Error:
            pass
    return n


def _synthetic_head(tmp_path: Path, rows: int = 2000) -> str:
    """The first ``rows`` rows of the shipped synthetic trace (3993 rows; ~15 s of a bench round's engine
    replay and bare loop before its two-process loop starts): at 2000 rows, each phase of a round or point
    still runs seconds (the bare loop, the shortest, >= 1.3 s on this layout), long enough to be interrupted
    mid-way, and the phases before the one under test end sooner."""
    from kvtui.core.traces import resolve_trace

    head = tmp_path / f"synthetic-head{rows}.jsonl"
    with open(resolve_trace("synthetic")) as fh:
        head.write_text("".join(line for _, line in zip(range(rows), fh)))
    return str(head)


SMALL_PAGES = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"]
NEXT_PHASE = {"bare loop": "split over two processes", "two-process loop": "round 1/1: engine "}


@pytest.mark.parametrize("loop", ["bare loop", "two-process loop"])
def test_ctrl_c_during_the_bench_trace_bare_loop_is_one_clean_exit(tmp_path, loop):
    """A Ctrl-C reaches the whole process group, the processes of ``bench --trace``'s loops included: the
    bench exits 130 without a traceback (the loops' processes start with the signal blocked, and the bench
    stops them at once) and every process is gone."""
    cli = Cli(["bench", "--trace", _synthetic_head(tmp_path), *SMALL_PAGES, "--rounds", "1"], tmp_path)
    if loop == "bare loop":
        cli.wait_for_text(r"with a bare loop of the same store calls", timeout_s=120)
    else:
        cli.wait_for_text(r"split over two processes", timeout_s=180)
    # processes started by multiprocessing's spawn: the two workers, then the loop's (the reader and the writer)
    cli.wait_for(lambda: _spawned(cli) >= (3 if loop == "bare loop" else 4), 30, f"the {loop}'s processes")
    os.killpg(cli.proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to every process of the group
    rc, _gone = cli.finish()
    assert rc == 130 and "Traceback" not in cli.text() and "KeyboardInterrupt" not in cli.text(), cli.text()[-3000:]
    assert NEXT_PHASE[loop] not in cli.text(), cli.text()[-3000:]  # the Ctrl-C came while the loop ran


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("moment", ["log folder", "workers spawning", "engine started"])
def test_an_interrupt_during_start_up_leaves_no_log_folder(tmp_path, moment, sig, code):
    """A Ctrl-C (or a SIGTERM to the whole process group, as a service manager sends) as soon as the embedded
    cluster's log folder exists, as soon as the first worker process is spawned (it is still importing), or
    as soon as the engine has started (before the run's session exists): the run exits 130 (143) without a
    traceback, from itself or a child, with every process gone (``finish``), and, since nothing failed (the
    user stopped it), its temporary log folder is removed as after a clean run, with no line saying it was kept
    "because something failed"."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    cli = Cli(["run", "--duration", "60", *TINY], tmp_path, env={"TMPDIR": str(temp)})
    if moment == "log folder":
        cli.wait_for(lambda: any(temp.glob("kvtui-logs-*")), 60, "the log folder")
    elif moment == "workers spawning":
        cli.wait_for(lambda: _spawned(cli) >= 1, 60, "a spawned worker")
    else:
        cli.wait_for_text(r"kvtui: network", timeout_s=60)
    os.killpg(cli.proc.pid, sig)
    rc, _gone = cli.finish()
    assert rc == code, cli.text()[-2000:]
    assert "Traceback" not in cli.text() and "Fatal Python error" not in cli.text(), cli.text()[-3000:]
    assert "kept because" not in cli.text() and not list(temp.glob("kvtui-logs-*")), cli.text()[-2000:]


def _spawned_in_order(cli: Cli) -> list[psutil.Process]:
    """The processes ``cli`` started by multiprocessing's spawn (its resource tracker left out), oldest first
    (start times tie within a clock tick: then by pid)."""
    procs = []
    for p in list(cli.seen.values()):
        try:
            if "spawn_main" in " ".join(p.cmdline()) and "resource_tracker" not in " ".join(p.cmdline()):
                procs.append((p.create_time(), p.pid, p))
        except psutil.Error:
            pass
    return [t[2] for t in sorted(procs, key=lambda t: t[:2])]


def _newest_spawned(cli: Cli) -> psutil.Process:
    return _spawned_in_order(cli)[-1]


@pytest.mark.parametrize("victim", ["a worker", "the store node", "the two-process loop's writer"])
def test_a_process_of_bench_trace_killed_mid_run_ends_it_in_one_line(tmp_path, victim):
    """A worker or a loop's process killed (SIGKILL) while ``bench --trace`` replays: the bench says in one
    line which process died and with what exit code, exits 2 without a traceback, and every process is gone."""
    cli = Cli(["bench", "--trace", _synthetic_head(tmp_path), *SMALL_PAGES, "--rounds", "1"], tmp_path)
    if victim == "a worker":
        cli.wait_for_text(r"through the engine, one request at a time", timeout_s=120)
        cli.wait_for(lambda: _spawned(cli) >= 2, 30, "the workers")
        expected = r"kvtui: error: bench stopped: (prefill|decode) worker died \(exit code -9\)"
    elif victim == "the store node":  # dummy workers' calls then answer RPC_FAIL: an outage, not waited out
        cli.wait_for_text(r"through the engine, one request at a time", timeout_s=120)
        cli.wait_for(lambda: _spawned(cli) >= 2, 30, "the workers")
        expected = (r"kvtui: error: bench stopped: the engine's replay met a broken store "
                    r"\((store unreachable|no master serves|\d+ \w+ answers)")
    else:
        cli.wait_for_text(r"split over two processes", timeout_s=180)
        cli.wait_for(lambda: _spawned(cli) >= 4, 30, "the loop's reader and writer")
        expected = r"kvtui: error: bench stopped: the two-process loop's writer died \(exit code -9\)"
    if victim == "the store node":
        next(p for p in list(cli.seen.values()) if p.name().startswith("mooncake_client")).kill()
    else:
        _newest_spawned(cli).kill()
    rc, _gone = cli.finish(60)
    assert rc == 2 and re.search(expected, cli.text()), cli.text()[-3000:]
    assert "Traceback" not in cli.text(), cli.text()[-3000:]


def test_bench_ui_stops_in_one_line_when_the_store_node_dies_mid_round(tmp_path):
    """``bench --ui`` counts requests over fixed windows: a store that stops answering mid-round (the store
    node SIGKILLed: dummy workers' calls answer RPC_FAIL) would lower that round's rate and give a void ratio,
    so the bench stops with one line naming the round, exit 2, every process gone."""
    cli = Cli(["bench", "--ui", "--layout", "tiny", "--seconds", "1", "--rounds", "1"], tmp_path)
    cli.wait_for_text(r"round 1/1, headless: 1 s", timeout_s=120)  # (then 1.5 s of start-up and 1 s counted)
    next(p for p in list(cli.seen.values()) if p.name().startswith("mooncake_client")).kill()
    rc, _gone = cli.finish(60)
    expected = (r"kvtui: error: bench stopped: the headless side's round 1( met a broken store \(\d+ \w+ answers|: "
                r"\w+ worker died)")  # (the store node can die before or after a worker's first store call fails)
    assert rc == 2 and re.search(expected, cli.text()), cli.text()[-3000:]
    assert "Traceback" not in cli.text(), cli.text()[-3000:]


def test_a_sweep_whose_store_breaks_stops_in_one_line_and_keeps_the_points_before(tmp_path):
    """The store node of a sweep's second point SIGKILLed mid-replay (reads of its pages fail, and a run would
    hold its requests for an outage that never ends): the sweep stops with one line naming the point, exit 2, every
    process gone, and its --json holds the first point, marked interrupted."""
    out = tmp_path / "sweep.json"
    # (1000 rows: a point's replay still runs for seconds after its progress bar appears)
    cli = Cli(["sweep", "--trace", _synthetic_head(tmp_path, 1000), "--capacity", "1M,3M", "--json", str(out)],
              tmp_path)
    cli.wait_for_text(r"sweep point 1/2", timeout_s=180)
    cli.wait_for_text(r"2/2: ", timeout_s=60)  # (the progress bar of the second point: its replay runs)
    stores = []
    for p in list(cli.seen.values()):
        try:
            cmd = " ".join(p.cmdline())  # (the segment's owner: mooncake_client for dummy workers, else a store node)
            if "kvtui.mooncake.store_node" in cmd or p.name().startswith("mooncake_client"):
                stores.append((p.create_time(), p.pid, p))
        except psutil.Error:
            pass
    max(stores, key=lambda t: t[:2])[2].kill()
    rc, _gone = cli.finish(60)
    expected = (r"kvtui: error: sweep stopped: the point of 3,000,000 tokens (met a broken store \(\d+ \w+ answers|"
                r"lost its store node \(exit code -9\)).*\(1 point before it written\)")
    assert rc == 2 and re.search(expected, cli.text()), cli.text()[-3000:]
    assert "Traceback" not in cli.text(), cli.text()[-3000:]
    result = json.loads(out.read_text())
    assert result["interrupted"] and [p["capacity_tokens"] for p in result["points"]] == [1_000_000]


@pytest.mark.parametrize("victim, title", [("mooncake_master", "the master"), ("mooncake_client", "the store node")])
def test_a_run_whose_embedded_master_or_store_node_dies_stops_in_one_line(tmp_path, victim, title):
    """Nothing restarts a process of ``kvtui run``'s own cluster (the monitor's M is ``watch``'s), so a run
    that held dispatch for it would wait for ever: the run stops with one line naming the process and its exit
    code, exit 2, every process gone, its summary and --json written (``interrupted``, ``stopped_by``)."""
    out, temp = tmp_path / "run.json", tmp_path / "tmp"
    temp.mkdir()
    cli = Cli(["run", "--layout", "tiny", "--requests", "1000000", "--json", str(out)], tmp_path,
              env={"TMPDIR": str(temp)})
    cli.wait_for_text(r"published [1-9]", timeout_s=120)  # (the progress bar: the workload runs)
    next(p for p in list(cli.seen.values()) if p.name().startswith(victim)).kill()
    rc, _gone = cli.finish(60)
    expected = (rf"kvtui: error: run stopped: {title} kvtui started died \(exit code -9\) at [\d.]+ s; "
                "nothing restarts it")
    assert rc == 2 and re.search(expected, cli.text()), cli.text()[-3000:]
    assert "Traceback" not in cli.text(), cli.text()[-3000:]
    _logs_kept_and_named(cli, temp, {"mooncake_master": "master.log", "mooncake_client": "store.log"}[victim])
    result = json.loads(out.read_text())
    assert result["interrupted"] and result["stopped_by"].startswith(f"{title} kvtui started died")
    assert result["requests"] > 0


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_a_run_whose_worker_dies_summarises_what_finished_and_names_the_worker(tmp_path, role):
    """A worker SIGKILLed while nearly every request is a full hit (decode reports those itself): the run
    stops within seconds with one line naming that worker (not the decode worker that leaves after its prefill
    worker), exit 2, every process gone; its summary and --json cover the requests that finished, marked
    interrupted, with the line as ``stopped_by``, as when a process of its cluster dies."""
    out, temp = tmp_path / "run.json", tmp_path / "tmp"
    temp.mkdir()
    cli = Cli(["run", "--layout", "tiny", "--overlap", "100", "--pool", "1", "--requests", "1000000",
               "--json", str(out)], tmp_path, env={"TMPDIR": str(temp)})
    cli.wait_for_text(r"published [1-9]", timeout_s=120)
    cli.wait_for(lambda: len(_spawned_in_order(cli)) >= 2, 30, "the workers")
    workers = _spawned_in_order(cli)  # (started prefill first, then decode)
    (workers[0] if role == "prefill" else workers[-1]).kill()
    killed = time.monotonic()
    rc, gone = cli.finish(60)
    assert rc == 2 and gone - killed < 10, cli.text()[-3000:]
    line = rf"kvtui: error: run stopped: {role} worker died \(exit code -9\)"
    assert re.search(line, cli.text()) and "Traceback" not in cli.text(), cli.text()[-3000:]
    assert "KV page hits" in cli.text()  # the summary was printed
    result = json.loads(out.read_text())
    assert result["interrupted"] is True and result["stopped_by"] == f"{role} worker died (exit code -9)"
    assert result["requests"] > 0 and result["mismatches"] == 0
    _logs_kept_and_named(cli, temp, f"{role}.log")


def _logs_kept_and_named(cli: Cli, temp: Path, log: str) -> None:
    """A run in which a process kvtui started died keeps its one temporary log folder (holding ``log``, when
    given) and names it in one line saying why."""
    folders = sorted(temp.glob("kvtui-logs-*"))
    assert len(folders) == 1, (folders, cli.text()[-2000:])
    assert not log or (folders[0] / log).is_file(), sorted(folders[0].iterdir())
    line = f"kvtui: logs of the embedded cluster and workers kept in {folders[0]} (kept because something failed"
    assert line in cli.text().replace("\r\n", "\n"), cli.text()[-2000:]
