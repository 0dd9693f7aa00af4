"""A live page-layout switch is all-or-nothing: Engine.set_layout with fake worker handles."""

from __future__ import annotations

import pytest

from kvtui.core.layout import PageLayout
from kvtui.engine.engine import Engine, EngineOptions
from kvtui.engine.protocol import SetLayout
from kvtui.engine.workers import WorkerError
from kvtui.mooncake.client import ClusterEndpoints

OLD, NEW = PageLayout(1, 1, 4, 4, 2), PageLayout(1, 1, 4, 8, 2)


class FakeHandle:
    """A worker handle whose current layout follows the SetLayout commands it accepts."""

    def __init__(self, role, layout, refuse=0):
        self.role, self.layout, self.refuse, self.calls = role, layout, refuse, []
        self.name = role

    def call(self, msg, timeout_s=None):
        assert isinstance(msg, SetLayout)
        self.calls.append(msg.layout)
        if self.refuse:
            self.refuse -= 1
            raise WorkerError(f"{self.role}: cannot change the page layout")
        self.layout = msg.layout
        return msg.layout.page_bytes


def _engine(prefill_refuses=0, decode_refuses=0):
    e = Engine(EngineOptions(layout=OLD, model="m"), ClusterEndpoints("127.0.0.1:1", "http://127.0.0.1:1/metadata",
                                                                      None))
    e.decode, e.prefill = FakeHandle("decode", OLD, decode_refuses), FakeHandle("prefill", OLD, prefill_refuses)
    return e


def test_both_workers_and_the_keyer_switch_together():
    e = _engine()
    e.set_layout(NEW)
    assert e.decode.layout == e.prefill.layout == e.options.layout == NEW
    assert e.keyer.page_tokens == 8


def test_a_refusing_prefill_switches_decode_back_and_keeps_the_engine_layout():
    e = _engine(prefill_refuses=1)
    with pytest.raises(WorkerError, match="prefill"):
        e.set_layout(NEW)
    assert e.decode.calls == [NEW, OLD] and e.decode.layout == OLD  # rolled back
    assert e.prefill.layout == OLD and e.options.layout == OLD and e.keyer.page_tokens == 4


def test_a_refusing_decode_leaves_prefill_untouched():
    e = _engine(decode_refuses=1)
    with pytest.raises(WorkerError, match="decode"):
        e.set_layout(NEW)
    assert e.prefill.calls == [] and e.options.layout == OLD and e.keyer.page_tokens == 4


def test_a_failed_rollback_says_so():
    e = _engine(prefill_refuses=1, decode_refuses=0)
    e.decode.refuse = 0
    orig = e.decode.call

    def once_then_refuse(msg, timeout_s=None):
        if e.decode.calls:  # the switch back
            e.decode.refuse = 1
        return orig(msg, timeout_s)

    e.decode.call = once_then_refuse
    with pytest.raises(WorkerError, match="did not switch back"):
        e.set_layout(NEW)
    assert e.options.layout == OLD


def test_no_switch_while_requests_are_under_way():
    e = _engine()
    e._pending[0] = object()
    with pytest.raises(RuntimeError):
        e.set_layout(NEW)
    assert e.decode.calls == [] and e.prefill.calls == []
