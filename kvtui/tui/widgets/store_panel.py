"""Store panel: keys, evictions and allocation failures, used / total capacity (bar), put/get request rates.

Figures are ``label value`` pairs packed into lines without cutting a word (:func:`~kvtui.tui.widgets.lines.
pack_pairs`): a narrow panel takes the short forms (``allocs``, ``12.3k``) or a line more, never
``alloc fai…``. Evictions and allocation failures come first and turn red when not zero. While no master answers
(an outage, a failover), the figures are the last sample's: dimmed, under a line that says so, ``stale`` below.

A store with a disk tier (:data:`kvtui.metrics.figures.STORE_DISK`) shows the keys offloaded to disk in place of
the keys evicted (on such a store a DRAM eviction is an offload: the key stays readable), the keys evicted from
disk (gone: red when not zero) and promoted back to memory, and a second bar, the disk's use of its capacity; a
narrow panel (below :data:`ROOMY` cells) takes the short words and leaves out the bars' byte lines, so the two
bars fit where one store's figures did.

A store that replicates hot keys (``--replicate-hot``) adds a line: the KV page hits that had a second memory replica
(:data:`kvtui.metrics.figures.HOT_PAGES_HIT`, from the run's totals) and the master's copies of hot keys started and
done (:data:`kvtui.metrics.figures.STORE_HOT`); a narrow panel takes their short forms and, as with a disk tier,
leaves out the bar's byte line, so it keeps the height of a store without them.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from kvtui.metrics import figures as fig
from kvtui.tui.fmt import fmt_count, fmt_int, fmt_pct, fmt_rate, format_bytes
from kvtui.tui.widgets.lines import LinesPanel, pack_pairs
from kvtui.tui.widgets.styled import CachedStyles

ROOMY = 30  # the cells from which a disk tier's panel has its long words and the bars' byte lines
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
        self.hot: int | None = None  # HOT_PAGES_HIT of the frame's totals (None: the store replicates no hot key)
        self.border_title = "Store"

    def update_frame(self, frame) -> None:
        store = dict(frame.store or {})
        hot = (frame.totals or {}).get(fig.HOT_PAGES_HIT.key)
        hot = int(hot) if hot is not None else None
        if store != self.store or hot != self.hot:
            self.store, self.hot = store, hot
            self.refresh(layout=True)

    def _s(self, name: str):
        return self.style_of(name)

    def lines(self, width: int) -> list[Text]:
        """The panel's lines at ``width`` cells."""
        s, lab = self.store, self._s("store-panel--label")
        if not s:
            return [Text("no store metrics yet", self._s("store-panel--dim"))]
        bad = self._s("store-panel--bad")

        def count(key: str, alarm: bool = True):
            n = int(s.get(key, 0))
            return (fmt_int(n), fmt_count(n)), bad if n and alarm and key != "keys" else None

        keys, evicted, fails = count("keys"), count("evicted_keys"), count("alloc_failures")
        disk = fig.STORE_DISK_USED.key in s  # a disk tier
        hot = self.hot is not None or fig.STORE_COPIES_STARTED.key in s  # hot-key replication: a line more
        roomy = not (disk or hot) or width >= ROOMY
        rates = [((fig.STORE_PUT_RATE.label,), (fmt_rate(float(s.get("put_rps", 0.0))),), None),
                 ((fig.STORE_GET_RATE.label,), (fmt_rate(float(s.get("get_rps", 0.0))),), None)]
        if disk:
            def words(*forms: str) -> tuple[str, ...]:
                return forms if roomy else forms[-1:]

            pairs = [((fig.STORE_KEYS.label,), *keys),
                     (words(fig.STORE_OFFLOADED.label, "offload"), *count(fig.STORE_OFFLOADED.key, alarm=False)),
                     (words(fig.STORE_DISK_EVICTED.label, "disk evict"), *count(fig.STORE_DISK_EVICTED.key)),
                     (words(fig.STORE_ALLOC_FAILS.label, "alloc fails", "allocs"), *fails),
                     (words(fig.STORE_PROMOTED.label, "promo"), *count(fig.STORE_PROMOTED.key, alarm=False))]
        else:
            pairs = [((fig.STORE_KEYS.label,), *keys), ((fig.STORE_EVICTED.label, "evict"), *evicted),
                     ((fig.STORE_ALLOC_FAILS.label, "alloc fails", "allocs"), *fails)]
        out = pack_pairs(pairs, width, lab)
        out += self._bar("mem" if disk else fig.STORE_USED.label, int(s.get("used_bytes", 0)),
                         int(s.get("capacity_bytes", 0)), width, roomy)
        if disk:
            out += self._bar(fig.STORE_DISK_USED.label, int(s.get(fig.STORE_DISK_USED.key, 0)),
                             int(s.get(fig.STORE_DISK_CAPACITY.key, 0)), width, roomy)
        out += (self._hot(width, roomy) if hot else []) + pack_pairs(rates, width, lab)
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

    def _hot(self, width: int, roomy: bool) -> list[Text]:
        """``hot hits 1,234  copies 48 started · 48 done``; narrow (not ``roomy``), the short forms on one line
        where they fit: ``hot 1.2k  copies 48/48``."""
        s = self.store
        pairs: list[tuple[tuple[str, ...], tuple[str, ...], None]] = []
        if self.hot is not None:
            pairs.append(((fig.HOT_PAGES_HIT.label, "hot"), (fmt_int(self.hot), fmt_count(self.hot)), None))
        if fig.STORE_COPIES_STARTED.key in s:
            started, done = (int(s.get(f.key, 0)) for f in fig.STORE_HOT)
            pairs.append((("copies",), (fig.copies_text(s), f"{fmt_count(done)}/{fmt_count(started)}"), None))
        if not roomy:
            pairs = [(labels[-1:], values[-1:], style) for labels, values, style in pairs]
        return pack_pairs(pairs, width, self._s("store-panel--label"))

    def _bar(self, label: str, used: int, cap: int, width: int, sizes: bool = True) -> list[Text]:
        """``used ████░░░ 75 %`` and (``sizes``) ``12.0 MiB / 16.0 MiB``; a capacity unknown: ``used 12.0 MiB``."""
        lab = self._s("store-panel--label")
        if cap <= 0:
            return pack_pairs([((label,), (format_bytes(used),), None)], width, lab)
        frac = min(1.0, used / cap)
        pct = " " + fmt_pct(frac, 0)
        bar_w = max(1, width - max(5, len(label) + 1) - len(pct))
        fill = round(frac * bar_w)
        bar = (Text(label.ljust(4) + " ", lab) + Text("█" * fill, self._s("store-panel--bar"))
               + Text("░" * (bar_w - fill), self._s("store-panel--bar-empty")) + Text(pct))
        return [bar, Text(f"{format_bytes(used)} / {format_bytes(cap)}")] if sizes else [bar]
