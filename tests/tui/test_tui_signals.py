"""SIGINT / SIGTERM / SIGHUP end the monitor cleanly: in a subprocess (as ``kvtui watch`` runs it: kvtui/cli.py
turns SIGTERM into a KeyboardInterrupt), headless and on a pseudo-terminal. The app must exit within seconds with
code 128 + signal (SIGINT 130, SIGTERM 143, SIGHUP 129), without tracebacks, and on a terminal leave the alternate
screen and turn mouse reporting off."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

from waits import wait_for

import kvtui

ROOT = Path(kvtui.__file__).resolve().parent.parent

SCRIPT = """
import os, signal, sys
from kvtui.cli import on_sigterm
signal.signal(signal.SIGTERM, on_sigterm)  # what kvtui/cli.py installs
from kvtui.tui.app import run_app
from kvtui.tui.screens import RowDetailScreen, SettingsScreen
from kvtui.testing.demo import DemoController, DemoSource

mounted = set()  # the dialogs the app builds in its on_mount mount after its first frame
for cls in (SettingsScreen, RowDetailScreen):
    def on_mount(self, _cls=cls, _orig=cls.__dict__.get("on_mount")):
        if _orig is not None:
            _orig(self)
        mounted.add(_cls)
    cls.on_mount = on_mount

class Source(DemoSource):
    def frame(self):
        # ready: the app is mounted (its signal handlers installed), its dialogs too, a frame was pulled
        if len(mounted) == 2 and not os.path.exists(sys.argv[1]):
            open(sys.argv[1], "w").close()
        return super().frame()

src = Source()
try:
    rc = run_app(src, DemoController(src), headless=sys.argv[2] == "headless", duration_s=30)
except KeyboardInterrupt:
    rc = 130
sys.exit(rc)
"""


class Run:
    """The script in a subprocess: headless (stderr piped) or on a pty of 120×40 (all output read)."""

    def __init__(self, tmp_path: Path, name: str, headless: bool):
        self.ready = tmp_path / f"{name}.ready"
        self.out = bytearray()
        env = dict(os.environ, TERM="xterm-256color", PYTHONPATH=str(ROOT))
        args = [sys.executable, "-c", SCRIPT, str(self.ready), "headless" if headless else "tty"]
        if headless:  # (SIGINT as a terminal gives it: a test run from a background job inherits it ignored)
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, env=env, cwd=tmp_path,
                                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            self._reader = threading.Thread(target=self._read, args=(self.proc.stderr.fileno(),), daemon=True)
        else:
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=tmp_path,
                                         start_new_session=True)
            os.close(slave)
            self._reader = threading.Thread(target=self._read, args=(master,), daemon=True)
        self._reader.start()

    def _read(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the pty closed
                break
            if not data:
                break
            self.out.extend(data)

    def finish(self, timeout: float) -> int | None:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
            self.proc.kill()
            self.proc.wait()
        self._reader.join(2)
        return rc


def test_sigint_sigterm_and_sighup_end_the_app_cleanly(tmp_path):
    runs = {("headless", signal.SIGTERM): Run(tmp_path, "term", True),
            ("headless", signal.SIGHUP): Run(tmp_path, "hup", True),
            ("headless", signal.SIGINT): Run(tmp_path, "int", True),
            ("tty", signal.SIGTERM): Run(tmp_path, "tty", False)}
    tty = runs["tty", signal.SIGTERM]
    drawn = (b"\x1b[?1049h", b"\x1b[?1000h", b"\x1b[?1003h", b"\x1b[?1006h")  # alternate screen, mouse reporting

    def ready() -> bool:  # every app mounted (its signal handlers installed), the terminal one's screen taken
        assert all(r.proc.poll() is None for r in runs.values()), {k: bytes(r.out) for k, r in runs.items()}
        return all(r.ready.exists() for r in runs.values()) and all(s in tty.out for s in drawn)

    try:
        wait_for(ready, 30, "every app mounted", detail=lambda: {k: bytes(r.out[-2000:]) for k, r in runs.items()})
        for (_, sig), run in runs.items():
            run.proc.send_signal(sig)
        sent = time.monotonic()
        codes = {key: run.finish(max(0.5, sent + 5 - time.monotonic())) for key, run in runs.items()}
    finally:
        for run in runs.values():
            if run.proc.poll() is None:
                run.proc.kill()
    for (mode, sig), run in runs.items():
        out = bytes(run.out)
        assert codes[mode, sig] == 128 + sig, (mode, sig, codes[mode, sig], out[-3000:])
        assert b"Traceback" not in out and b"Exception ignored" not in out, out[-3000:]
        if mode == "headless":
            assert out.strip() == b"", out[-3000:]
        else:  # the terminal is given back: alternate screen left, mouse reporting off, after the last frame
            assert out.rfind(b"\x1b[?1049l") > out.rfind(b"\x1b[?1049h") > -1
            for mouse in (b"1000", b"1003", b"1006"):
                assert out.rfind(b"\x1b[?" + mouse + b"l") > out.rfind(b"\x1b[?" + mouse + b"h") > -1, mouse
