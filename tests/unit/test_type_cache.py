"""kvtui's parent empties CPython's type attribute cache now and then (kvtui.engine.samplers): the cache keeps
the names it caches alive, and names built at run time would otherwise stay scattered over the heap."""

import sys
import threading

import kvtui.engine.samplers as samplers


def test_clearing_releases_a_name_built_at_run_time():
    class Page:
        pass

    name = "".join(["attr_", "x" * 10])  # built at run time, so not interned: only the cache can keep it
    before = sys.getrefcount(name)
    getattr(Page(), name, None)  # the failed lookup is cached with its name
    assert sys.getrefcount(name) == before + 1
    samplers.clear_type_cache()
    assert sys.getrefcount(name) == before


def test_the_panel_thread_clears_the_cache_every_interval(monkeypatch):
    class Idle:
        panel: dict = {}

        def sample(self):
            return {}

    cleared = threading.Event()
    monkeypatch.setattr(samplers, "TYPE_CACHE_CLEAR_S", 0.0)
    monkeypatch.setattr(samplers, "clear_type_cache", cleared.set)
    panels = samplers.PanelThread(Idle(), Idle(), interval_s=0.01).start()
    try:
        assert cleared.wait(10)
    finally:
        panels.stop()
