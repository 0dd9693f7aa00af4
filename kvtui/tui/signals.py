"""SIGINT, SIGTERM and SIGHUP end the monitor the same clean way as q (the terminal is restored), through
asyncio signal handlers installed while the app runs, instead of a KeyboardInterrupt inside the event loop,
with exit code 128 + the signal (130, 143, 129); ctrl+c pressed in the app exits 130 too
(:meth:`kvtui.tui.app.KvtuiApp.action_quit`).

:class:`ExitSignals` is a part the app owns (``app.exit_signals``): it installs the handlers and gives each
signal its previous handler back; what a signal does is the callback the app gives it."""

from __future__ import annotations

import asyncio
import signal
from typing import Any, Callable

__all__ = ["EXIT_SIGNALS", "INTERRUPT_EXIT", "ExitSignals"]

EXIT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
INTERRUPT_EXIT = 128 + signal.SIGINT  # the exit code of an interrupted command (Ctrl-C), as a shell reports it


class ExitSignals:
    """``on_signal(signum)`` handles SIGINT / SIGTERM / SIGHUP from :meth:`install` until :meth:`remove`.
    :attr:`installed`: signal → the handler it had before ours, for each signal handled now."""

    def __init__(self, on_signal: Callable[[int], None]) -> None:
        self.on_signal = on_signal
        self.installed: dict[int, Any] = {}

    def install(self) -> None:
        """SIGINT / SIGTERM / SIGHUP → ``on_signal`` through the running asyncio loop (the main thread only;
        elsewhere nothing changes)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for sig in EXIT_SIGNALS:
            previous = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, self.on_signal, sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no Unix signals
                continue
            self.installed[sig] = previous

    def remove(self) -> None:
        """Undo :meth:`install`, giving each signal its previous handler back (idempotent)."""
        installed, self.installed = self.installed, {}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for sig, previous in installed.items():
            try:
                if loop is not None:
                    loop.remove_signal_handler(sig)
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            except (ValueError, RuntimeError):
                pass
