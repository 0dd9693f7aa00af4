"""Child processes that can never outlive kvtui.

Every child is started with ``PR_SET_PDEATHSIG`` (Linux): when the kvtui process dies, even by SIGKILL, the
kernel sends the child SIGKILL. The signal is tied to the *thread* that forked, so spawn children from the main
thread (or a thread that lives as long as they do). Teardown (:func:`stop_processes`) signals every child at
once, waits one shared grace period, then SIGKILLs the rest. :func:`uninterrupted` keeps a second Ctrl-C or
SIGTERM from cutting such a teardown short.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NoReturn

_PR_SET_PDEATHSIG = 1


def _set_pdeathsig(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (no-op off Linux)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except OSError:  # pragma: no cover - non-Linux
        pass


def _child_preexec() -> None:
    # SIGKILL, not SIGTERM: a child blocked in a native call (a store call on a cut link, a master stopped by
    # SIGSTOP) would act on a SIGTERM only when that call returns, if ever; nothing of an embedded cluster
    # needs a graceful end once kvtui is gone (it stops its children with SIGKILL too, see ``stop``)
    _set_pdeathsig(signal.SIGKILL)
    os.setpgrp()  # own process group: a Ctrl-C in the terminal reaches kvtui, which then tears down in order
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # (spawn blocked it; kvtui stops some by it)


TERMINAL_SIGNALS = frozenset({signal.SIGINT, signal.SIGHUP})
"""What a terminal sends the whole process group (Ctrl-C, a closed terminal): kvtui's own process handles them
and tears down; its ``multiprocessing`` children ignore them."""


def start_shielded(process) -> None:
    """``process.start()`` (a ``multiprocessing`` process) with :data:`TERMINAL_SIGNALS` blocked while it
    starts. A Ctrl-C reaches the whole process group, and a child it hits during its imports, before it can
    ignore the signal, prints a traceback (or "Fatal Python error: init_import_site"). The mask survives fork
    and exec, so the child starts with them blocked and must ignore them itself (``worker_main`` and the
    bench's bare loop do: a pending signal set to ``SIG_IGN`` is discarded); here they wait the few ms of the
    start and then arrive as usual. multiprocessing's resource tracker is started first: starting it unblocks
    SIGINT in the calling thread (``multiprocessing/resource_tracker.py``, ``ensure_running``), which would
    undo the mask for the first child."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINAL_SIGNALS)
    try:
        process.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


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

    @property
    def title(self) -> str:
        """What the process is, for a message: ``the master``, ``the metadata server``, ``the store node``, or
        with several store nodes ``the store node store-1``."""
        if self.name == "store" or self.name.startswith("store-"):
            return "the store node" + ("" if self.name == "store" else f" {self.name}")
        return {"metadata": "the metadata server"}.get(self.name, f"the {self.name}")

    def log_tail(self, lines: int = 12) -> str:
        """The last ``lines`` lines of the process's log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def send(self, sig: int) -> bool:
        """Send ``sig`` if the process is still running; True if it was sent."""
        if self.popen.poll() is not None:
            return False
        try:
            self.popen.send_signal(sig)
        except ProcessLookupError:  # pragma: no cover - exited meanwhile
            return False
        return True

    def wait_until(self, deadline: float) -> int | None:
        """Wait until it exits or ``time.monotonic()`` passes ``deadline``; then SIGKILL it if it still runs
        (and wait up to 2 s more for that). Returns the exit code (negative: the signal that ended it)."""
        try:
            self.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.send(signal.SIGKILL)
            try:
                self.popen.wait(timeout=2.0)
            except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
                pass
        return self.popen.returncode

    def stop(self, grace_s: float = 1.0, sig: int = signal.SIGTERM) -> int | None:
        """``sig``, wait up to ``grace_s`` seconds, then SIGKILL; returns the exit code."""
        self.send(sig)
        return self.wait_until(time.monotonic() + grace_s)


def stop_processes(processes: list[tuple[ManagedProcess, int]], grace_s: float) -> list[int | None]:
    """Send each ``(process, signal)`` its signal at once, wait for all until one shared deadline ``grace_s``
    from now, then SIGKILL those still running. Returns the exit codes in order (negative: the signal that
    ended it). Whatever the processes do, this returns within ``grace_s`` + 2 s."""
    for proc, sig in processes:
        proc.send(sig)
    deadline = time.monotonic() + grace_s
    return [proc.wait_until(deadline) for proc, _ in processes]


@contextmanager
def uninterrupted() -> Iterator[list[int]]:
    """Hold SIGINT and SIGTERM back while the block runs (a bounded teardown: a second Ctrl-C must not leave
    it half done), then give each its previous handler back and, if one arrived meanwhile and no exception
    is already on its way out, deliver it once to that handler (so Ctrl-C during a normal teardown still
    ends the command as an interrupt). Yields the list of signal numbers held back. Outside the main thread
    (where handlers cannot be changed) it does nothing."""
    held: list[int] = []
    sigs = (signal.SIGINT, signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = {sig: signal.getsignal(sig) for sig in sigs}
    for sig in sigs:
        signal.signal(sig, lambda signum, _frame: held.append(signum))
    ok = False
    try:
        yield held
        ok = True
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    if ok and held:
        handler = previous[signal.Signals(held[0])]
        if callable(handler):
            handler(held[0], None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(held[0])


def spawn(name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> ManagedProcess:
    """Start ``argv`` with stdout+stderr appended to ``log_path``; the child dies with kvtui."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # the child runs Python (_child_preexec) between fork and exec, still in kvtui's process group: a Ctrl-C
    # then raised KeyboardInterrupt in it ("Exception ignored in _after_fork", a traceback on the terminal);
    # blocked here, the signal stays pending in the child, which after setpgrp no terminal signal reaches.
    # SIGTERM is held back too: in the parent, a preexec_fn makes the fork run the at-fork hooks (logging's
    # _releaseLock), and kvtui's SIGTERM handler raising there is "ignored", a traceback and a lost SIGTERM
    old = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINAL_SIGNALS | {signal.SIGTERM})
    try:
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, preexec_fn=_child_preexec, close_fds=True,
            )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return ManagedProcess(name, popen, log_path)


