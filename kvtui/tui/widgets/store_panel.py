"""Store panel: keys, used / total capacity (bar), evictions, allocation failures, put/get request rates."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from kvtui.tui.fmt import fmt_count, fmt_int, fmt_pct, fmt_rate, format_bytes
from kvtui.tui.widgets.lines import LinesPanel
from kvtui.tui.widgets.styled import CachedStyles


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
            self.refresh()

    def _s(self, name: str):
        return self.style_of(name)

    def lines(self, width: int) -> list[Text]:
        """The panel's lines at ``width`` cells."""
        s, lab = self.store, self._s("store-panel--label")
        if not s:
            return [Text("no store metrics yet", self._s("store-panel--dim"))]

        def kv(*pairs) -> Text:
            t = Text()
            for i, (label, value, bad) in enumerate(pairs):
                if i:
                    t.append("  ", lab)
                t.append(label + " ", lab)
                t.append(value, self._s("store-panel--bad") if bad else "")
            return t

        out = [kv(("keys", fmt_int(s.get("keys", 0)), False), ("evicted", fmt_int(s.get("evicted_keys", 0)), False))]
        if out[0].cell_len > width:
            out = [kv(("keys", fmt_count(s.get("keys", 0)), False),
                      ("evicted", fmt_count(s.get("evicted_keys", 0)), False))]
        used, cap = int(s.get("used_bytes", 0)), int(s.get("capacity_bytes", 0))
        if cap > 0:
            frac = min(1.0, used / cap)
            pct = " " + fmt_pct(frac, 0)
            bar_w = max(1, width - 5 - len(pct))
            fill = round(frac * bar_w)
            out.append(Text("used ", lab) + Text("█" * fill, self._s("store-panel--bar"))
                       + Text("░" * (bar_w - fill), self._s("store-panel--bar-empty")) + Text(pct))
            out.append(Text(f"{format_bytes(used)} / {format_bytes(cap)}"))
        else:
            out.append(kv(("used", format_bytes(used), False)))
        fails = int(s.get("alloc_failures", 0))
        out.append(kv(("alloc failures", fmt_int(fails), fails > 0)))
        out.append(kv(("put", fmt_rate(float(s.get("put_rps", 0.0))), False),
                      ("get", fmt_rate(float(s.get("get_rps", 0.0))), False)))
        return out

