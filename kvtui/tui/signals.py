"""SIGINT, SIGTERM and SIGHUP end the monitor the same clean way as q (the terminal is restored), through
asyncio signal handlers installed while the app runs, instead of a KeyboardInterrupt inside the event loop,
with exit code 128 + the signal (130, 143, 129); ctrl+c pressed in the app exits 130 too
(:meth:`kvtui.tui.app.KvtuiApp.action_quit`)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    _AppHost = App[int]  # the mixin's host, for the type checker
else:
    _AppHost = object

__all__ = ["EXIT_SIGNALS", "INTERRUPT_EXIT", "ExitSignals"]

EXIT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None  # what signal.getsignal gives
INTERRUPT_EXIT = 128 + signal.SIGINT  # the exit code of an interrupted command (Ctrl-C), as a shell reports it


class ExitSignals(_AppHost):
    """Mixin of :class:`kvtui.tui.app.KvtuiApp`. ``_signals``: signal → the handler it had before ours
    (set by the app's ``__init__``). Uses the app's ``refresh_timer``, ``stop_controller()``, ``exit()`` and
    ``is_headless``."""

    _signals: dict[int, Handler]
    refresh_timer: Timer | None

    if TYPE_CHECKING:

        def stop_controller(self) -> None: ...

    def _install_signal_handlers(self) -> None:
        """SIGINT / SIGTERM / SIGHUP → :meth:`_exit_on_signal` (the main thread only; elsewhere nothing
        changes)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for sig in EXIT_SIGNALS:
            previous = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, self._exit_on_signal, sig)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no Unix signals
                continue
            self._signals[sig] = previous

    def _remove_signal_handlers(self) -> None:
        """Undo :meth:`_install_signal_handlers`, giving each signal its previous handler back (idempotent)."""
        signals, self._signals = self._signals, {}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        for sig, previous in signals.items():
            try:
                if loop is not None:
                    loop.remove_signal_handler(sig)
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            except (ValueError, RuntimeError):
                pass

    def _exit_on_signal(self, signum: int) -> None:
        """A clean exit (the terminal is restored) with code 128 + signal; the controller is stopped after
        the app has ended (:func:`kvtui.tui.app.run_app`), so the terminal comes back at once."""
        if self.refresh_timer is not None:
            self.refresh_timer.stop()
        if signum == getattr(signal, "SIGHUP", None) and not self.is_headless:
            # The terminal is gone: Textual cannot restore it, and its output thread can block forever on
            # the dead tty. Stop the engine and everything it started now, then leave at once.
            self.stop_controller()
            os._exit(128 + int(signum))
        self.exit(None, return_code=128 + int(signum))
