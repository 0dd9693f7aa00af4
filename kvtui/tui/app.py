"""The live monitor: renders :class:`~kvtui.metrics.frame.Frame` s and sends controls through a controller.

One timer (``self.refresh_timer``, never re-created) pulls ``source.frame()`` at ``refresh_hz`` (≤ 15) and
hands the frame to the widgets; freezing the view only stops applying frames. The UI never calls the store or
the engine: every workload change goes through :class:`Controller`, whose methods return quickly
(``clear_store`` runs in a thread worker). Without a controller the workload controls are shown disabled
through :meth:`KvtuiApp.check_action`.

The monitor has three modes, each with its own keys (:mod:`kvtui.tui.bindings`) on its own main screen
(:mod:`kvtui.tui.screens.monitor`), chosen once, from the first frame, when the app starts
(:attr:`KvtuiApp.monitor_mode`): ``replay`` with a ``player`` (a :class:`~kvtui.session.reader.ReplayPlayer`,
also the frame source: the player's keys, :mod:`kvtui.tui.replay`; the header shows a REPLAY badge with
position / length and speed), ``trace`` when the first frame is of a trace replay (its speed, ``-`` / ``+``;
the synthetic knobs' keys say why they do nothing, in the status line), else ``live``. Live and trace:
``ctrl+r`` toggles recording through ``Controller.toggle_recording`` and the header shows ``● REC`` while
frames say ``status["recording"]``.

Knob keys change a knob by one step (:mod:`kvtui.core.knobs`) and send a typed control
(:class:`~kvtui.core.controls.SetKnob`) through ``Controller.send`` (:mod:`kvtui.tui.knob_actions`); which
requests are sent and shown is :mod:`kvtui.tui.knob_state`. The settings dialog and a page-grid row's details
(Enter or a click) are screens built once at start and shown again (:mod:`kvtui.tui.screens.settings` says
why: they open in milliseconds). Quitting: q or ctrl+c; SIGTERM and SIGHUP end the app the same clean way
(:mod:`kvtui.tui.signals`).

The keys' work is done by parts the app owns, each reaching the app through a small host Protocol:
``knob_keys`` (:class:`~kvtui.tui.knob_actions.KnobKeys`), ``replay_keys``
(:class:`~kvtui.tui.replay.ReplayKeys`), ``store_keys`` (:class:`~kvtui.tui.store_actions.StoreKeys`) and
``exit_signals`` (:class:`~kvtui.tui.signals.ExitSignals`). Textual looks actions up on the app, so the app's
``action_*`` methods of those keys only call the part.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Callable, ClassVar, TypeVar, cast

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker

from kvtui.core.defaults import DEFAULT_HZ, MAX_HZ, UI_NICE
from kvtui.core.errors import KvtuiError, OutputError
from kvtui.core.knobs import KNOBS, SCENARIOS
from kvtui.core.sched import lower_thread_priority
from kvtui.metrics.figures import tiered
from kvtui.metrics.frame import Frame
from kvtui.tui.bindings import APP_BINDINGS, MODES, PALETTE_TEXT, key_help
from kvtui.tui.knob_actions import CONTROL_ECHO_S, KnobKeys
from kvtui.tui.knob_state import KnobState, seen_in
from kvtui.tui.palette import system_commands
from kvtui.tui.protocols import Controller, FrameSource, Player
from kvtui.tui.replay import ReplayKeys
from kvtui.tui.screens import SCREENS, FailoverScreen, HelpScreen, RowDetailScreen, SettingsScreen
from kvtui.tui.signals import INTERRUPT_EXIT, ExitSignals
from kvtui.tui.store_actions import StoreKeys
from kvtui.tui.svg import write_screen_svg
from kvtui.tui.widgets import EventLog, Kpis, LatencyPanel, PageGrid, ProcsPanel, StorePanel, Throughput, WorkersPanel
from kvtui.tui.widgets.keybar import KeyBar
from kvtui.tui.widgets.master_panel import MasterPanel
from kvtui.tui.widgets.workers import several

__all__ = ["FrameSource", "Controller", "Gate", "Player", "KvtuiApp", "run_app"]

W = TypeVar("W", bound=Widget)


class Panels(dict[type[Widget], Widget]):
    """The app's panels by class: ``panels[PageGrid]`` is the :class:`PageGrid`."""

    def __getitem__(self, cls: type[W]) -> W:
        return cast(W, super().__getitem__(cls))


