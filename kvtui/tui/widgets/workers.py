"""Workers panel: one line per worker with the figures of :data:`kvtui.metrics.figures.WORKERS` from
``frame.workers`` (requests, share of its role's requests, page hit rate, local reuse (where wide), busy MB/s: reuse
read for a decode worker, publish write for a prefill worker, store errors). The app shows it only when a run has more
than one worker of a role (``--prefill-workers`` / ``--decode-workers``)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from kvtui.metrics import figures as fig
from kvtui.tui.fmt import fmt_count
from kvtui.tui.widgets.lines import LinesPanel

TITLE = "Workers · session"


def several(workers) -> bool:
    """True when ``workers`` (``frame.workers``) has more than one worker of a role."""
    roles = [w.get("role") for w in workers or ()]
    return any(roles.count(r) > 1 for r in set(roles))


def _mbps(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


class WorkersPanel(LinesPanel):
    """Header plus one line per worker: name, requests, share (when there is room), hits, MB/s, errors."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"workers--header", "workers--bad"}

    DEFAULT_CSS = """
    WorkersPanel { height: auto; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.shown_workers: tuple = ()
        self.border_title = TITLE
        self.border_subtitle = "MB/s: reuse, publish (busy)"

    def update_frame(self, frame) -> None:
        workers = tuple(frame.workers or ())
        if workers != self.shown_workers:
            relayout = len(workers) != len(self.shown_workers)
            self.shown_workers = workers
            self.refresh(layout=relayout)

    def render(self) -> Text:
        """The lines that fit the panel's height (header first); the subtitle says how many are not shown."""
        lines = self.lines(self.size.width)
        room = max(1, self.size.height)
        hidden = max(0, len(lines) - room)
        subtitle = f"+{hidden} not shown" if hidden else "MB/s: reuse, publish (busy)"
        if self.border_subtitle != subtitle:
            self.border_subtitle = subtitle
        text = Text("\n").join(lines[:room])
        text.no_wrap, text.overflow = True, "ellipsis"
        return text

    def lines(self, width: int) -> list[Text]:
        if not self.shown_workers:
            return [Text("no requests yet")]
        share, local = width >= 38, width >= 44
        name_w = max(4, width - (7 + 5 + 7 + 4) - (6 if share else 0) - (6 if local else 0))

        def row(name, req, sh, hits, loc, mbps, err) -> str:
            return (f"{name[:name_w]:<{name_w}}{req:>7}" + (f"{sh:>6}" if share else "") + f"{hits:>5}"
                    + (f"{loc:>6}" if local else "") + f"{mbps:>7}{err:>4}")

        out = [Text(row("worker", "req", "share", "hits", "local", "MB/s", "err"),
                    self.get_component_rich_style("workers--header", partial=True))]
        bad = self.get_component_rich_style("workers--bad", partial=True)
        for w in self.shown_workers:
            decode = w.get("role") == "decode"
            mbps = w.get(fig.WORKER_REUSE_BUSY.key if decode else fig.WORKER_PUBLISH_BUSY.key, 0.0)
            hits = f"{100 * w.get(fig.WORKER_HIT_RATE.key, 0.0):.0f}%" if decode else ""
            local_share = w.get(fig.WORKER_LOCAL.key)
            loc = ("—" if local_share is None else f"{100 * local_share:.0f}%") if decode else ""
            errors = int(w.get(fig.WORKER_ERRORS.key, 0))
            line = Text(row(str(w.get("name", "?")), fmt_count(w.get(fig.WORKER_REQUESTS.key, 0)),
                            f"{100 * w.get(fig.WORKER_SHARE.key, 0.0):.0f}%", hits, loc, _mbps(mbps),
                            fmt_count(errors)))
            if errors or w.get("mismatches"):
                line.stylize(bad)
            out.append(line)
        return out
