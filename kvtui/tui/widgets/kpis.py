"""The header KPIs: mode badges (REPLAY position / length / speed, ● REC, PAUSED, FROZEN), requests, prefill
tokens skipped, hit rate, bytes reused, verification, store, workload, elapsed time. Drawn as "chips" packed
greedily into as many lines as the width needs (a chip never splits).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from kvtui.tui.fmt import (
    fmt_count,
    fmt_elapsed,
    fmt_int,
    fmt_pct,
    fmt_position,
    fmt_rps_knob,
    fmt_speed,
    format_bytes,
)
from kvtui.tui.widgets.styled import CachedStyles

SEP = "  "


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


def workload_text(w: dict, short: int = 0) -> str:
    """One line for ``frame.workload`` (synthetic knobs or trace progress); ``short``: terser labels."""
    if not w:
        return "—"
    if w.get("kind") == "trace":
        done, total = int(w.get("done", 0)), int(w.get("total", 0))
        pct = f" ({fmt_pct(done / total, 0)})" if total else ""
        return f"trace {w.get('name', '?')} {fmt_int(done)}/{fmt_int(total)}{pct}"
    parts = [str(w.get("scenario", "?"))]
    if "overlap" in w:
        parts.append(f"{'ovl' if short else 'overlap'} {round(100 * float(w['overlap']))} %")
    if "pool" in w:
        parts.append(f"pool {int(w['pool'])}")
    if "rate" in w:
        parts.append(fmt_rps_knob(float(w["rate"])))
    if "prompt_tokens" in w and short < 2:
        parts.append(f"{fmt_count(w['prompt_tokens']) if short else fmt_int(w['prompt_tokens'])} tok")
    return " · ".join(parts)


class Kpis(CachedStyles, Widget):
    """Header figures of one frame; :attr:`chips` holds the plain text of each (for tests)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "kpis--title", "kpis--label", "kpis--value", "kpis--good", "kpis--bad", "kpis--flag", "kpis--sep",
        "kpis--replay", "kpis--rec"}

    DEFAULT_CSS = """
    Kpis { height: auto; }
    """

    def __init__(self, title: str = "kvtui", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title
        self._chips: list[Text] = []
        self._key: tuple | None = None
        self._compact = 0
        self._frame_args: tuple | None = None

    @property
    def compact(self) -> int:
        """0: everything; 1: short labels, no layout chip (< 100 columns); 2: also no title, store mode or
        prompt length (< 80 columns). Set by the app from the terminal width."""
        return self._compact

    @compact.setter
    def compact(self, value: int) -> None:
        if value != self._compact:
            self._compact = value
            self._key = None
            if self._frame_args is not None:
                self.update_frame(*self._frame_args[0], **self._frame_args[1])

    @property
    def chips(self) -> list[str]:
        """Plain text of every chip, in order."""
        return [c.plain for c in self._chips]

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

    def update_frame(self, frame, *, frozen: bool = False, window_label: str = "") -> None:
        """Rebuild the chips from ``frame`` (``frozen``: show the FROZEN flag)."""
        key = (self._compact, int(frame.t), repr(frame.totals), repr(frame.status), repr(frame.workload), store_up(frame),
               frozen, window_label)
        if key == self._key:
            return
        self._key = key
        self._frame_args = ((frame,), {"frozen": frozen, "window_label": window_label})
        short = self._compact
        tot, st = frame.totals, frame.status or {}
        chips = [Text(self.title, self._s("kpis--title"))] if short < 2 else []
        replay = st.get("mode") == "replay"
        if replay:
            chips.append(Text(f" {replay_text(st.get('replay') or {})} ", self._s("kpis--replay")))
        elif st.get("recording"):  # a recorded frame says so too: only a live one gets the badge
            chips.append(Text(" ● REC ", self._s("kpis--rec")))
        flags = []
        if st.get("paused"):
            flags.append("workload paused" if replay else "PAUSED")  # replay: as recorded
        if frozen:
            flags.append("FROZEN")
        chips += [Text(f" {f} ", self._s("kpis--flag")) for f in flags]
        chips.append(self._chip("req" if short else "requests", fmt_int(tot.get("requests", 0))))
        hit, inp = tot.get("tokens_hit", 0), tot.get("tokens_input", 0)
        chips.append(self._chip("skipped" if short else "prefill skipped",
                                f"{fmt_count(hit)}/{fmt_count(inp)} tok ({fmt_pct(tot.get('token_hit_rate', 0.0))})",
                                "kpis--good"))
        chips.append(self._chip("hits" if short else "page hits", fmt_pct(tot.get("page_hit_rate", 0.0))))
        chips.append(self._chip("reused", format_bytes(tot.get("bytes_loaded", 0))))
        mism = int(tot.get("mismatches", 0))
        chips.append(self._chip("verified", fmt_int(tot.get("verified_pages", 0))
                                + ("" if short else " pages")))
        chips.append(self._chip("mism" if short else "mismatches", fmt_int(mism),
                                "kpis--bad" if mism else "kpis--value"))
        if st:
            up = store_up(frame)
            state = "up" if up else ("DOWN" if up is False else "—")
            chips.append(self._chip("store" if short > 1 else f"store {st.get('store_mode', '?')}", f"● {state}",
                                    "kpis--good" if up else ("kpis--bad" if up is False else "kpis--label")))
        chips.append(self._chip("", workload_text(frame.workload, short)))
        chips.append(self._chip("elapsed", fmt_elapsed(frame.t)))
        if st.get("layout") and not short:
            chips.append(self._chip("", str(st["layout"]), "kpis--label"))
        if window_label and not short:
            chips.append(self._chip("latency", window_label, "kpis--label"))
        before = len(self.pack(max(1, self.size.width)))
        self._chips = chips
        self.refresh(layout=len(self.pack(max(1, self.size.width))) != before)

    def pack(self, width: int) -> list[list[Text]]:
        """Chips packed into lines of at most ``width`` cells (a chip wider than the line is cut)."""
        lines: list[list[Text]] = [[]]
        used = 0
        for chip in self._chips:
            need = chip.cell_len + (len(SEP) if used else 0)
            if used and used + need > width:
                lines.append([])
                used, need = 0, chip.cell_len
            lines[-1].append(chip)
            used += need
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self.pack(max(1, width))))

    def render(self) -> Text:
        out = Text(no_wrap=True, overflow="ellipsis")
        sep = self._s("kpis--sep")
        for i, line in enumerate(self.pack(max(1, self.size.width))):
            if i:
                out.append("\n")
            for j, chip in enumerate(line):
                if j:
                    out.append(SEP, sep)
                out.append_text(chip)
        return out
