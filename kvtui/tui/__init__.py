"""The live Textual monitor (``kvtui watch``): renders metric frames, sends controls through a controller.

The names below load Textual on first use (PEP 562), so light modules of this package (e.g.
:mod:`kvtui.tui.fmt`) do not.
"""

__all__ = ["Controller", "FrameSource", "KvtuiApp", "run_app"]


def __getattr__(name: str):
    if name in __all__:
        from kvtui.tui import app

        return getattr(app, name)
    raise AttributeError(f"module 'kvtui.tui' has no attribute {name!r}")
