"""Animated SVG of a film, streamed: one outer ``<svg>`` whose frames (each a frame's SVG screenshot, nested)
take turns through one CSS keyframe animation (visibility, ``step-end``): frame ``k`` of ``n`` is visible
during ``[k / fps, (k + 1) / fps)`` of every ``n / fps`` s cycle. The delays are negative, so every frame's
animation runs from the first instant; a renderer without CSS animation shows the first frame. Browsers play
it, also as an ``<img>`` (a README on GitHub)."""

from __future__ import annotations

import re
from typing import TextIO

from kvtui.movie.frames import ScreenFrame

_VIEWBOX = re.compile(r'viewBox="0 0 ([0-9.]+) ([0-9.]+)"')


class SvgAnimWriter:
    """Writes an animated SVG of ``frames`` frames at ``fps`` to ``fp`` (text); :meth:`add` per frame, in
    order, :meth:`close` at the end (the caller owns the file). ``ValueError`` from :meth:`close` if fewer or
    more frames came than announced (the animation's timing depends on the count)."""

    def __init__(self, fp: TextIO, frames: int, fps: float, title: str = "kvtui"):
        self.fp, self.n, self.fps, self.title = fp, int(frames), float(fps), title
        self.frames = 0

    def _head(self, width: str, height: str) -> str:
        cycle = self.n / self.fps
        slot = 100.0 / self.n
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
                f'height="{height}">\n<title>{_esc(self.title)}</title>\n<style>\n'
                f".kvtui-frame {{ visibility: hidden; animation: kvtui-show {cycle:.6f}s step-end infinite; }}\n"
                f"#kvtui-frame-0 {{ visibility: visible; }}\n"
                f"@keyframes kvtui-show {{ 0% {{ visibility: visible; }} {slot:.6f}% {{ visibility: hidden; }} "
                f"100% {{ visibility: hidden; }} }}\n</style>\n")

    def add(self, frame: ScreenFrame) -> None:
        """Append frame number ``self.frames`` (its screenshot, shown in its time slot)."""
        k = self.frames
        svg = frame.svg(self.title, unique_id=f"kvtui-f{k}")
        if k == 0:
            m = _VIEWBOX.search(svg)
            if not m:
                raise ValueError("a frame's SVG has no viewBox")
            self.fp.write(self._head(m.group(1), m.group(2)))
        delay = k / self.fps - self.n / self.fps
        self.fp.write(f'<g class="kvtui-frame" id="kvtui-frame-{k}" style="animation-delay: {delay:.6f}s">\n')
        self.fp.write(svg)
        self.fp.write("\n</g>\n")
        self.frames += 1

    def close(self) -> None:
        if self.frames != self.n:
            raise ValueError(f"animated SVG announced {self.n} frames, got {self.frames}")
        self.fp.write("</svg>\n")
        self.fp.flush()


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
