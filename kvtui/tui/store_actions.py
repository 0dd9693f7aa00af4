"""The monitor's store keys: clear the store (asks first) and restart the master kvtui started (offered while
it is down), each in a thread worker (the controller's calls take up to a few seconds); the outcome goes to
the event log.

:class:`StoreKeys` is a part the app owns (``app.store_keys``); the app's ``action_clear_store``,
``action_restart_master`` and ``on_worker_state_changed`` call it, and it reaches the app only through
:class:`StoreHost`.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from kvtui.tui.protocols import Controller
from kvtui.tui.screens import ConfirmScreen

__all__ = ["StoreHost", "StoreKeys"]

CLEAR_STORE, RESTART_MASTER, KILL_LEADER = "clear-store", "restart-master", "kill-leader"  # their thread workers


class StoreHost(Protocol):
    """What :class:`StoreKeys` uses of the monitor (a Textual ``App``): its ``controller``
    (``clear_store() -> int`` keys removed; optional ``restart_master()``), ``push_screen`` (the
    confirmation), ``run_worker`` (the calls run in a thread) and its event log."""

    @property
    def controller(self) -> Controller | None: ...
    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> Any: ...
    def run_worker(self, work: Callable[[], Any], *, name: str, group: str, thread: bool, exclusive: bool,
                   exit_on_error: bool) -> Any: ...
    def log_line(self, text: str, kind: str = "ui") -> None: ...


class StoreKeys:
    """The store keys of the monitor ``host``."""

    def __init__(self, host: StoreHost) -> None:
        self.host = host

    def clear_store(self) -> None:
        """Ask, then remove every key from the store (in a thread worker)."""
        def answered(yes: bool | None) -> None:
            controller = self.host.controller
            if not yes or controller is None:
                self.host.log_line("clear store cancelled")
                return
            self.host.log_line("clearing the store…", "control")
            self.host.run_worker(controller.clear_store, name=CLEAR_STORE, group=CLEAR_STORE, thread=True,
                                 exclusive=True, exit_on_error=False)

        self.host.push_screen(ConfirmScreen("Remove every key from the store?  (y / n)", "Clear store", "Cancel"),
                              answered)

    def restart_master(self) -> None:
        """Restart the embedded master (in a thread: it takes about a second to answer); a controller without
        ``restart_master`` (one that did not start the master) says it is unavailable."""
        self._in_thread("restart_master", RESTART_MASTER, "restarting the master")

    def kill_leader(self) -> None:
        """SIGKILL the serving master of kvtui's HA cluster (in a thread: the controller first notes what the
        leader stores); the controller logs the failover as it goes. A controller without ``kill_leader`` (no
        HA cluster of kvtui's) says it is unavailable."""
        self._in_thread("kill_leader", KILL_LEADER, "killing the leader", " (kvtui --ha N only)")

    def _in_thread(self, method: str, name: str, doing: str, where: str = "") -> None:
        """Call the controller's ``method`` in a worker thread called ``name``, saying ``doing…`` first, or that
        it is unavailable here when the controller has no such method; a failure is one event-log line
        (``worker_changed``)."""
        fn = getattr(self.host.controller, method, None)
        if fn is None:
            self.host.log_line(f"{doing} is unavailable here{where}", "error")
            return
        self.host.log_line(f"{doing}…", "control")
        self.host.run_worker(fn, name=name, group=name, thread=True, exclusive=True, exit_on_error=False)

    def worker_changed(self, event: Worker.StateChanged) -> None:
        """The outcome of a thread worker of :meth:`clear_store` or :meth:`restart_master` (others are not
        these keys')."""
        if event.worker.name in (RESTART_MASTER, KILL_LEADER):
            if event.state == WorkerState.ERROR:
                what = "master restart" if event.worker.name == RESTART_MASTER else "leader kill"
                self.host.log_line(f"{what} failed: {event.worker.error}", "error")
            return
        if event.worker.name != CLEAR_STORE:
            return
        if event.state == WorkerState.ERROR:  # (done: the session's own event says how many keys went)
            self.host.log_line(f"clear store failed: {event.worker.error}", "error")