MIN_SIZE = (60, 16)
GIL_SWITCH_S = 0.001  # while the monitor runs (see run_app)


NOT_OUR_MASTERS = ("K kills only a leader kvtui started (--ha N): these masters are another's, so kvtui does not "
                   "signal them. Stop the leader yourself; kvtui measures the failover and reports it (F)")
"""What K says with an HA cluster kvtui attached to."""


@dataclasses.dataclass(frozen=True)
class Gate:
    """Which controls the monitor offers, from the newest frame: whether it has a ``controller``, the frame
    source's ``mode`` (``live`` / ``replay``), the workload ``kind`` (``synthetic``, ``trace``, ``observe``),
    whether the master of the cluster kvtui started is down (``own_master_down``: M restarts it), and
    whether that cluster's master or store node is down (``own_down``), whether it is kvtui's own HA
    cluster with a master serving (``own_leader``: K kills it), whether it is an HA cluster of another's
    (``other_ha``: K says why it does not act on it), whether a failover was measured (``failovers``: F
    shows the reports) and whether the cluster is an HA one at all (``ha``: F says when there is none yet)."""

    controller: bool
    mode: str
    kind: str
    own_master_down: bool
    own_down: bool
    own_leader: bool = False
    other_ha: bool = False
    failovers: bool = False
    ha: bool = False


_KNOB_ACTIONS = frozenset({"knob", "scenario", "settings"})  # a synthetic workload's
_WORKLOAD_ACTIONS = _KNOB_ACTIONS | {"toggle_pause", "clear_store", "toggle_recording", "trace_speed",
                                    "not_for_a_trace"}  # a live workload's (through the controller)


