"""How a command starts its engine and hands it to its own teardown: start-up failures as one line, and a Ctrl-C
or SIGTERM between the start and that teardown stopping the engine all the same."""

from __future__ import annotations

from contextlib import contextmanager

from kvtui.core.errors import KvtuiError


def start_engine(options, endpoints):
    """Start an :class:`~kvtui.engine.engine.Engine`, turning start-up failures into one-line errors."""
    from kvtui.engine.cluster import ClusterError
    from kvtui.engine.engine import Engine
    from kvtui.engine.workers import WorkerError

    engine = Engine(options, endpoints)
    try:
        engine.start()
    except (ClusterError, WorkerError, ValueError) as exc:
        raise KvtuiError(str(exc).splitlines()[0] if isinstance(exc, WorkerError) else str(exc)) from None
    return engine


@contextmanager
def engine_guard(engine, listener=None):
    """Between a started engine and the command's own teardown (building its session, its outputs): a Ctrl-C,
    a SIGTERM or an error there stops ``engine`` (its workers and embedded cluster, whose log folder is then
    removed or named) and closes ``listener`` before it is re-raised, so nothing is left to the parent-death
    signal."""
    try:
        yield
    except BaseException:
        engine.stop()
        if listener is not None:
            listener.close()
        raise
