"""Widgets of the kvtui monitor; each renders part of a :class:`~kvtui.metrics.frame.Frame`."""

from kvtui.tui.widgets.event_log import EventLog
from kvtui.tui.widgets.kpis import Kpis
from kvtui.tui.widgets.latency import LatencyPanel
from kvtui.tui.widgets.page_grid import PageGrid
from kvtui.tui.widgets.procs import ProcsPanel
from kvtui.tui.widgets.store_panel import StorePanel
from kvtui.tui.widgets.throughput import Throughput
from kvtui.tui.widgets.workers import WorkersPanel

__all__ = ["EventLog", "Kpis", "LatencyPanel", "PageGrid", "ProcsPanel", "StorePanel", "Throughput", "WorkersPanel"]
