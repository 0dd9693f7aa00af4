"""The master's dashboard of observe mode (``kvtui watch --observe``): the master's health, its figures over
time as sparklines, its eviction / failure / lease-related counters and each segment's fill.

An HA cluster's masters get a line each after the health line: name, role (``leader`` when serving, ``warm-up``,
``standby``, ``candidate``, ``down``), its ``/ha_status`` word, a standby's OpLog lag and its admin URL, then the
leader's RPC address.

Reads only the frame: ``frame.store`` (the newest sample; observe keys of
:class:`~kvtui.core.panels.StoreScrape`) and ``frame.series`` (one point per sample, oldest first). The app
shows it in place of the page grid and the latency panels when ``frame.workload["kind"] == "observe"``.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from kvtui.tui.fmt import fmt_int, fmt_pct, fmt_rate, format_bytes
from kvtui.tui.widgets.lines import LinesPanel
from kvtui.tui.widgets.styled import CachedStyles

BLOCKS = "▁▂▃▄▅▆▇█"
# (series key, label, formatter of the current value)
ROWS = (
    ("keys", "keys", lambda v: fmt_int(v)),
    ("used_bytes", "used", lambda v: format_bytes(int(v))),
    ("put_rps", "puts", lambda v: fmt_rate(v)),
    ("get_rps", "gets", lambda v: fmt_rate(v)),
    ("evict_kps", "evicted keys", lambda v: fmt_rate(v)),
    ("alloc_fail_ps", "alloc failures", lambda v: fmt_rate(v)),
    ("get_hit_ratio", "get hit ratio", lambda v: fmt_pct(v, 0)),
)
LABEL_W, VALUE_W = 15, 11


def spark(values, width: int) -> str:
    """The last ``width`` of ``values`` as block characters scaled to their maximum (empty: blank)."""
    vals = [max(0.0, float(v)) for v in list(values)[-width:]] if width > 0 else []
    top = max(vals, default=0.0)
    if top <= 0:
        return BLOCKS[0] * len(vals)
    return "".join(BLOCKS[min(len(BLOCKS) - 1, int(v / top * (len(BLOCKS) - 1) + 0.5))] for v in vals)


class MasterPanel(CachedStyles, LinesPanel):
    """Renders the observe panel of a frame (nothing useful outside observe mode: the app hides it)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "master-panel--label", "master-panel--spark", "master-panel--bad", "master-panel--good",
        "master-panel--dim", "master-panel--bar", "master-panel--bar-empty"}

    DEFAULT_CSS = """
    MasterPanel { height: 1fr; }
    MasterPanel > .master-panel--label { color: $text-muted; }
    MasterPanel > .master-panel--spark { color: $primary-lighten-2; }
    MasterPanel > .master-panel--bad { color: $text-error; text-style: bold; }
    MasterPanel > .master-panel--good { color: $text-success; text-style: bold; }
    MasterPanel > .master-panel--dim { color: $text-muted; text-style: italic; }
    MasterPanel > .master-panel--bar { color: $primary; }
    MasterPanel > .master-panel--bar-empty { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.store: dict = {}
        self.series: dict = {}
        self.master = ""
        self.border_title = "Master · observe mode (no workload)"

    def update_frame(self, frame) -> None:
        store, series = dict(frame.store or {}), {k: tuple(v) for k, v in (frame.series or {}).items()}
        name = str((frame.workload or {}).get("name", ""))
        if (store, series, name) != (self.store, self.series, self.master):
            self.store, self.series, self.master = store, series, name
            self.border_title = f"Master {name} · observe mode (no workload)" if name else \
                "Master · observe mode (no workload)"
            self.refresh()

    def _s(self, name: str):
        return self.style_of(name)

    def lines(self, width: int) -> list[Text]:
        """The panel's lines at ``width`` cells."""
        s, lab = self.store, self._s("master-panel--label")
        if not s or s.get("up") is None:
            return [Text("no sample of the master yet", self._s("master-panel--dim"))]
        out = [self._health(s), *self._masters(s, width)]
        spark_w = max(0, width - LABEL_W - VALUE_W - 1)
        for key, label, fmt in ROWS:
            v = s.get(key)
            if key == "get_hit_ratio" and v is None:
                value = "—"  # no get between the last two samples
            else:
                value = fmt(float(v or 0.0))
            t = Text(f"{label:<{LABEL_W}}", lab) + Text(f"{value:>{VALUE_W}} ")
            t.append(spark(self.series.get(key, ()), spark_w), self._s("master-panel--spark"))
            out.append(t)
        out.append(self._kv(("evicted", fmt_int(s.get("evicted_keys", 0)), False),
                            ("failed evictions", fmt_rate(float(s.get("evict_fail_ps", 0.0))), False),
                            ("alloc failures", fmt_int(s.get("alloc_failures", 0)), s.get("alloc_failures", 0) > 0)))
        out.append(self._kv(("failed puts", fmt_rate(float(s.get("put_fail_ps", 0.0))), s.get("put_fail_ps", 0) > 0),
                            ("failed gets", fmt_rate(float(s.get("get_fail_ps", 0.0))), False),
                            ("removes refused", fmt_int(s.get("remove_failures", 0)), False)))
        out.append(self._kv(("put starts discarded", fmt_int(s.get("put_discards", 0)), False),
                            ("released", fmt_int(s.get("put_releases", 0)), False),
                            ("soft-pinned", fmt_int(s.get("soft_pinned_keys", 0)), False),
                            ("clients", fmt_int(s.get("clients", 0)), False)))
        segs = s.get("segments") or []
        out.append(Text(f"segments ({len(segs)})", lab))
        for seg in segs:
            out.append(self._segment(seg, width))
        return out

    def _health(self, s: dict) -> Text:
        h = s.get("health") or {}
        up = s.get("up")
        t = Text("master ", self._s("master-panel--label"))
        t.append("● up" if up else "● DOWN", self._s("master-panel--good" if up else "master-panel--bad"))
        for k in ("status", "role", "ha_state"):
            if h.get(k):
                t.append(f" · {h[k]}")
        if h.get("service_ready") is False:
            t.append(" · not ready", self._s("master-panel--bad"))
        if not up:
            t.append(" (figures below are the last sample)", self._s("master-panel--dim"))
        return t

    def _masters(self, s: dict, width: int) -> list[Text]:
        """An HA cluster's masters, one line each, and the leader's address (none without ``masters``)."""
        rows = s.get("masters") or []
        if not rows:
            return []
        lab, out = self._s("master-panel--label"), []
        name_w = max(len(str(m.get("name", ""))) for m in rows)
        for m in rows:
            role = str(m.get("role", "?"))
            style = "master-panel--good" if role == "leader" else "master-panel--bad" if role == "down" else ""
            t = Text(f"  {str(m.get('name', '?')):<{name_w}}  ", lab)
            t.append(f"{role:<10}", self._s(style) if style else "")
            state = str(m.get("ha_state") or "")
            note = state if state and state not in (role, "serving") and role != "warm-up" else ""
            lag = m.get("lag")
            t.append(f"{note:<13}" if lag is None else "lag ", lab)
            if lag is not None:
                t.append(f"{fmt_int(lag):<9}", self._s("master-panel--bad") if lag else "")
            t.append(str(m.get("url", "")), lab)
            t.truncate(width)
            out.append(t)
        leader = s.get("leader")
        out.append(Text("  leader RPC ", lab) + (Text(str(leader)) if leader else
                                               Text("none (no master serves)", self._s("master-panel--bad"))))
        return out

    def _kv(self, *pairs) -> Text:
        t, lab = Text(), self._s("master-panel--label")
        for i, (label, value, bad) in enumerate(pairs):
            if i:
                t.append("  ", lab)
            t.append(label + " ", lab)
            t.append(value, self._s("master-panel--bad") if bad else "")
        return t

    def _segment(self, seg: dict, width: int) -> Text:
        used, cap = int(seg.get("used_bytes", 0)), int(seg.get("capacity_bytes", 0))
        frac = min(1.0, used / cap) if cap > 0 else 0.0
        tail = f" {fmt_pct(frac, 0):>4} {format_bytes(used)} / {format_bytes(cap)}"
        name = str(seg.get("name", "?"))
        status = str(seg.get("status", ""))
        head = f"  {name} {status} "
        bar_w = max(4, min(30, width - len(head) - len(tail)))
        fill = round(frac * bar_w)
        return (Text(head, self._s("master-panel--label")) + Text("█" * fill, self._s("master-panel--bar"))
                + Text("░" * (bar_w - fill), self._s("master-panel--bar-empty")) + Text(tail))
