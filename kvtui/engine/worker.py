"""Prefill and decode worker processes: each owns one store client and one connector.

The parent talks to a worker over a ``multiprocessing`` pipe with plain tuples and gets plain dicts back
(no Mooncake object ever crosses a process boundary). Commands:

``("reload", tokens, cacheable_tokens)`` → reload dict (``ReloadResult`` fields, codes as ``{code: n}``,
and ``rest_keys``: the keys of the pages after the reloaded run)
``("publish", tokens, cacheable_tokens, start_page)`` → publish dict (``PublishResult`` fields)
``("publish_keys", keys)`` → publish dict for exactly these page keys (the rest of a reload: ``rest_keys``)
``("bench_reload", tokens, iterations)`` / ``("bench_raw_get", keys, iterations)`` → per-iteration timings
``("remove_all",)`` → count removed; ``("stop",)`` → closes the client and exits.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from dataclasses import asdict, dataclass



@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs, as plain data.

    ``role``: prefill | decode | mixed; ``endpoints``: ``ClusterEndpoints.as_dict()``; ``layout``:
    ``PageLayout.as_dict()``; ``segment_bytes``: segment this worker contributes (0 = none);
    ``read_streams``: concurrent reads per reload; ``max_batch_bytes``: bytes per store batch.
    """

    role: str
    endpoints: dict
    layout: dict
    model: str = "demo-model"
    scheme: str = "ollama"
    namespace: str | None = None
    segment_bytes: int = 0
    read_streams: int = 1
    max_batch_bytes: int = 256 << 20
    log_path: str | None = None


def _result_dict(res) -> dict:
    d = asdict(res)
    d["codes"] = {int(k): int(v) for k, v in res.codes.items()}
    if "stop_state" in d and d["stop_state"] is not None:
        d["stop_state"] = int(d["stop_state"])
    return d


def worker_main(conn, spec: WorkerSpec) -> None:
    """Process entry point: set up, answer ``("ready", info)`` or ``("error", message)``, then serve."""
    from kvtui.procs import parent_death_signal

    parent_death_signal(signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop (a Ctrl-C or a hang-up of
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the terminal reaches our process group too)
    stop = {"flag": False}

    def on_term(*_):
        stop["flag"] = True
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    if spec.log_path:
        from kvtui.store import redirect_native_stderr

        redirect_native_stderr(spec.log_path)
    client = connector = None
    try:
        from kvtui.connector import PagedKVConnector
        from kvtui.keys import PageKeyer
        from kvtui.layout import PageLayout
        from kvtui.store import StoreError, open_client

        layout = PageLayout(**spec.layout)
        try:
            client = open_client(spec.endpoints, segment_bytes=spec.segment_bytes)
        except StoreError as exc:
            conn.send(("error", str(exc)))
            return
        keyer = PageKeyer(spec.model, layout.page_tokens, spec.scheme, spec.namespace)
        connector = PagedKVConnector(client, layout, keyer, spec.role, read_streams=spec.read_streams,
                                     max_batch_bytes=spec.max_batch_bytes)
        conn.send(("ready", {"pid": os.getpid(), "role": spec.role}))
        _serve(conn, connector, client)
    except (EOFError, BrokenPipeError, KeyboardInterrupt, SystemExit):
        pass
    except Exception as exc:  # report, then exit: the parent shows it as one line
        try:
            conn.send(("error", f"{spec.role} worker: {type(exc).__name__}: {exc}"))
        except OSError:
            pass
        traceback.print_exc()
    finally:
        if connector is not None:
            connector.close()
        if client is not None:
            client.close()


def _serve(conn, connector, client) -> None:
    from kvtui.connector import RoleError

    while True:
        msg = conn.recv()
        cmd = msg[0]
        try:
            if cmd == "stop":
                conn.send(("ok", None))
                return
            if cmd == "reload":
                _, tokens, cacheable = msg
                res, rest = connector.reload_and_rest(tokens, cacheable)
                conn.send(("ok", {**_result_dict(res), "rest_keys": rest}))
            elif cmd == "publish":
                _, tokens, cacheable, start = msg
                conn.send(("ok", _result_dict(connector.store_computed_prefix(tokens, start, cacheable))))
            elif cmd == "publish_keys":
                _, keys = msg
                conn.send(("ok", _result_dict(connector.store_computed_prefix(None, 0, keys=keys))))
            elif cmd == "bench_reload":
                _, tokens, iterations = msg
                out = []
                for _ in range(iterations):
                    t0 = time.perf_counter()
                    res, _pages = connector.load_cached_prefix(tokens)
                    wall = (time.perf_counter() - t0) * 1e3
                    out.append({"wall_ms": wall, **_result_dict(res)})
                conn.send(("ok", out))
            elif cmd == "bench_raw_get":
                _, keys, iterations = msg
                pb = connector.page_bytes
                buf = connector.buffer(len(keys))
                ptrs = [buf[i].ctypes.data for i in range(len(keys))]
                out = []
                for _ in range(iterations):
                    t0 = time.perf_counter()
                    rcs = client.batch_get_into(keys, ptrs, [pb] * len(keys))
                    out.append({"wall_ms": (time.perf_counter() - t0) * 1e3, "ok": all(r == pb for r in rcs)})
                conn.send(("ok", out))
            elif cmd == "keys":
                _, tokens, cacheable = msg
                conn.send(("ok", connector.keys_for(tokens, cacheable)))
            elif cmd == "set_read_streams":
                _, n = msg
                connector.set_read_streams(n)
                conn.send(("ok", n))
            elif cmd == "remove_all":
                conn.send(("ok", client.remove_all(True)))
            else:
                conn.send(("error", f"unknown command {cmd!r}"))
        except RoleError as exc:
            conn.send(("error", str(exc)))

