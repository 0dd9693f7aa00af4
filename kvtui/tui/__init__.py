"""The live Textual monitor (``kvtui watch``): renders metric frames, sends controls through a controller.

The names below load on first use (PEP 562): ``Controller`` and ``FrameSource`` (:mod:`kvtui.tui.protocols`)
without Textual, ``KvtuiApp`` and ``run_app`` (:mod:`kvtui.tui.app`) with it; light modules of this package
(e.g. :mod:`kvtui.tui.fmt`, :mod:`kvtui.tui.knob_state`) do not load Textual either.
"""

__all__ = ["Controller", "FrameSource", "KvtuiApp", "run_app"]


def __getattr__(name: str):
    if name in ("Controller", "FrameSource"):
        from kvtui.tui import protocols

        return getattr(protocols, name)
    if name in __all__:
        from kvtui.tui import app

        return getattr(app, name)
    raise AttributeError(f"module 'kvtui.tui' has no attribute {name!r}")
