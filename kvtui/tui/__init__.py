"""The live Textual monitor (``kvtui watch``): renders metric frames, sends controls through a controller."""

from kvtui.tui.app import Controller, FrameSource, KvtuiApp, run_app

__all__ = ["Controller", "FrameSource", "KvtuiApp", "run_app"]
