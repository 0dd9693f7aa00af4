"""The worker pipes' bytes (kvtui.engine.wire): every message comes back equal, the per-request ones as
flat tuples behind their mark, the others pickled as they are."""

import multiprocessing as mp
from collections import Counter

import numpy as np
import pytest

from kvtui.core.layout import PRESETS
from kvtui.core.pages import PageState
from kvtui.engine.connector import PublishResult, ReloadResult
from kvtui.engine.protocol import (
    Ack,
    Begin,
    Failed,
    Ok,
    PublishRest,
    Ready,
    RequestDone,
    RequestDropped,
    RequestFailed,
    SetLayout,
    Submit,
)
from kvtui.engine.result_pipes import ResultPipes
from kvtui.engine.wire import MARK, Wire, decode, encode

KEYS = [f"mc/ollama/m/{i:032x}" for i in range(5)]


def _reload(**kw) -> ReloadResult:
    base = dict(pages_total=5, pages_probed=5, probed_present=3, pages_hit=2, bytes_loaded=2048, verified=2,
                mismatches=1, stop_state=PageState.MISMATCH, stop_code=-2001, codes=Counter({-2001: 1, -704: 2}),
                probe_ms=0.25, read_ms=0.5, verify_ms=0.01, rest_probe=[1, 0, -900], bytes_local=1024)
    return ReloadResult(**{**base, **kw})


def _publish(**kw) -> PublishResult:
    base = dict(start_page=0, pages_total=3, stored=1, already_present=1, failed=1, found_at_put=1,
                bytes_written=1024, states=[int(PageState.PUBLISHED), int(PageState.PRESENT), int(PageState.FAILED)],
                codes=Counter({-200: 1}), probe_ms=0.1, compute_ms=0.02, put_ms=0.3)
    return PublishResult(**{**base, **kw})


PER_REQUEST = [
    Submit(3, KEYS, 1),
    Submit(0, [], 0),
    PublishRest(7, KEYS[2:], [1, 0, -900], _reload(), 12.5, True, "127.0.0.1:1234"),
    PublishRest(8, [], [], ReloadResult(pages_total=0), 1.0, False),  # nothing reloaded, no stop, no codes
    Ack(True),
    Ack(False),
    RequestDone(7, _reload(), _publish(), 12.5, 13.25),
    RequestDone(9, _reload(stop_state=None, stop_code=None, codes=Counter()), None, 1.0, 2.0),
]


@pytest.mark.parametrize("msg", PER_REQUEST, ids=lambda m: type(m).__name__)
def test_a_per_request_message_is_flat_and_comes_back_equal(msg):
    data = encode(msg)
    assert data[:1] == MARK
    back = decode(data)
    assert back == msg and type(back) is type(msg)
    reload = getattr(back, "reload", None)
    if reload is not None:  # the types inside come back too: a stop state is a PageState, codes a Counter
        assert isinstance(reload.codes, Counter)
        assert reload.stop_state is None or isinstance(reload.stop_state, PageState)
        assert reload.stop_state == msg.reload.stop_state


@pytest.mark.parametrize("msg", [Ready(12, "decode"), Ok([1, 2]), Failed("no"), Begin(2), RequestDropped(4),
                                 RequestFailed(None, "decode worker died"), SetLayout(PRESETS["tiny"])],
                         ids=lambda m: type(m).__name__)
def test_any_other_message_is_pickled(msg):
    data = encode(msg)
    assert data[:1] == b"\x80" and decode(data) == msg


def test_numpy_values_come_back_as_they_went():
    """(marshal would have written a numpy scalar as its raw bytes: the tuples are pickled instead)"""
    msg = RequestDone(np.int64(5), _reload(bytes_loaded=np.int64(2048), probe_ms=np.float64(0.5)), None, 1.0, 2.0)
    back = decode(encode(msg))
    assert back == msg and back.seq == 5 and back.reload.bytes_loaded == 2048 and back.reload.probe_ms == 0.5


def test_wire_and_plain_connections_understand_each_other():
    """A Wire reads what a plain Connection.send pickled; a plain Connection.recv reads what a Wire sent of
    every message but the per-request ones; the parent's ResultPipes read a Wire's RequestDone."""
    a, b = mp.Pipe()
    wa, wb = Wire(a), Wire(b)
    a.send(Ready(1, "prefill"))
    assert wb.recv() == Ready(1, "prefill")
    wa.send(Failed("x"))
    assert b.recv() == Failed("x")
    for msg in PER_REQUEST:
        wa.send(msg)
        assert b.poll(1) and wb.recv() == msg
    r, w = mp.Pipe(duplex=False)
    Wire(w).send(PER_REQUEST[-2])
    assert ResultPipes([r]).recv(None) == PER_REQUEST[-2]
    for c in (a, b, r, w):
        c.close()
