"""The bench's baselines for trace replay: bare loops issuing the same store calls as the engine, without
kvtui's engine (no parent between requests, no page verification, zero-filled pages).

Per request: page keys (the same hash chain), ``batch_is_exist`` of the pages, ``batch_get_into`` of the
leading present run, ``batch_put_from`` of the absent pages after it. Both sides of the bench build the
trace's requests (token ids) before their clock starts. Used only by ``kvtui bench --trace``, which also
counts the CPU seconds the loop's process spent in the timed loop (``time.process_time``).

Two forms:

* the **bare loop**: one process makes every call;
* the **two-process loop**: the price of disaggregation alone. A reader process (decode's part) probes and
  reloads; when pages are left to publish it hands their keys to a writer process (prefill's part) over a
  pipe (one ``send_bytes`` of the keys joined by newlines), which puts them and answers one byte, and the
  reader waits for that answer before its next request, as the engine's decode waits for prefill's ``Ack``
  at concurrency 1. Both processes run their calls on the CPU the engine's workers share
  (:func:`kvtui.core.sched.pin_calling_thread`). Its difference from the bare loop is the hand-off between
  two processes and nothing else; its difference from the engine is kvtui's own work.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any, NoReturn, cast

from kvtui.runtime.procs import exit_now, start_shielded

READY = b"ready"
FAILED = b"E"  # the writer's answer when a put raised: FAILED + the error's one line


class LoopError(RuntimeError):
    """A loop's process failed (its store call raised) or died: one line naming the process and why."""


def _one_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


Replayed = tuple[int, float, int, float, float]
"""What a loop replayed: ``(requests, seconds, page hits, CPU seconds of the loop's (the reader's) process during
the loop, CPU seconds of the writer from its start-up's end to the loop's end (0 for the bare loop))``."""


def _check(codes: Sequence[int], call: str) -> None:
    """``LoopError`` when a store call's per-key answers hold one of ``BROKEN_STORE_CODES``: the master (or, for these
    dummy clients, the store node) stopped answering, and counting those pages as misses would make the loop
    replay other work than the engine, at another rate."""
    from kvtui.core.codes import BROKEN_STORE_CODES, code_name

    down = [c for c in codes if c in BROKEN_STORE_CODES]
    if down:
        raise LoopError(f"{call} answered {code_name(down[0])} for {len(down)} of {len(codes)} pages: the master "
                        "or the store node stopped answering")


def _quiet(endpoints: dict[str, Any], log_name: str) -> None:
    from kvtui.runtime.procs import parent_death_signal

    parent_death_signal()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the whole process group: the parent stops
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # us (bare_replay's terminate) and reports it in one line
    if endpoints.get("log_dir"):
        from kvtui.mooncake.client import redirect_native_stderr

        redirect_native_stderr(f"{endpoints['log_dir']}/{log_name}.log")


def _bare_main(conn: Connection, endpoints: dict[str, Any], layout: Mapping[str, int], model: str, trace: str,
               block_tokens: int, writer: Connection | None = None) -> None:
    """The loop's process (the two-process loop's reader): sends the parent ``("ok", figures)`` at the end, or
    ``("error", line)`` when a store call raised or the writer failed; a parent or writer gone ends it quietly
    (exit code 1, no traceback)."""
    _quiet(endpoints, "bare-loop" if writer is None else "bare-reader")
    code = 0
    try:
        conn.send(("ok", _replay(endpoints, layout, model, trace, block_tokens, writer)))
    except (EOFError, BrokenPipeError, ConnectionResetError):  # the parent or the writer is gone
        code = 1
    except Exception as exc:  # (StoreError, LoopError: one line for the parent to print)
        try:
            conn.send(("error", _one_line(exc)))
        except OSError:
            pass
        code = 1
    _leave(endpoints, code)


def _leave(endpoints: dict[str, Any], code: int) -> NoReturn:
    """End a loop's process with ``code``. With an HA cluster's client it leaves with ``os._exit``: that
    client is never closed (``kvtui.mooncake.client``), and the interpreter's exit would run its destructor,
    which waits ~30 s or more for a change of the master view."""
    from kvtui.mooncake.client import is_etcd

    if is_etcd(endpoints.get("master", "")):
        exit_now(code)
    raise SystemExit(code)


