"""How the messages of :mod:`kvtui.engine.protocol` travel on the worker pipes: bytes per message.

The four messages every request sends (:class:`~kvtui.engine.protocol.Submit`,
:class:`~kvtui.engine.protocol.PublishRest`, :class:`~kvtui.engine.protocol.Ack`,
:class:`~kvtui.engine.protocol.RequestDone`) go as ``b"W"`` and the pickle of one flat tuple of their
values (the connector's results as lists of their fields in declaration order, their ``codes`` a dict or
None, a stop state as its int); every other message is pickled as it is (its bytes begin with ``0x80``, the
pickle protocol's mark, so the two cannot be confused). Why: pickling the frozen dataclasses themselves
through ``multiprocessing``'s ``Connection.send`` costs a copy of the pickler's dispatch table per message
and ``dataclasses.fields`` per dataclass, several times the cost of a flat tuple; with small pages these
four messages are on the request chain's critical path, so their cost limits the requests a second. A
receiver gets the same dataclasses back.

:class:`Wire` wraps a ``multiprocessing`` connection so that ``send``/``recv`` use these bytes; a message it
reads from a plain ``Connection.send`` (a pickle) is understood too, and ``Connection.recv`` reads any
message but those four.
"""

from __future__ import annotations

import dataclasses
import operator
import pickle
import select
from collections import Counter

from kvtui.core.pages import PageState
from kvtui.engine.connector import PublishResult, ReloadResult
from kvtui.engine.protocol import Ack, PublishRest, RequestDone, Submit

MARK = b"W"
"""The first byte of a per-request message's bytes (a pickle's is 0x80)."""

_RELOAD_FIELDS = tuple(f.name for f in dataclasses.fields(ReloadResult))
_PUBLISH_FIELDS = tuple(f.name for f in dataclasses.fields(PublishResult))
_reload_values = operator.attrgetter(*_RELOAD_FIELDS)
_publish_values = operator.attrgetter(*_PUBLISH_FIELDS)
_R_CODES, _R_STOP = _RELOAD_FIELDS.index("codes"), _RELOAD_FIELDS.index("stop_state")
_P_CODES = _PUBLISH_FIELDS.index("codes")
_SUBMIT, _PUBLISH_REST, _ACK, _DONE = range(4)


def _reload_tuple(r: ReloadResult) -> list:
    v = list(_reload_values(r))
    v[_R_CODES] = dict(v[_R_CODES]) or None
    if v[_R_STOP] is not None:
        v[_R_STOP] = int(v[_R_STOP])
    return v


def _reload(v: list) -> ReloadResult:
    if v[_R_STOP] is not None:
        v[_R_STOP] = PageState(v[_R_STOP])
    v[_R_CODES] = Counter(v[_R_CODES] or ())
    return ReloadResult(*v)


def _publish_tuple(p: PublishResult | None) -> list | None:
    if p is None:
        return None
    v = list(_publish_values(p))
    v[_P_CODES] = dict(v[_P_CODES]) or None
    return v


def _publish(v: list | None) -> PublishResult | None:
    if v is None:
        return None
    v[_P_CODES] = Counter(v[_P_CODES] or ())
    return PublishResult(*v)


def _flat(msg) -> tuple | None:
    kind = type(msg)
    if kind is Submit:
        return _SUBMIT, msg.seq, msg.keys, msg.prefill
    if kind is PublishRest:
        return (_PUBLISH_REST, msg.seq, msg.rest_keys, msg.known, _reload_tuple(msg.reload), msg.t_start,
                msg.needs_ack, msg.segment)
    if kind is Ack:
        return _ACK, msg.store_full
    if kind is RequestDone:
        return _DONE, msg.seq, _reload_tuple(msg.reload), _publish_tuple(msg.publish), msg.t_start, msg.t_end
    return None


def encode(msg) -> bytes:
    """The bytes of one message (see the module docstring)."""
    flat = _flat(msg)
    if flat is not None:
        return MARK + pickle.dumps(flat, protocol=pickle.HIGHEST_PROTOCOL)
    return pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)


def decode(data: bytes):
    """The message :func:`encode` wrote (or ``Connection.send`` pickled). Raises what ``pickle.loads``
    raises on other bytes."""
    if data[:1] != MARK:
        return pickle.loads(data)
    v = pickle.loads(memoryview(data)[1:])
    kind = v[0]
    if kind == _SUBMIT:
        return Submit(v[1], v[2], v[3])
    if kind == _PUBLISH_REST:
        return PublishRest(v[1], v[2], v[3], _reload(v[4]), v[5], v[6], v[7])
    if kind == _ACK:
        return Ack(v[1])
    if kind == _DONE:
        return RequestDone(v[1], _reload(v[2]), _publish(v[3]), v[4], v[5])
    raise ValueError(f"unknown wire message kind {kind!r}")


class Wire:
    """A ``multiprocessing`` connection (a pipe end, or a TCP one of a remote worker) carrying protocol
    messages as :func:`encode` writes them. ``send``/``recv`` raise what the connection raises (``EOFError``
    once the other end is closed, ``OSError``); ``fileno`` makes it selectable."""

    __slots__ = ("conn",)

    def __init__(self, conn):
        self.conn = conn

    def send(self, msg) -> None:
        self.conn.send_bytes(encode(msg))

    def send_atomic(self, msg) -> bool:
        """Send ``msg`` when it fits one atomic pipe write (its bytes and the 4-byte length ``Connection``
        puts before them within ``select.PIPE_BUF``: two processes may write the pipe, and a longer write
        could interleave with the other's); False, nothing sent, when it does not."""
        data = encode(msg)
        if len(data) + 4 > select.PIPE_BUF:
            return False
        self.conn.send_bytes(data)
        return True

    def recv(self):
        return decode(self.conn.recv_bytes())

    def fileno(self) -> int:
        return self.conn.fileno()

    def close(self) -> None:
        self.conn.close()
