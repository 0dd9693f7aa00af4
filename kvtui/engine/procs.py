"""Child processes that can never outlive kvtui.

Every child is started with ``PR_SET_PDEATHSIG`` (Linux): when the kvtui process dies, even by SIGKILL, the
kernel signals the child. The signal is tied to the *thread* that forked, so spawn children from the main
thread (or a thread that lives as long as they do). Teardown is SIGTERM, a grace period, then SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _set_pdeathsig(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (no-op off Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except OSError:  # pragma: no cover - non-Linux
        pass


def _child_preexec() -> None:
    _set_pdeathsig(signal.SIGTERM)
    os.setpgrp()  # own process group: a Ctrl-C in the terminal reaches kvtui, which then tears down in order


def parent_death_signal(sig: int = signal.SIGTERM) -> None:
    """Call first thing in a ``multiprocessing`` child: it gets ``sig`` when its parent dies."""
    _set_pdeathsig(sig)


@dataclass
class ManagedProcess:
    """A started child: ``name`` (role, e.g. ``master``), the ``Popen`` handle and its log file."""

    name: str
    popen: subprocess.Popen
    log_path: Path
    started_at: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        """OS process id."""
        return self.popen.pid

    def alive(self) -> bool:
        """True while the process has not exited."""
        return self.popen.poll() is None

    def log_tail(self, lines: int = 12) -> str:
        """The last ``lines`` lines of the process's log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def stop(self, grace_s: float = 3.0) -> int | None:
        """SIGTERM, wait up to ``grace_s`` seconds, then SIGKILL; returns the exit code."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(signal.SIGTERM)
                self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                try:
                    self.popen.wait(timeout=5)
                except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
                    pass
            except ProcessLookupError:  # pragma: no cover - already reaped
                pass
        return self.popen.returncode


def spawn(name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> ManagedProcess:
    """Start ``argv`` with stdout+stderr appended to ``log_path``; the child dies with kvtui."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        popen = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=env, preexec_fn=_child_preexec, close_fds=True,
        )
    return ManagedProcess(name, popen, log_path)
