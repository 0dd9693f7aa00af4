"""Screens of the kvtui monitor: the main screen of each mode, and the modal ones (the settings and row-detail
screens are built once and reused)."""

from kvtui.tui.screens.confirm import ConfirmScreen
from kvtui.tui.screens.failovers import FailoverScreen
from kvtui.tui.screens.help import HelpScreen
from kvtui.tui.screens.monitor import SCREENS, LiveScreen, MonitorScreen, ReplayScreen, TraceScreen
from kvtui.tui.screens.row_detail import RowDetailScreen
from kvtui.tui.screens.settings import SettingsScreen

__all__ = ["ConfirmScreen", "FailoverScreen", "HelpScreen", "RowDetailScreen", "SettingsScreen", "MonitorScreen",
           "LiveScreen", "TraceScreen", "ReplayScreen", "SCREENS"]
