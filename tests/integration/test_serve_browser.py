"""`kvtui serve` for real: a headless Chromium opens the page, the monitor of a real embedded store shows live
figures in it (read from the xterm.js screen the page draws, scripts/browser_check.py), a screenshot is taken,
and every process a browser tab started ends when the tab closes, when serve gets SIGTERM, and when serve is
SIGKILLed (each tab's kvtui watch gets SIGTERM from the kernel then)."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from waits import wait_for

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(tmp_path, port: int) -> subprocess.Popen:
    """`kvtui serve` on the tiny layout with a pool of 4 (each tab: an embedded store, workers, the default
    scenario; the pool, not a default, is passed on to each tab's watch)."""
    return subprocess.Popen([sys.executable, "-m", "kvtui.cli", "serve", "--layout", "tiny", "--pool", "4", "--port",
                             str(port)],
                            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=open(tmp_path / "serve.out", "wb"),
                            stderr=open(tmp_path / "serve.err", "wb"))


def _wait_listening(proc, port: int, tmp_path, timeout: float = 30.0) -> None:
    def listening() -> bool:
        assert proc.poll() is None, (tmp_path / "serve.err").read_text()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for(listening, timeout, "kvtui serve listening", interval_s=0.1)


def _alive(procs) -> list[psutil.Process]:
    alive = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:  # (a zombie has ended)
                alive.append(p)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_gone(procs, timeout: float) -> float:
    """Seconds until every process of ``procs`` has ended (zombies count as ended)."""
    t0 = time.monotonic()
    wait_for(lambda: not _alive(procs), timeout, "end of every process",
             detail=lambda: [(p.pid, _cmdline(p)) for p in _alive(procs)])
    return time.monotonic() - t0


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:  # ended meanwhile
        return []


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (scripts/setup.sh installs it)")
@pytest.mark.timeout(90)
def test_a_browser_shows_the_live_monitor_and_a_closed_tab_ends_its_processes(tmp_path):
    t0 = time.monotonic()
    port = _free_port()
    serve = _serve(tmp_path, port)
    try:
        _wait_listening(serve, port, tmp_path)
        png = tmp_path / "serve.png"
        seen: dict[int, tuple[psutil.Process, str]] = {}  # every process under serve while the browser is on the page
        watching = threading.Event()

        def watch_tree():
            root = psutil.Process(serve.pid)
            while not watching.is_set():
                for p in root.children(recursive=True):  # the newest command line (a child execs after fork)
                    name = " ".join(_cmdline(p))
                    seen[p.pid] = (seen.get(p.pid, (p,))[0], name or seen.get(p.pid, (p, ""))[1])
                time.sleep(0.1)  # (a sampler's pace: it records the tree until the page is left)

        watcher = threading.Thread(target=watch_tree, daemon=True)
        watcher.start()
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "browser_check.py"), f"http://127.0.0.1:{port}/",
                            "--png", str(png), "--timeout", "40", "--size", "1280x800"],
                           capture_output=True, text=True, timeout=60)
        err = (tmp_path / "serve.err").read_text() + (tmp_path / "serve.out").read_text()
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:] + err[-2000:]
        out = json.loads(r.stdout)
        screen = out["text"]
        # the monitor's header, with figures that moved between two reads of the page's screen
        assert out["live"] and re.search(r"requests [\d,]+", screen), screen
        assert "Page grid" in screen and "Throughput" in screen and "store embedded" in screen
        from PIL import Image

        with Image.open(png) as im:
            assert im.size == (1280, 800)
            colors = im.convert("RGB").getcolors(maxcolors=1 << 16)
            assert colors is None or len(colors) > 8  # a drawn monitor, not a blank page
        # the page left (browser_check ends on about:blank, then its browser): that tab's processes end
        watching.set()
        watcher.join()
        tabs = [p for p, _ in seen.values()]
        names = [name for _, name in seen.values()]
        assert any("-m kvtui.cli watch" in n and "--pool 4" in n for n in names), names  # the tab's monitor and store
        assert any("mooncake_master" in n for n in names), names
        gone_s = _wait_gone(tabs, 20)
        assert serve.poll() is None  # the server itself goes on
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(15) == 128 + signal.SIGTERM
    finally:
        _stop(serve)
    print(f"browser check {out['seconds']} s, the tab's {len(tabs)} processes gone {gone_s:.1f} s after it, "
          f"whole test {time.monotonic() - t0:.1f} s")


async def _open_tab(port: int, want: bytes = b"requests", timeout: float = 60.0):
    """A browser tab without a browser: textual-serve's websocket, until the monitor's output shows ``want``."""
    import aiohttp

    session = aiohttp.ClientSession()
    try:
        ws = await session.ws_connect(f"http://127.0.0.1:{port}/ws?width=120&height=40")
        tail = b""  # the end of the last message: ``want`` may be split across two
        t0 = time.monotonic()
        while True:
            msg = await ws.receive(timeout=max(0.1, timeout - (time.monotonic() - t0)))
            if msg.type == aiohttp.WSMsgType.BINARY:
                # search the whole message: the first full paint is larger than any tail kept, and later
                # partial repaints need not draw the header's words again
                if want in tail + msg.data:
                    break
                tail = (tail + msg.data)[-len(want):]
            elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                raise AssertionError(f"the tab closed before showing {want!r}")
    except BaseException:
        await session.close()
        raise
    return session, ws


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_serve_ends_every_tab(tmp_path, sig):
    port = _free_port()
    serve = _serve(tmp_path, port)
    try:
        _wait_listening(serve, port, tmp_path)

        async def scenario():
            session, ws = await _open_tab(port)
            try:
                tabs = psutil.Process(serve.pid).children(recursive=True)
                names = [" ".join(_cmdline(p)) for p in tabs]
                assert any("kvtui.cli watch" in n and "--pool 4" in n for n in names), names
                assert any("mooncake_master" in n for n in names), names  # the tab's own embedded store
                serve.send_signal(sig)
                return tabs, await asyncio.to_thread(_wait_gone, tabs, 20)
            finally:
                await session.close()

        tabs, gone_s = asyncio.run(scenario())
        assert serve.wait(15) == (128 + sig if sig == signal.SIGTERM else -sig)
        assert gone_s < 10, gone_s
    finally:
        _stop(serve)
