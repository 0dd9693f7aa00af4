"""Animated GIF (GIF89a) of a film, streamed: each frame's SVG screenshot is rasterised with cairosvg and
written at once as the rectangle that changed since the previous frame, with its own palette (Pillow's
``quantize``) in which pixels that did not change are transparent, so they stay as they were (disposal 1),
then encoded by Pillow's GIF frame encoder (``PIL.GifImagePlugin.getdata``). Only the previous frame's
pixels are kept, so memory does not grow with the film (Pillow's own ``save_all`` holds every frame).

Needs the ``export`` extra (``pip install 'kvtui[export]'``: cairosvg, which loads the system's libcairo,
and Pillow); :func:`missing_dependency` says what is missing, in one line.
"""

from __future__ import annotations

import io
import struct
from typing import Any, BinaryIO

from kvtui.movie.frames import ScreenFrame

DEFAULT_WIDTH_PX = 800
COLORS = 256  # per frame: the changed rectangle's own palette, one entry kept for "unchanged" (transparent)
SVG_FONT = "font-family: Fira Code, monospace;"  # Rich's SVG screenshots (rich/_export_format.py)
RASTER_FONT = "font-family: monospace;"
"""cairosvg asks fontconfig for the first family only; without Fira Code that gives a proportional font
(DejaVu Sans), whose glyphs overrun their cells: the rasterised frames ask for the system's monospace."""
BACKGROUND = (12, 12, 12)  # under the screenshot's rounded window corners (GIF has no partial transparency)


def missing_dependency() -> str | None:
    """None when cairosvg (with a loadable libcairo) and Pillow import, else why not (one line)."""
    try:
        import PIL.GifImagePlugin  # noqa: F401
        from PIL import Image  # noqa: F401
    except ImportError:
        return "Pillow is not installed (pip install 'kvtui[export]')"
    try:
        import cairosvg  # noqa: F401
    except ImportError:
        return "cairosvg is not installed (pip install 'kvtui[export]')"
    except OSError as exc:  # cairocffi could not load libcairo
        return f"cairosvg cannot load the cairo library ({str(exc).splitlines()[0]}); install libcairo2"
    return None


def delays_cs(fps: float, k: int) -> int:
    """Display time of frame ``k`` in GIF centiseconds: the rounding of frame ``k``'s start and end times,
    so the total never drifts from ``frames / fps`` by more than 5 ms."""
    return max(2, round(100 * (k + 1) / fps) - round(100 * k / fps))


class GifWriter:
    """Writes an endlessly looping GIF to ``fp`` (binary), one :meth:`add` per frame; :meth:`close` writes
    the trailer (the caller owns the file). ``width_px``: the picture's width (height follows the screen's
    aspect); ``title``: the window title of the screenshots."""

    def __init__(self, fp: BinaryIO, fps: float, width_px: int = DEFAULT_WIDTH_PX, title: str = "kvtui"):
        self.fp, self.fps, self.width_px, self.title = fp, fps, int(width_px), title
        self._prev = None
        self.size: tuple[int, int] | None = None
        self.frames = 0

    def rasterise(self, frame: ScreenFrame):
        """The frame's SVG screenshot as an RGB ``PIL.Image`` ``width_px`` wide."""
        import cairosvg
        from PIL import Image

        svg = frame.svg(self.title, unique_id="kvtui").replace(SVG_FONT, RASTER_FONT)
        png = cairosvg.svg2png(bytestring=svg.encode(), output_width=self.width_px)
        rgba = Image.open(io.BytesIO(png)).convert("RGBA")
        im = Image.new("RGB", rgba.size, BACKGROUND)
        im.paste(rgba, mask=rgba.getchannel("A"))
        return im

    def add(self, frame: ScreenFrame) -> None:
        """Rasterise and append one frame (shown for ``1 / fps`` s, to the centisecond)."""
        from PIL import GifImagePlugin, Image, ImageChops

        im = self.rasterise(frame)
        if self._prev is None:
            self.size = im.size
            self.fp.write(b"GIF89a" + struct.pack("<HHBBB", im.width, im.height, 0x70, 0, 0))  # no global palette
            self.fp.write(b"!\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", 0) + b"\x00")  # loop forever
            box = (0, 0, im.width, im.height)
        else:
            if im.size != self.size:
                raise ValueError(f"frame of {im.size} pixels in a GIF of {self.size}")
            box = ImageChops.difference(self._prev, im).getbbox() or (0, 0, 1, 1)  # unchanged: one pixel
        crop = im.crop(box)
        part = crop.quantize(COLORS - 1, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        params: dict[str, Any] = {}
        if self._prev is not None:  # pixels as they were: the transparent index (long runs, small LZW codes)
            r, g, b = ImageChops.difference(self._prev.crop(box), crop).split()
            unchanged = ImageChops.lighter(ImageChops.lighter(r, g), b).point([255] + [0] * 255, "1")
            clear = part.getextrema()[1] + 1  # < COLORS: one palette entry is left for it
            part.putpalette(part.getpalette()[:3 * clear] + [0, 0, 0])
            part.paste(clear, mask=unchanged)
            params["transparency"] = clear
        for chunk in GifImagePlugin.getdata(part, offset=box[:2], duration=delays_cs(self.fps, self.frames) * 10,
                                            disposal=1, include_color_table=True, **params):
            self.fp.write(chunk)
        self._prev = im
        self.frames += 1

    def close(self) -> None:
        self.fp.write(b";")
        self.fp.flush()
