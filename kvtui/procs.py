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
from typing import Callable

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


_BASE_NICE = os.getpriority(os.PRIO_PROCESS, os.getpid()) if hasattr(os, "getpriority") else 0  # at start-up


def lower_thread_priority(nice: int) -> Callable[[], None]:
    """Make the calling thread ``nice`` nicer than kvtui started (capped at 19) and return a function that
    puts it back.

    On Linux the nice value belongs to each thread (setpriority(2), ``PRIO_PROCESS`` with a thread id), so
    only this thread and the threads it starts afterwards run at the lower priority. Putting it back needs
    CAP_SYS_NICE (or RLIMIT_NICE); without it the restore function does nothing, and a later call on the
    same thread changes nothing either (the target is relative to the start-up value, so calls never stack).
    Never raises: a system that refuses leaves the priority as it was.
    """
    import threading

    if nice <= 0 or not hasattr(os, "setpriority"):
        return lambda: None
    tid = threading.get_native_id()
    try:
        old = os.getpriority(os.PRIO_PROCESS, tid)
        target = min(19, _BASE_NICE + int(nice))
        if old >= target:
            return lambda: None
        os.setpriority(os.PRIO_PROCESS, tid, target)
    except OSError:
        return lambda: None

    def restore() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, old)
        except OSError:  # lowering a nice value again is a privilege
            pass

    return restore


_START_CPUS: frozenset[int] = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


def pin_calling_thread(pinned: bool) -> bool:
    """Run the calling thread on one CPU (``pinned``), the highest one this process was allowed at start-up,
    or on all of those again; returns whether it is pinned now.

    Linux affinity belongs to each thread (sched_setaffinity(2) with pid 0), so threads started earlier keep
    theirs, and threads started later by this one inherit it. Every process of kvtui starts with the same set,
    so the two workers pick the same CPU: their calling threads take turns on it at concurrency 1, and the
    store's transfer threads keep the other CPUs (``kvtui bench --trace`` measures the effect). Never raises:
    with one CPU, no affinity support, a refusal, or ``KVTUI_PIN=0`` in the environment (several kvtui at
    once would all pick the same CPU), nothing changes and the result is False.
    """
    if len(_START_CPUS) < 2 or os.environ.get("KVTUI_PIN") == "0":
        return False
    try:
        os.sched_setaffinity(0, {max(_START_CPUS)} if pinned else set(_START_CPUS))
    except OSError:
        return False
    return pinned
