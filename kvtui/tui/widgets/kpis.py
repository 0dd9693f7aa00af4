"""The header: the workload and its state, then the figures, each saying which window it covers.

Drawn as "chips" packed greedily into as many lines as the width needs (a chip never splits): the workload
line first, then the figures. The mode badges (● REC, PAUSED, FROZEN; in replay the workload's recorded
pause and FROZEN) have **reserved places**, one per line in a column at the right end: a badge that is off
leaves its place blank, so turning one on or off never moves anything else. REPLAY position / length /
speed is the first chip in replay mode.

Hit rates say their window: ``page hits 74.7 % session · 75.0 % last 30 s`` (the latency window,
:data:`kvtui.metrics.figures.HIT_RATE_RECENT`); a window with no requests, or a paused workload, shows
``—`` rather than 0.0 %. A trace adds its position, speed and ETA (:func:`kvtui.metrics.figures.trace_eta`)
and the ideal hit rate of the trace so far beside the achieved one (:data:`~kvtui.metrics.figures.IDEAL_SO_FAR`),
then aiperf's (:data:`~kvtui.metrics.figures.AIPERF_SO_FAR`: the mean over requests, where ideal weighs tokens).
A store with a disk tier adds where the hits came from, ``hits from memory 63.4 % · disk 11.4 %`` (each tier's
share of the full pages, :data:`~kvtui.metrics.figures.TIER_HIT_RATE`: they add up to the page hit rate), and the
disk tier's reload against recomputing, marked when reading from disk was the slower
(:data:`~kvtui.metrics.figures.TIER_VS_RECOMPUTE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from kvtui.core.knobs import KNOBS, trace_speed_text
from kvtui.core.pages import TIERS
from kvtui.core.panels import WorkloadPanel
from kvtui.metrics.figures import (
    AIPERF_SO_FAR,
    HIT_RATE_RECENT,
    IDEAL_SO_FAR,
    TIER_HIT_RATE,
    TIER_TOTALS,
    TIER_VS_RECOMPUTE,
    tiered,
    trace_eta,
)
from kvtui.tui.fmt import (
    fmt_count,
    fmt_elapsed,
    fmt_int,
    fmt_ms,
    fmt_pct,
    fmt_position,
    fmt_speed,
    format_bytes,
)
from kvtui.tui.widgets.styled import CachedStyles

SEP = "  "
NO_VALUE = "—"
TITLE_FROM = 140  # columns from which the header starts with the title


def replay_text(rp: dict) -> str:
    """The REPLAY badge of ``frame.status["replay"]``: ``'REPLAY 1:05.3 / 3:19.2 ×2 ⏸'`` (▶ playing, ⏸ paused,
    ■ at the end). Position and length are formatted alike, so at the end they read the same."""
    if not rp:
        return "REPLAY"
    length = fmt_position(rp.get("length", 0.0))
    state = "⏸" if rp.get("paused") else ("■" if rp.get("ended") else "▶")
    return (f"REPLAY {fmt_position(rp.get('position', 0.0))} / {length} "
            f"{fmt_speed(rp.get('speed', 1.0))} {state}")


def store_up(frame) -> bool | None:
    """Whether the store answers: the store panel's ``up`` when it has one (None before the first scrape,
    e.g. in the first recorded frame: unknown, not down), else ``status["store_up"]``. Only False is down."""
    store = frame.store or {}
    if "up" in store:
        up = store["up"]
    else:
        up = (frame.status or {}).get("store_up")
    return None if up is None else bool(up)


def trace_text(w: WorkloadPanel, rps: float = 0.0, short: int = 0) -> str:
    """``trace synthetic · row 1,234/3,993 · 2:03/17:02 ×4 · ETA 3:44`` (trace clock: position / length; as fast
    as possible: ``max · ETA ~0:45 at 89 req/s``, an estimate; ``short``: terser)."""
    done, total = int(w.get("done", 0)), int(w.get("total", 0))
    pct = f" ({fmt_pct(done / total, 0)})" if total and "length_s" not in w else ""  # (else the clock says it)
    rows = f"{fmt_int(done)}/{fmt_int(total)}{pct}"
    parts = [f"trace {w.get('name', '?')} {rows}" if short else f"trace {w.get('name', '?')}", f"row {rows}"][
        :1 if short else 2]
    if "length_s" in w:
        speed = trace_speed_text(w.get("speed"))
        clock = "" if short > 1 else f"{fmt_elapsed(w.get('position_s', 0.0))}/{fmt_elapsed(w['length_s'])} "
        parts.append(f"{clock}{speed}")
        eta, basis = trace_eta(w, rps)
        if w.get("complete"):
            parts.append("done")
        elif eta is not None:
            est = basis != "trace time"
            parts.append(f"ETA {'~' if est else ''}{fmt_elapsed(eta)}" + (f" {basis}" if est and not short else ""))
    elif w.get("complete"):
        parts.append("done")
    return " · ".join(parts)


def workload_text(w: WorkloadPanel, short: int = 0, rps: float = 0.0) -> str:
    """One line for ``frame.workload`` (the scenario and its knobs, :data:`kvtui.core.knobs.KNOBS`, or trace
    progress); ``short``: terser labels."""
    if not w:
        return "—"
    if w.get("kind") == "observe":  # kvtui watch --observe
        return f"observing {w.get('name', '?')} (no workload)"
    if w.get("kind") == "trace":
        return trace_text(w, rps, short)
    scenario = w.get("scenario")
    parts = [str(scenario or "?")]
    values: Mapping[str, Any] = w
    for knob in KNOBS.values():  # "overlap 75 %", "pool 8", "20 req/s"; multi-turn: "1st-turn overlap 25 %"
        if knob.name in values:
            label, value = knob.chip_label(scenario, bool(short)), knob.text(float(values[knob.name]))
            parts.append(f"{label} {value}" if label else value)
    if "prompt_tokens" in w and short < 1:
        parts.append(f"{fmt_count(w['prompt_tokens']) if short else fmt_int(w['prompt_tokens'])} tok")
    return " · ".join(parts)


def recent_hit_text(frame) -> str:
    """The page hit rate over the latency window, or ``—`` while paused or when the window holds no page."""
    wt = getattr(frame, "window_totals", None) or {}
    if (frame.status or {}).get("paused") or not wt.get("pages_total"):
        return NO_VALUE
    return fmt_pct(wt.get(HIT_RATE_RECENT.key, 0.0))


class Kpis(CachedStyles, Widget):
    """Header figures of one frame; :attr:`chips` holds the plain text of each (for tests)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "kpis--title", "kpis--label", "kpis--value", "kpis--good", "kpis--bad", "kpis--flag", "kpis--sep",
        "kpis--replay", "kpis--rec", "kpis--ideal"}

    DEFAULT_CSS = """
    Kpis { height: auto; }
    """

    def __init__(self, title: str = "kvtui", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title
        self._chips: list[Text] = []
        self._badges: list[tuple[Text | None, int]] = []  # reserved places: (badge or None when off, width)
        self._breaks: set[int] = set()  # chips that start a new line
        self._key: tuple | None = None
        self._compact = 0
        self._frame_args: tuple | None = None

    @property
    def compact(self) -> int:
        """0: everything; 1: short labels, no title, layout, store mode or prompt length (< 100 columns); 2:
        also no trace percentage or trace clock (< 80 columns). Set by the app from the terminal width."""
        return self._compact

    @compact.setter
    def compact(self, value: int) -> None:
        if value != self._compact:
            self._compact = value
            self._key = None
            if self._frame_args is not None:
                self.update_frame(*self._frame_args[0], **self._frame_args[1])

    def on_resize(self) -> None:
        """The title chip depends on the width: rebuild when a frame came before the widget had its size."""
        if self._frame_args is not None:
            self.update_frame(*self._frame_args[0], **self._frame_args[1])

    def _titled(self) -> bool:
        """The title chip shows from 140 columns (the terminal's title bar says kvtui anyway)."""
        return self._compact < 1 and self.size.width >= TITLE_FROM

    @property
    def chips(self) -> list[str]:
        """Plain text of every chip, in order (the badges that are on come right after the title)."""
        badges = [b.plain for b, _ in self._badges if b is not None]
        head = self._chips[:1] if self._titled() else []
        return [c.plain for c in head] + badges + [c.plain for c in self._chips[len(head):]]

    @property
    def plain(self) -> str:
        """All chips as one line of plain text."""
        return SEP.join(self.chips)

    def _s(self, name: str):
        return self.style_of(name)

    def _chip(self, label: str, value: str, value_class: str = "kpis--value") -> Text:
        t = Text()
        if label:
            t.append(label + " ", self._s("kpis--label"))
        t.append(value, self._s(value_class))
        return t

    def _badge_places(self, st: dict, frozen: bool, replay: bool) -> list[tuple[Text | None, int]]:
        """The reserved badge places of the mode (live: REC, PAUSED, FROZEN; replay: paused, FROZEN)."""
        places = []
        if not replay:  # a recorded frame says recording too: only a live one gets the badge
            places.append((" ● REC ", bool(st.get("recording")), "kpis--rec"))
        places.append((" paused " if replay else " PAUSED ", bool(st.get("paused")), "kpis--flag"))
        places.append((" FROZEN ", frozen, "kpis--flag"))
        return [(Text(text, self._s(cls)) if on else None, len(text)) for text, on, cls in places]

    def update_frame(self, frame, *, frozen: bool = False, window_label: str = "") -> None:
        """Rebuild the chips from ``frame`` (``frozen``: show the FROZEN badge)."""
        key = (self._compact, self.size.width >= TITLE_FROM, int(frame.t), repr(frame.totals), repr(frame.status),
               repr(frame.workload), repr(getattr(frame, "window_totals", None)), store_up(frame), frozen, window_label,
               round(frame.rates.get("rps", 0.0)) if (frame.workload or {}).get("kind") == "trace" else 0)
        if key == self._key:
            return
        self._key = key
        self._frame_args = ((frame,), {"frozen": frozen, "window_label": window_label})
        short = self._compact
        tot, st, w = frame.totals, frame.status or {}, frame.workload or WorkloadPanel()
        replay = st.get("mode") == "replay"
        self._badges = self._badge_places(st, frozen, replay)
        chips = [Text(self.title, self._s("kpis--title"))] if self._titled() else []
        if replay:
            chips.append(Text(f" {replay_text(st.get('replay') or {})} ", self._s("kpis--replay")))
        chips.append(self._chip("", workload_text(w, short, frame.rates.get("rps", 0.0))))
        store = None
        if st:
            up = store_up(frame)
            state = "up" if up else ("DOWN" if up is False else "—")
            store = self._chip("store" if short else f"store {st.get('store_mode', '?')}", f"● {state}",
                               "kpis--good" if up else ("kpis--bad" if up is False else "kpis--label"))
            if not short:
                chips.append(store)
        chips.append(self._chip("elapsed", fmt_elapsed(frame.t)))
        breaks = {len(chips)}  # the figures start a line of their own
        if not (short and w.get("kind") == "trace"):  # (a trace's first line counts its rows done)
            chips.append(self._chip("req" if short else "requests", fmt_int(tot.get("requests", 0))))
        hit, inp = tot.get("tokens_hit", 0), tot.get("tokens_input", 0)
        rate = fmt_pct(tot.get("token_hit_rate", 0.0))
        skipped = (self._chip("skipped", rate, "kpis--good") if short else  # (short: three lines at 80 columns)
                   self._chip("prefill skipped", f"{fmt_count(hit)}/{fmt_count(inp)} tok ({rate})", "kpis--good"))
        if IDEAL_SO_FAR.key in tot:  # a trace: the unbounded cache's hit rate over the same rows
            skipped.append("  ")  # (spaces in their own span: SVG renderers drop a span's leading spaces)
            skipped.append("ideal ", self._s("kpis--label"))
            skipped.append(fmt_pct(tot[IDEAL_SO_FAR.key]), self._s("kpis--ideal"))
            if not short:
                skipped.append(" ")
                skipped.append("(∞ cache)", self._s("kpis--label"))
        if AIPERF_SO_FAR.key in tot:  # aiperf's rule over the same rows: the mean of per-request shares
            skipped.append("  ")
            skipped.append(f"{AIPERF_SO_FAR.label} ", self._s("kpis--label"))
            skipped.append(fmt_pct(tot[AIPERF_SO_FAR.key]), self._s("kpis--ideal"))
        chips.append(skipped)
        hits = self._chip("hits" if short else "page hits", fmt_pct(tot.get("page_hit_rate", 0.0)))
        hits.append(" ")
        if short:  # "hits 72.5 % all · 30 s 72.5 %"
            hits.append(f"all · {HIT_RATE_RECENT.label.removeprefix('last ')} ", self._s("kpis--label"))
            hits.append(recent_hit_text(frame), self._s("kpis--value"))
        else:  # "page hits 72.5 % session · 72.5 % last 30 s"
            hits.append("session · ", self._s("kpis--label"))
            hits.append(recent_hit_text(frame) + " ", self._s("kpis--value"))
            hits.append(HIT_RATE_RECENT.label, self._s("kpis--label"))
        chips.append(hits)
        if tiered(tot):
            chips.append(self._tier_chip(tot, short))
        chips.append(self._chip("reused", format_bytes(tot.get("bytes_loaded", 0))))
        if not (short and (frame.ttft or {}).get("off")):  # (below 100 columns "est. off" is not worth a line)
            chips += self._ttft_chips(frame.ttft or {}, short)
        mism = int(tot.get("mismatches", 0))
        sampled = st.get("verify") == "sampled"  # (--verify sampled: only a sample of each page's words checked)
        chips.append(self._chip(("sampled" if short else "verified by sample") if sampled else "verified",
                                fmt_int(tot.get("verified_pages", 0)) + ("" if short else " pages")))
        chips.append(self._chip("mism" if short else "mismatches", fmt_int(mism),
                                "kpis--bad" if mism else "kpis--value"))
        if store is not None and short:
            chips.append(store)
        if st.get("layout") and not short:
            chips.append(self._chip("", str(st["layout"]), "kpis--label"))
        before = self.get_content_height(Size(0, 0), Size(0, 0), max(1, self.size.width))
        self._chips, self._breaks = chips, breaks
        self.refresh(layout=self.get_content_height(Size(0, 0), Size(0, 0), max(1, self.size.width)) != before)

    def _tier_chip(self, tot: Mapping[str, Any], short: int) -> Text:
        """``hits from memory 63.4 % · disk 11.4 %`` (short: ``mem 63.4 % · disk 11.4 %``): each tier's page hit
        rate."""
        t = Text()
        for i, tier in enumerate(TIERS):
            if i:  # (the space in its own span: SVG renderers drop a span's leading spaces)
                t.append(" ")
                t.append("· ", self._s("kpis--label"))
            word = ("mem" if tier == "memory" else tier) if short else (
                f"{TIER_HIT_RATE.label} {tier}" if not i else tier)
            t.append(word + " ", self._s("kpis--label"))
            t.append(fmt_pct(float(tot.get(TIER_TOTALS[TIER_HIT_RATE.key].format(tier=tier), 0.0))),
                     self._s("kpis--value"))
        return t

    def _ttft_chips(self, tt: dict, short: int) -> list[Text]:
        """The TTFT estimate's chips (``frame.ttft``, last 30 s): saved p50/p99 with the basis, and reload vs
        recompute, marked when the reload is the slower; none without the panel."""
        if not tt:
            return []
        if tt.get("off"):
            return [self._chip("TTFT", "est. off (no model)", "kpis--label")]
        w = tt.get("window") or {}

        def ms(v: float) -> str:
            return ("−" if v < 0 else "") + fmt_ms(abs(v))

        basis = f"(est., {tt.get('short', '?')})"
        if not w.get("count"):
            return [self._chip("TTFT saved", f"{NO_VALUE} {basis}")]
        approx = "~" if w["p50_ms"] > 0 else ""  # ("~−197 ms" reads badly)
        chips = [self._chip("TTFT saved", f"{approx}{ms(w['p50_ms'])} p50 · {ms(w['p99_ms'])} p99 {basis}",
                            "kpis--good" if w["p50_ms"] > 0 else "kpis--bad")]
        ratio = float(w.get("ratio", 0.0))
        if ratio > 1:
            chips.append(self._chip("", f"⚠ reload {ratio:.2f}× slower than recompute (est.)", "kpis--bad"))
        elif not short:
            chips.append(self._chip("reload/recompute", f"{ratio:.2f}× (est.)"))
        disk = (w.get("tiers") or {}).get("disk") or {}
        if disk.get("count"):  # a disk tier: its reads against recomputing the same tokens
            ratio = float(disk.get("ratio", 0.0))
            if ratio > 1:
                chips.append(self._chip("", f"⚠ disk reads {ratio:.2f}× slower than recompute (est.)", "kpis--bad"))
            elif not short:
                chips.append(self._chip(f"disk {TIER_VS_RECOMPUTE.label}", f"{ratio:.2f}× (est.)"))
        return chips

    @property
    def badge_width(self) -> int:
        """Cells reserved at the right of every line for the badge column (its widest place and a space)."""
        return max((w for _, w in self._badges), default=0) + 1 if self._badges else 0

    def pack(self, width: int) -> list[list[Text]]:
        """Chips packed into lines of at most ``width`` cells less the badge column (a chip wider than the
        line is cut); the figures start a new line."""
        lines: list[list[Text]] = [[]]
        used, room = 0, max(1, width - self.badge_width)
        for i, chip in enumerate(self._chips):
            need = chip.cell_len + (len(SEP) if used else 0)
            if used and (used + need > room or i in self._breaks):
                lines.append([])
                used, need = 0, chip.cell_len
            lines[-1].append(chip)
            used += need
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self.pack(max(1, width))), len(self._badges))

    def render(self) -> Text:
        width = max(1, self.size.width)
        out = Text(no_wrap=True, overflow="ellipsis")
        sep = self._s("kpis--sep")
        lines = self.pack(width)
        lines += [[] for _ in range(len(self._badges) - len(lines))]
        room = max(0, width - self.badge_width)
        for i, line in enumerate(lines):
            if i:
                out.append("\n")
            row = Text(no_wrap=True, overflow="ellipsis")
            for j, chip in enumerate(line):
                if j:
                    row.append(SEP, sep)
                row.append_text(chip)
            if self._badges:
                row.truncate(room, overflow="ellipsis")
                row.pad_right(room - row.cell_len)
                badge = self._badges[i][0] if i < len(self._badges) else None
                row.append(" " * (self.badge_width - (badge.cell_len if badge is not None else 0)))
                if badge is not None:
                    row.append_text(badge)
            out.append_text(row)
        return out
