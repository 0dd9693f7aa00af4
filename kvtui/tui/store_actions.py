"""The monitor's store keys: clear the store (asks first) and restart the master kvtui started (offered while
it is down), each in a thread worker (the controller's calls take up to a few seconds); the outcome goes to
the event log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.worker import Worker, WorkerState

from kvtui.tui.screens import ConfirmScreen

if TYPE_CHECKING:
    from textual.app import App

    from kvtui.tui.protocols import Controller

    _AppHost = App[int]  # the mixin's host, for the type checker
else:
    _AppHost = object

__all__ = ["StoreActions"]


class StoreActions(_AppHost):
    """Mixin of :class:`kvtui.tui.app.KvtuiApp`: ``action_clear_store``, ``action_restart_master`` and their
    workers' outcome. Uses the app's ``controller`` (``clear_store() -> int`` keys removed; optional
    ``restart_master()``), ``push_screen``, ``run_worker`` and ``log_line``."""

    controller: Controller | None

    if TYPE_CHECKING:

        def log_line(self, text: str, kind: str = "ui") -> None: ...

    def action_clear_store(self) -> None:
        def answered(yes: bool | None) -> None:
            if not yes:
                self.log_line("clear store cancelled")
                return
            self.log_line("clearing the store…", "control")
            assert self.controller is not None  # (the key is enabled only with a controller)
            self.run_worker(self.controller.clear_store, name="clear-store", group="clear-store", thread=True,
                            exclusive=True, exit_on_error=False)

        self.push_screen(ConfirmScreen("Remove every key from the store?  (y / n)", "Clear store", "Cancel"), answered)

    def action_restart_master(self) -> None:
        """Restart the embedded master (in a thread: it takes about a second to answer)."""
        restart = getattr(self.controller, "restart_master", None)
        if restart is None:
            self.log_line("restarting the master is unavailable here", "error")
            return
        self.log_line("restarting the master…", "control")
        self.run_worker(restart, name="restart-master", group="restart-master", thread=True, exclusive=True,
                        exit_on_error=False)  # (a failed restart is one event-log line, on_worker_state_changed)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name == "restart-master":
            if event.state == WorkerState.ERROR:
                self.log_line(f"master restart failed: {event.worker.error}", "error")
            return
        if event.worker.name != "clear-store":
            return
        if event.state == WorkerState.SUCCESS:
            self.log_line(f"store cleared: {event.worker.result} keys removed", "control")
        elif event.state == WorkerState.ERROR:
            self.log_line(f"clear store failed: {event.worker.error}", "error")