def _replay(endpoints: dict[str, Any], layout: Mapping[str, int], model: str, trace: str, block_tokens: int,
            writer: Connection | None) -> Replayed:
    from kvtui.core.layout import PageLayout
    from kvtui.core.sched import pin_calling_thread
    from kvtui.engine.keys import PageKeyer
    from kvtui.mooncake.client import open_client
    from workload import TraceWorkload, read_trace

    lay = PageLayout(**layout)
    rows, _ = read_trace(trace, block_tokens=block_tokens)
    requests = list(TraceWorkload(rows, block_tokens=block_tokens, speed=None))
    client = open_client(endpoints, dummy=True)  # as the engine's workers: dummy clients where it has a real client
    keyer = PageKeyer(model, lay.page_tokens)
    pb = lay.page_bytes
    buf = client.new_buffer(pb * 512)
    hits = 0
    if writer is not None:
        pin_calling_thread(True)  # as the engine's two workers at concurrency 1
        if (answer := writer.recv_bytes()) != READY:
            raise LoopError(f"the two-process loop's writer did not start: {answer[1:].decode()}")
    try:
        t0, cpu0 = time.perf_counter(), time.process_time()
        for req in requests:
            keys = keyer.keys(req.tokens[: req.cacheable_tokens])
            if len(keys) * pb > buf.size:
                buf = client.new_buffer(len(keys) * pb)
            present = client.batch_is_exist(keys)
            _check(present, "batch_is_exist")
            run = next((i for i, p in enumerate(present) if p != 1), len(keys))
            if run:
                rcs = client.batch_get_into(keys[:run], [buf.ctypes.data + i * pb for i in range(run)], [pb] * run)
                _check(rcs, "batch_get_into")
                run = next((i for i, r in enumerate(rcs) if r != pb), run)
            hits += run
            absent = [i for i in range(run, len(keys)) if present[i] != 1]
            if absent and writer is not None:
                writer.send_bytes("\n".join(keys[i] for i in absent).encode())
                if (answer := writer.recv_bytes()).startswith(FAILED):
                    raise LoopError(f"the two-process loop's writer failed: {answer[1:].decode()}")
            elif absent:
                _check(client.batch_put_from([keys[i] for i in absent], [buf.ctypes.data + i * pb for i in absent],
                                             [pb] * len(absent)), "batch_put_from")
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        writer_cpu = 0.0
        if writer is not None:  # the end: the writer answers with its CPU seconds since it was ready
            writer.send_bytes(b"")
            writer_cpu = float(writer.recv_bytes())
        return len(requests), seconds, hits, cpu, writer_cpu
    finally:
        client.close()


def _writer_main(reader: Connection, endpoints: dict[str, Any], layout: Mapping[str, int]) -> None:
    """The two-process loop's writer: puts the keys each message names (zero-filled pages), answers one byte;
    an empty message ends it, answered with the CPU seconds this process spent since it was ready."""
    from kvtui.core.layout import PageLayout
    from kvtui.core.sched import pin_calling_thread
    from kvtui.mooncake.client import open_client

    _quiet(endpoints, "bare-writer")
    pb = PageLayout(**layout).page_bytes
    try:
        client = open_client(endpoints, dummy=True)
    except Exception as exc:
        _answer(reader, FAILED + _one_line(exc).encode())
        _leave(endpoints, 1)
    buf = client.new_buffer(pb * 512)
    pin_calling_thread(True)
    reader.send_bytes(READY)
    cpu0 = time.process_time()
    code = 0
    try:
        while msg := reader.recv_bytes():
            keys = msg.decode().split("\n")
            if len(keys) * pb > buf.size:
                buf = client.new_buffer(len(keys) * pb)
            _check(client.batch_put_from(keys, [buf.ctypes.data + i * pb for i in range(len(keys))], [pb] * len(keys)),
                   "batch_put_from")
            reader.send_bytes(b"k")
        reader.send_bytes(repr(time.process_time() - cpu0).encode())
    except (EOFError, BrokenPipeError, ConnectionResetError):  # the reader is gone: end quietly
        code = 1
    except Exception as exc:  # a put raised: the reader says it in one line
        _answer(reader, FAILED + _one_line(exc).encode())
        code = 1
    finally:
        client.close()
    _leave(endpoints, code)


def _answer(reader: Connection, msg: bytes) -> None:
    try:
        reader.send_bytes(msg)
    except OSError:
        pass


def bare_replay(endpoints: dict[str, Any], layout: Mapping[str, int], model: str, trace: str,
                block_tokens: int = 512, two_process: bool = False) -> Replayed:
    """Replay ``trace`` with the bare loop (or, ``two_process``, the two-process loop) in fresh processes: what it
    :data:`Replayed` (``endpoints``: ``ClusterEndpoints.as_dict()``, ``layout``: ``PageLayout.as_dict()``)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    procs = []
    writer_end = reader_end = None
    if two_process:
        writer_end, reader_end = ctx.Pipe()
        procs.append(ctx.Process(target=_writer_main, args=(reader_end, endpoints, layout), daemon=True))
    procs.insert(0, ctx.Process(target=_bare_main, args=(child, endpoints, layout, model, trace, block_tokens,
                                                         writer_end), daemon=True))
    for proc in procs:
        start_shielded(proc)  # a Ctrl-C while it starts (before _quiet ignores it): no traceback from it
    for end in (child, writer_end, reader_end):
        if end is not None:
            end.close()  # (the children hold theirs: a writer whose reader is gone sees the pipe's end)
    answered = False
    try:
        try:
            status, out = parent.recv()
        except EOFError:  # the loop's process died without a word (killed): name it, with its exit code
            for proc in procs:
                proc.join(1)
            names = ("process",) if len(procs) == 1 else ("reader", "writer")
            codes = {name: proc.exitcode for name, proc in zip(names, procs)}
            killed = {n: c for n, c in codes.items() if c not in (0, 1)} or {n: c for n, c in codes.items() if c}
            loop = "two-process" if two_process else "bare"  # (exit code 1: it saw the other go)
            if len(killed) == 1:
                (name, code), = killed.items()
                raise LoopError(f"the {loop} loop's {name} died (exit code {code})") from None
            raise LoopError(f"the {loop} loop's " + " and ".join(f"{n} (exit code {c})" for n, c in killed.items())
                            + " died") from None
        answered = True
        if status != "ok":
            raise LoopError(f"the {'two-process' if two_process else 'bare'} loop stopped: {out}")
        return cast("Replayed", out)  # (what _replay returned in the loop's process)
    finally:  # the loop answered: its processes are ending; a Ctrl-C (or a failure) here: stop them now
        for proc in procs:
            proc.join(10 if answered else 0)
            if proc.is_alive():
                proc.terminate()
                proc.join(5)
