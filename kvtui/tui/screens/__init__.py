"""Modal screens of the kvtui monitor."""

from kvtui.tui.screens.confirm import ConfirmScreen
from kvtui.tui.screens.help import HelpScreen
from kvtui.tui.screens.settings import SettingsScreen

__all__ = ["ConfirmScreen", "HelpScreen", "SettingsScreen"]