class KvtuiApp(App[int]):
    """The kvtui monitor. ``clock`` (default :func:`time.time`) only names screenshot files; everything shown
    comes from frames (elapsed time is ``frame.t``). ``window_s`` labels the latency window. ``player``: replay
    mode (the player is the frame source when ``source`` is None). ``layouts``: page layout presets the command
    palette offers (name → one-line summary; none by default)."""

    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = [*APP_BINDINGS]  # (each mode's keys: its main screen's)

    def __init__(self, source: FrameSource | None, controller: Controller | None = None, *,
                 refresh_hz: float = DEFAULT_HZ, screenshot_dir: str = ".", title: str = "kvtui",
                 scenarios: Sequence[str] = SCENARIOS, clock: Callable[[], float] | None = None,
                 window_s: float = 30.0, player: Player | None = None, layouts: dict[str, str] | None = None) -> None:
        super().__init__()
        if source is None:
            if player is None:
                raise ValueError("KvtuiApp needs a frame source or a player")
            source = player
        self.source: FrameSource = source
        self.controller, self.player = controller, player
        self.refresh_hz = min(MAX_HZ, max(0.5, float(refresh_hz)))
        self.screenshot_dir, self.scenarios = screenshot_dir, tuple(scenarios) or SCENARIOS
        self.layouts = dict(layouts or {})  # page layout presets offered in the command palette: name → summary
        self.title, self.window_s = title, window_s
        self._clock = clock or time.time
        self.frame: Frame | None = None  # newest pulled
        self.shown: Frame | None = None  # newest applied to the widgets
        self.frozen = False
        self.window = True
        self.knob_state = KnobState()  # the knobs asked for here and adopted from the frames
        self.knob_keys = KnobKeys(self, self.knob_state, self.scenarios)
        self.replay_keys = ReplayKeys(self)
        self.store_keys = StoreKeys(self)
        self.exit_signals = ExitSignals(self._exit_on_signal)
        self._last_key: str | None = None
        self.monitor_mode = "replay" if player is not None else "live"  # (trace: decided by the first frame)
        self._first: Frame | None = None  # pulled to choose the mode, shown by the first tick
        self._gate: Gate | None = None
        self._source_error: str | None = None
        self._stopped = False
        self.refresh_timer: Timer | None = None
        self.finish_after: float | None = None
        self.finish_screenshot: str | None = None
        self.screenshot_error: str | None = None  # why the closing screenshot could not be written (run_app raises it)
        self.stopped_by: str | None = None  # why the live workload stopped (a worker died: run_app raises it)

    # -- layout --------------------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        """The main screen of the mode (:attr:`monitor_mode`): ``replay`` with a player, ``trace`` when the first
        frame is a trace replay's, else ``live`` (a source that fails here is reported by the first tick)."""
        if self.player is None:
            try:
                self._first = self.source.frame()
            except Exception:  # the first tick pulls again and says why in the event log
                self._first = None
            if self._first is not None and (self._first.workload or {}).get("kind") == "trace":
                self.monitor_mode = "trace"
        return SCREENS[self.monitor_mode]()

    def compose(self) -> ComposeResult:
        yield Static("", id="too-small")
        with Vertical(id="dash"):
            yield Kpis(self.title, id="kpis")
            with Horizontal(id="middle"):
                yield MasterPanel(id="master")  # observe mode only (app.tcss: Screen.-observe)
                yield PageGrid(id="grid")
                with Vertical(id="side"):
                    yield Throughput(id="throughput")
                    yield WorkersPanel(id="workers")  # (only with several workers of a role: Screen.-workers)
                    yield LatencyPanel(id="latency")
            with Horizontal(id="bottom"):
                yield StorePanel(id="store")
                yield ProcsPanel(id="procs")
                yield EventLog(id="events")
        yield KeyBar([b.action for b in (*MODES[self.monitor_mode], *APP_BINDINGS)], id="keys")

    def on_mount(self) -> None:
        self.exit_signals.install()
        self.main_screen: Screen = self.screen
        self.w = Panels((cls, self.query_one(cls)) for cls in (Kpis, PageGrid, Throughput, LatencyPanel, StorePanel,
                                                               ProcsPanel, EventLog, MasterPanel, WorkersPanel))
        self.w[EventLog].ui_last = self.player is not None
        self.w[PageGrid].focus()
        # the dialogs are built now, once (push and pop before the first paint), so that opening one later
        # only shows it (kvtui.tui.screens.settings)
        self.install_screen(SettingsScreen(), "settings")
        self.install_screen(RowDetailScreen(self.w[PageGrid].style_of), "row-detail")
        for name in ("settings", "row-detail"):
            self.push_screen(name)
            self.pop_screen()
        self._size_classes(self.size.width, self.size.height)
        self.source.want("monitor", self.refresh_hz)  # the source builds frames at least this often
        self.refresh_timer = self.set_interval(1.0 / self.refresh_hz, self.tick, name="frame-pull")
        self.tick()
        if self.finish_after is not None:
            self.set_timer(self.finish_after, self._finish, name="finish")

    def on_unmount(self) -> None:
        self.exit_signals.remove()
        self.source.unwant("monitor")

    def on_resize(self, event: events.Resize) -> None:
        if hasattr(self, "w"):
            self._size_classes(event.size.width, event.size.height)

    def _size_classes(self, width: int, height: int) -> None:
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        screen = self.main_screen
        screen.set_class(small, "-too-small")
        screen.set_class(not small and width >= 100 and height >= 32, "-wide")
        screen.set_class(not small and width < 80, "-narrow")
        screen.set_class(not small and height < 22, "-short")
        screen.set_class(not small and width >= 160 and height >= 48, "-huge")
        self._fit_bottom(height)
        if small:
            screen.query_one("#too-small", Static).update(
                f"terminal too small — {width}×{height}, need ≥ {MIN_SIZE[0]}×{MIN_SIZE[1]}")
        self.w[Kpis].compact = 0 if width >= 100 else (1 if width >= 80 else 2)

    def _fit_bottom(self, height: int | None = None) -> None:
        """The bottom row's height: the lines the store and process panels need (all processes and the
        column header), at most 5 on a short terminal, 7 below 32 rows, 10 below 48, else 12 (4 below 80
        columns, where only the event log shows): rows they do not need go to the page grid above."""
        height = self.size.height if height is None else height
        cap = 5 if height < 22 else 7 if height < 32 else 10 if height < 48 else 12
        if self.size.width < 80:  # the store and process panels give way to the event log
            cap = 4
        store, procs = self.w[StorePanel], self.w[ProcsPanel]
        need = max(len(store.lines(max(1, store.size.width or 24))), procs.needed(), 3) + 2
        bottom = self.main_screen.query_one("#bottom")
        if bottom.styles.height is None or bottom.styles.height.value != min(cap, need):
            bottom.styles.height = min(cap, need)

    # -- frames --------------------------------------------------------------------------------------------
    def tick(self) -> None:
        """Pull the newest frame; apply it unless the view is frozen."""
        if not self.is_running:
            return
        try:
            frame, self._first = (self._first, None) if self._first is not None else (self.source.frame(), None)
        except Exception as exc:  # the source is another component: report it, keep the UI alive
            msg = f"frame source failed: {type(exc).__name__}: {exc}"
            if msg != self._source_error:
                self._source_error = msg
                self.log_line(msg, "error")
            return
        self._source_error = None
        self.frame = frame
        self._adopt(frame)
        if not self.frozen:
            self.apply(frame)
        error = (frame.status or {}).get("error")
        if error and self.controller is not None and self.stopped_by is None:
            # the live workload stopped for good (a worker died, and nothing rebuilds it): a monitor left open
            # would show frozen figures as if the run went on, so it ends, as `kvtui run` does (exit 2)
            self.stopped_by = str(error)
            if self.refresh_timer is not None:
                self.refresh_timer.stop()
            # after the next refresh: a worker that died at start-up is seen by the first tick, from on_mount,
            # while the dialogs it installs still mount (an exit then made their on_mount fail, a traceback)
            self.call_after_refresh(self.exit, 2, return_code=2)

    @property
    def knobs(self) -> dict:
        """Knob → the newest value asked for here or shown by the engine (:class:`KnobState` ``.values``)."""
        return self.knob_state.values

    @knobs.setter
    def knobs(self, values: dict) -> None:
        self.knob_state.values = dict(values)

    def _adopt(self, frame: Frame) -> None:
        """Take knob values from the frame (:meth:`KnobState.adopt`), and refresh the bindings when the
        controls on offer change (controller, mode, workload kind, an outage of the master kvtui started)."""
        w, st = frame.workload or {}, frame.status or {}
        self.main_screen.set_class(w.get("kind") == "observe", "-observe")  # the master's dashboard, no grid
        self.knob_state.adopt(seen_in(w, st), time.monotonic())
        own_down = bool(st.get("outage")) and st.get("store_mode") == "embedded" and st.get("mode", "live") == "live"
        own_master_down = own_down and st.get("outage_of", "master") == "master"
        own_leader = bool(st.get("ha_own")) and not st.get("outage") and st.get("mode", "live") == "live"
        other_ha = bool(st.get("ha")) and not st.get("ha_own") and st.get("mode", "live") == "live"
        gate = Gate(self.controller is not None, st.get("mode", "live"), w.get("kind", "synthetic"), own_master_down,
                    own_down, own_leader, other_ha, bool(st.get("failovers")), bool(st.get("ha")))
        if gate != self._gate:
            if own_down and st.get("outage_of") == "leader":
                if self.controller is not None and self.player is None:
                    self.log_line("no master of kvtui's HA cluster serves: the others elect a new leader (about 10 s); "
                                  "dispatch is held until one serves", "outage")
            elif own_master_down and self.controller is not None and self.player is None:
                self.log_line("the master kvtui started is down: press M to restart it on the same ports", "outage")
            elif own_down and self.controller is not None and self.player is None:  # (outage_of "store")
                self.log_line("the store node kvtui started is down: its workers are dummy clients of it, so dispatch "
                              "is held (restart kvtui, or use --worker-client real)", "outage")
            self._gate = gate
            self.refresh_bindings()

    @property
    def window_label(self) -> str:
        window_s = (self.frame.status or {}).get("window_s", self.window_s) if self.frame else self.window_s
        return f"last {window_s:g} s"

    def _latency_text(self) -> str:
        return self.window_label if self.window else "whole session"

    def apply(self, frame: Frame) -> None:
        """Render ``frame`` on every widget."""
        self.shown = frame
        w = self.w
        self._show_kpis(frame)
        w[PageGrid].set_rows(frame.rows)
        w[PageGrid].set_misses(frame.totals)
        w[PageGrid].set_tiered(tiered(frame.totals))
        w[Throughput].update_frame(frame)
        self.main_screen.set_class(several(frame.workers), "-workers")
        w[WorkersPanel].update_frame(frame)
        w[LatencyPanel].update_frame(frame, window=self.window, window_label=self.window_label)
        w[StorePanel].update_frame(frame)
        if (frame.workload or {}).get("kind") == "observe":
            w[MasterPanel].update_frame(frame)
        n_procs = len(w[ProcsPanel].procs)
        w[ProcsPanel].update_frame(frame)
        if len(w[ProcsPanel].procs) != n_procs:
            self._fit_bottom()
        w[EventLog].update_frame(frame)

    def _show_kpis(self, frame: Frame) -> None:
        """The header of ``frame``, with knobs the engine has not applied yet shown at their requested value
        (so a key press shows in the header at once, not when the next frame after the engine's change
        arrives); for at most ``ASKED_SHOWN_S`` (:mod:`kvtui.tui.knob_state`): a change the engine refused gives way
        to its value."""
        asked = self.knob_state.overlay(frame.workload, frame.status, time.monotonic())
        if asked is not None:
            workload, status = asked
            frame = dataclasses.replace(frame, workload=workload, status=status)
        self.w[Kpis].update_frame(frame, frozen=self.frozen, window_label=self._latency_text())

    def log_line(self, text: str, kind: str = "ui") -> None:
        """Add a UI line to the event log, stamped with the newest frame's time."""
        self.w[EventLog].add_line(self.frame.t if self.frame else 0.0, text, kind)

    def flash(self, text: str) -> None:
        """Say ``text`` in the status line (in place of the keys, for a few seconds)."""
        self.main_screen.query_one(KeyBar).flash(text)

    # -- controls ------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Whether a key of the mode acts now, from the newest frame: ``False`` hidden (M and K outside the
        moments they are for), ``None`` shown disabled (no controller, a recorded frame, no synthetic workload
        for the knobs, an observed master for clear), ``True`` enabled."""
        gate = self._gate
        if action in ("kill_leader", "restart_master", "failovers"):
            if self.controller is None or self.player is not None or gate is None:
                return False
            if action == "failovers":  # F: on an HA cluster (before a failover was measured, it says so)
                return gate.failovers or gate.ha
            # K: with kvtui's own HA cluster while a master serves (with another's HA cluster it says why it does
            # not act); M: while the master kvtui started is down
            return (gate.own_leader or gate.other_ha) if action == "kill_leader" else gate.own_master_down
        if action in _WORKLOAD_ACTIONS:
            if self.controller is None or (gate is not None and gate.mode == "replay"):
                return None  # shown disabled
            if action == "clear_store" and gate is not None and gate.kind == "observe":
                return None  # observe mode writes nothing to the store
            if action in _KNOB_ACTIONS and gate is not None and gate.kind != "synthetic":
                return None  # the knobs of a synthetic workload (an observed master has none)
        return True

    def action_toggle_recording(self) -> None:
        toggle = getattr(self.controller, "toggle_recording", None)
        if toggle is None:
            self.log_line("recording is unavailable (the controller cannot record)", "error")
            return
        try:
            on, path = toggle()
        except Exception as exc:  # e.g. the file cannot be created: report, keep running
            self.log_line(f"recording failed: {type(exc).__name__}: {exc}", "error")
            return
        self.log_line(f"recording → {path}" if on else f"recording stopped: {path}", "control")

    def action_freeze(self) -> None:
        self.frozen = not self.frozen
        running = "playback" if self.player is not None else "workload"
        self.log_line(f"view frozen ({running} keeps running)" if self.frozen else "view live")
        if self.shown is not None:
            self._show_kpis(self.shown)
        if not self.frozen and self.frame is not None:
            self.apply(self.frame)

    def action_window(self) -> None:
        self.window = not self.window
        self.log_line(f"latency: {self._latency_text()}")
        if self.shown is not None:
            self.apply(self.shown)

    def action_settings(self, focus: str | None = None) -> None:
        """Open the settings dialog on the knobs as they are now, the field of knob ``focus`` focused (None: the
        first); the screen built at start, shown again."""
        current = {k: self.knobs.get(k) for k in KNOBS}
        cast(SettingsScreen, self.get_screen("settings")).show(current, focus)
        self.push_screen("settings", self.knob_keys.apply_settings)

    # (the keys whose work a part of the app does: Textual looks their actions up here)
    def action_knob(self, name: str, direction: int) -> None:
        self.knob_keys.step(name, direction)

    def action_scenario(self) -> None:
        self.knob_keys.scenario()

    def action_not_for_a_trace(self, name: str) -> None:
        self.knob_keys.not_for_a_trace(name)

    def action_toggle_pause(self) -> None:
        self.knob_keys.toggle_pause()

    def action_trace_speed(self, direction: int) -> None:
        self.knob_keys.trace_speed(direction)

    def set_knob(self, name: str, value: float | str) -> None:  # (a command-palette entry)
        self.knob_keys.set(name, value)

    def set_layout(self, name: str) -> None:  # (a command-palette entry)
        self.knob_keys.set_layout(name)

    def action_replay_pause(self) -> None:
        self.replay_keys.pause()

    def action_replay_step(self, frames: int) -> None:
        self.replay_keys.step(frames)

    def action_replay_seek(self, direction: int) -> None:
        self.replay_keys.seek(direction)

    def action_replay_start(self) -> None:
        self.replay_keys.start()

    def action_replay_end(self) -> None:
        self.replay_keys.end()

    def action_replay_speed(self, direction: int) -> None:
        self.replay_keys.speed(direction)

    def action_clear_store(self) -> None:
        self.store_keys.clear_store()

    def action_restart_master(self) -> None:
        self.store_keys.restart_master()

    def action_kill_leader(self) -> None:
        if self._gate is not None and self._gate.other_ha:
            self.log_line(NOT_OUR_MASTERS, "error")
            self.flash("K: kvtui did not start these masters (--ha N starts its own)")
            return
        self.store_keys.kill_leader()

    def action_failovers(self) -> None:
        """F: every failover's whole report, on a screen of its own."""
        gate = self._gate
        if gate is None or not gate.failovers:  # (the frames say whether one was measured)
            self.flash("F: no failover measured yet" + (" (K kills the leader)" if gate and gate.own_leader else ""))
            return
        reports = getattr(self.controller, "failover_reports", None)
        self.push_screen(FailoverScreen(reports() if reports is not None else []))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.store_keys.worker_changed(event)

    def knob_changed(self) -> None:
        """A knob was just asked for (:class:`KnobKeys`): the header shows it now (unless frozen), and a frame
        is pulled ``CONTROL_ECHO_S`` later (the engine applies a change before its next request: shown then,
        not a whole refresh period later)."""
        if self.shown is not None and not self.frozen:
            self._show_kpis(self.shown)
        if self.is_running:
            self.set_timer(CONTROL_ECHO_S, self.tick, name="control-echo")

    def on_page_grid_row_selected(self, message: PageGrid.RowSelected) -> None:
        """Enter or a click on a page-grid row: its details."""
        if self.screen is not self.main_screen:
            return
        detail = cast(RowDetailScreen, self.get_screen("row-detail"))
        detail.show_row(message.row, max(16, min(88, self.size.width - 12)))
        self.push_screen("row-detail")

    # replaces Textual's screenshot action: ours saves into screenshot_dir and says where
    def action_screenshot(self) -> str | None:  # type: ignore[override]
        """Save an SVG into ``screenshot_dir``; returns its path, or None (one error line in the event log)
        when the folder cannot be created or written."""
        try:
            os.makedirs(self.screenshot_dir, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self._clock()))
            name, n = f"kvtui-{stamp}.svg", 1
            while os.path.exists(os.path.join(self.screenshot_dir, name)):
                name, n = f"kvtui-{stamp}-{n}.svg", n + 1
            path = write_screen_svg(self, os.path.join(self.screenshot_dir, name))
        except OSError as exc:  # e.g. --screenshot-dir names a file, or a read-only folder: keep running
            self.log_line(f"screenshot failed: {type(exc).__name__}: {exc}", "error")
            return None
        self.log_line(f"screenshot → {path}")
        return path

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.key_help(), PALETTE_TEXT[self.monitor_mode]))

    def key_help(self) -> list[tuple[str, str]]:
        """(keys, description) of every key of the mode (built from its bindings, so the help never drifts)."""
        return key_help(self, self.monitor_mode)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's entries without its own "Screenshot" (ours saves into ``screenshot_dir``), then ours."""
        yield from (c for c in super().get_system_commands(screen) if c.title != "Screenshot")
        yield from system_commands(self)

    # -- exit ----------------------------------------------------------------------------------------------
    def _exit_on_signal(self, signum: int) -> None:
        """SIGINT / SIGTERM / SIGHUP (:class:`ExitSignals`): a clean exit (the terminal is restored) with code
        128 + signal; the controller is stopped after the app has ended (:func:`run_app`), so the terminal
        comes back at once."""
        if self.refresh_timer is not None:
            self.refresh_timer.stop()
        if signum == getattr(signal, "SIGHUP", None) and not self.is_headless:
            # The terminal is gone: Textual cannot restore it, and its output thread can block forever on
            # the dead tty. Stop the engine and everything it started now, then leave at once.
            self.stop_controller()
            os._exit(128 + int(signum))
        self.exit(None, return_code=128 + int(signum))

    def stop_controller(self) -> None:
        """Call ``controller.stop()`` once."""
        if not self._stopped and self.controller is not None:
            self._stopped = True
            self.controller.stop()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self._last_key = event.key  # which key quit: ctrl+c ends the monitor as an interrupt (exit 130)
        await super().on_event(event)

    async def action_quit(self) -> None:
        """Leave at once (the terminal comes back) with exit code 0 for q, 130 for ctrl+c (as an interrupted
        command: the terminal sends no SIGINT while the app has it in raw mode); :func:`run_app` then stops
        the controller, saying so."""
        if self.refresh_timer is not None:
            self.refresh_timer.stop()
        code = INTERRUPT_EXIT if self._last_key == "ctrl+c" else 0
        self.exit(code, return_code=code)

    def _finish(self) -> None:
        self.tick()
        code = 0
        if self.finish_screenshot:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(self.finish_screenshot)), exist_ok=True)
                write_screen_svg(self, self.finish_screenshot)  # complete or absent, never half written
            except OSError as exc:  # a full disk, a folder gone: run_app says it in one line
                self.screenshot_error = f"could not write {self.finish_screenshot}: {exc.strerror or exc}"
                code = OutputError.exit_code
        self.stop_controller()
        if self.refresh_timer is not None:
            self.refresh_timer.stop()
        self.exit(code, return_code=code)


