"""Store panel: keys, evictions and allocation failures, used / total capacity (bar), put/get request rates.

Figures are ``label value`` pairs packed into lines without cutting a word (:func:`~kvtui.tui.widgets.lines.
pack_pairs`): a narrow panel takes the short forms (``allocs``, ``12.3k``) or a line more, never
``alloc fai…``. Evictions and allocation failures come first and turn red when not zero. While no master answers
(an outage, a failover), the figures are the last sample's: dimmed, under a line that says so, ``stale`` below.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from kvtui.metrics import figures as fig
from kvtui.tui.fmt import fmt_count, fmt_int, fmt_pct, fmt_rate, format_bytes
from kvtui.tui.widgets.lines import LinesPanel, pack_pairs
from kvtui.tui.widgets.styled import CachedStyles

STALE_TEXT = "no master answers: last sample"
"""The panel's first line while no master answers (its figures are then the last sample's, dimmed)."""


class StorePanel(CachedStyles, LinesPanel):
    """Renders ``frame.store`` (may be empty when the sampler knows nothing yet)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "store-panel--label", "store-panel--bar", "store-panel--bar-empty", "store-panel--bad", "store-panel--dim"}

    DEFAULT_CSS = """
    StorePanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.store: dict = {}
        self.border_title = "Store"

    def update_frame(self, frame) -> None:
        store = dict(frame.store or {})
        if store != self.store:
            self.store = store
            self.refresh(layout=True)

    def _s(self, name: str):
        return self.style_of(name)

    def lines(self, width: int) -> list[Text]:
        """The panel's lines at ``width`` cells."""
        s, lab = self.store, self._s("store-panel--label")
        if not s:
            return [Text("no store metrics yet", self._s("store-panel--dim"))]
        bad = self._s("store-panel--bad")

        def count(key: str):
            n = int(s.get(key, 0))
            return (fmt_int(n), fmt_count(n)), bad if n and key != "keys" else None

        keys, evicted, fails = count("keys"), count("evicted_keys"), count("alloc_failures")
        out = pack_pairs([((fig.STORE_KEYS.label,), *keys), ((fig.STORE_EVICTED.label, "evict"), *evicted),
                          ((fig.STORE_ALLOC_FAILS.label, "alloc fails", "allocs"), *fails)], width, lab)
        used, cap = int(s.get("used_bytes", 0)), int(s.get("capacity_bytes", 0))
        if cap > 0:
            frac = min(1.0, used / cap)
            pct = " " + fmt_pct(frac, 0)
            bar_w = max(1, width - 5 - len(pct))
            fill = round(frac * bar_w)
            out.append(Text(fig.STORE_USED.label + " ", lab) + Text("█" * fill, self._s("store-panel--bar"))
                       + Text("░" * (bar_w - fill), self._s("store-panel--bar-empty")) + Text(pct))
            out.append(Text(f"{format_bytes(used)} / {format_bytes(cap)}"))
        else:
            out += pack_pairs([((fig.STORE_USED.label,), (format_bytes(used),), None)], width, lab)
        out += pack_pairs([((fig.STORE_PUT_RATE.label,), (fmt_rate(float(s.get("put_rps", 0.0))),), None),
                           ((fig.STORE_GET_RATE.label,), (fmt_rate(float(s.get("get_rps", 0.0))),), None)], width,
                          lab)
        subtitle = ""
        if s.get("up") is False:  # (no master answers: these are the last sample's figures, not the store's now)
            dim = self._s("store-panel--dim")
            for line in out:
                line.stylize(dim)
            out.insert(0, Text(STALE_TEXT if len(STALE_TEXT) <= width else "stale", bad))
            subtitle = "stale"
        if self.border_subtitle != subtitle:
            self.border_subtitle = subtitle
        return out