JANITOR_WAIT_S = 5.0  # a janitor waits at most this long for the process it cleans up after to be gone


@dataclass
class Janitor:
    """A process that deletes paths once kvtui is gone (:func:`spawn_janitor`); :meth:`release` ends it."""

    popen: subprocess.Popen
    fd: int  # kvtui's end of the janitor's pipe: its end of file is the janitor's signal

    def release(self) -> None:
        """kvtui cleaned up itself: close the pipe (the janitor then finds nothing left to delete and exits) and
        reap it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            self.popen.wait(timeout=JANITOR_WAIT_S + 1.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - a janitor stuck in rm
            self.popen.kill()


def spawn_janitor(pid: int, paths: list[str]) -> Janitor:
    """Delete ``paths`` when kvtui's end of a pipe closes, which the kernel does when kvtui dies (even by SIGKILL),
    after process ``pid`` (which writes into them, and dies with kvtui by its parent-death signal) is gone (or a
    zombie: nothing may reap it; at most :data:`JANITOR_WAIT_S` later in any case).

    The one child with no parent-death signal (it must outlive kvtui for that moment) and in a session of its
    own (a Ctrl-C must not end it before it did its work): a shell that blocks on ``read`` of its stdin, the
    pipe's read end; kvtui keeps the write end (not inherited by its other children: Python's descriptors are
    close-on-exec, and its workers start by spawn). A normal stop deletes the paths itself and calls
    :meth:`Janitor.release`."""
    script = ('read _; n=0; while [ -e "/proc/$1" ] && ! grep -q "^State:.*Z" "/proc/$1/status" 2>/dev/null '
              '&& [ $n -lt %d ]; do sleep 0.05; n=$((n+1)); done; shift; rm -rf -- "$@"') % int(JANITOR_WAIT_S / 0.05)
    r, w = os.pipe()
    try:
        popen = subprocess.Popen(["sh", "-c", script, "kvtui-janitor", str(pid), *paths], stdin=r,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                 close_fds=True)
    except BaseException:
        os.close(w)
        raise
    finally:
        os.close(r)
    return Janitor(popen, w)


def exit_now(code: int) -> NoReturn:
    """End this process with ``code`` at once (``os._exit``), its standard output and error flushed first:
    no interpreter exit, so no Mooncake destructor closes a store client (which blocks for seconds, and for
    ~46 s or more with an HA cluster's client)."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