def run_app(source: FrameSource | None, controller: Controller | None, *, headless: bool = False,
            duration_s: float | None = None, screenshot: str | None = None, screenshot_dir: str = ".",
            size: tuple[int, int] = (120, 40), ui_nice: int = UI_NICE, **app_kwargs) -> int:
    """Run the monitor until quit (or for ``duration_s``); headless runs without a terminal at ``size``
    (1 s when no duration is given). ``screenshot``: SVG path written just before exiting after
    ``duration_s``. ``controller.stop()`` is called on the way out. Returns the exit code: 0 after q or
    ``duration_s``, 130 after ctrl+c, or 128 + the signal number after SIGINT / SIGTERM / SIGHUP (130 / 143 /
    129), which end the app cleanly. ``OutputError`` (one line, exit 3) when ``screenshot`` could not be written
    (a full disk: nothing is left of it); ``KvtuiError`` (``watch stopped: …``, exit 2) when a frame says the
    live workload stopped with an error (``status["error"]``: a worker died and nothing rebuilds it).
    ``ui_nice``: the calling thread (Textual's, and the threads it starts) runs this much nicer while the app
    runs; threads started before, such as the engine's feeder and collector, keep their priority.
    Replay: ``run_app(None, None, player=ReplayPlayer(SessionReader(path)))``."""
    app = KvtuiApp(source, controller, screenshot_dir=screenshot_dir, **app_kwargs)
    app.finish_after = 1.0 if headless and duration_s is None else duration_s
    app.finish_screenshot = screenshot
    # The live engine's feeder and collector threads share this process (and its GIL) with the UI, whose
    # repaints run tens of ms of Python: hand the GIL over every 1 ms instead of Python's default 5 ms so they
    # keep decode fed.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(GIL_SWITCH_S)
    restore_priority = lower_thread_priority(ui_nice)
    try:
        app.run(headless=headless, size=size if headless else None)
    finally:
        restore_priority()
        sys.setswitchinterval(switch)
        app.exit_signals.remove()  # normally done on unmount already
        if app.controller is not None and not app._stopped and not headless:
            print("kvtui: stopping the workload, the workers and the store…", file=sys.stderr, flush=True)
        app.stop_controller()
    if app.screenshot_error:
        raise OutputError(app.screenshot_error)
    if app.stopped_by:
        raise KvtuiError(f"watch stopped: {app.stopped_by}")
    return int(app.return_code or 0)
