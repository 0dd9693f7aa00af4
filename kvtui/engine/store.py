"""A guarded Mooncake Store client for one process.

Mooncake store calls return negative codes instead of raising (``mooncake-store/include/types.h``; names in
:mod:`kvtui.core.codes`). This module wraps ``mooncake.store.MooncakeDistributedStore`` so that:

* the native library is only imported here, after ``MC_LOG_LEVEL=ERROR`` is set: the client reads it once,
  when ``mooncake.store`` is imported, accepts only upper-case TRACE/INFO/WARNING/ERROR, and ignores the
  ``GLOG_*`` variables;
* a closed client is never called again: calling most methods of a closed ``MooncakeDistributedStore``
  segfaults the process (exit 139); only ``health_check()`` (1), ``get()`` and a second ``close()`` are safe;
* ``setup()`` is preceded by a TCP probe of the master, and ``MC_STORE_CLIENT_SETUP_RETRIES`` is set low:
  against a missing master ``setup()`` retries 20 times, about 4.4 s each, and returns -1 after ~90 s;
* ``close()`` runs exactly once, after the data calls in flight returned.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Sequence

from kvtui.core.codes import CLIENT_CLOSED


class StoreError(RuntimeError):
    """A store client could not be set up or used (message is one line, for the user)."""


@dataclass(frozen=True)
class ClientConfig:
    """How one process joins the cluster.

    ``master``: ``HOST:PORT`` of the master's RPC service. ``metadata_url``: the transfer-engine metadata
    server (``http://HOST:PORT/metadata``). ``segment_bytes``: memory this client contributes to the store
    (0 = none: its puts land in other clients' segments). ``local_buffer_bytes``: the client's staging
    buffer for ``put``/``get`` of Python bytes. ``protocol``: ``tcp`` or ``rdma``; ``device``: RDMA device.
    ``env``: extra ``MC_*`` variables (port ranges, bind address) set before the library is imported.
    """

    master: str
    metadata_url: str
    segment_bytes: int = 0
    local_buffer_bytes: int = 16 << 20
    protocol: str = "tcp"
    device: str = ""
    local_host: str = "127.0.0.1"
    env: tuple[tuple[str, str], ...] = ()
    native_log: str | None = None


def split_hostport(text: str) -> tuple[str, int]:
    """``'127.0.0.1:50051'`` → ``('127.0.0.1', 50051)``; ``ValueError`` when malformed."""
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not (0 < int(port) < 65536):
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def probe_tcp(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True if a TCP connection to ``host:port`` succeeds within ``timeout_s`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def redirect_native_stderr(log_path: str) -> None:
    """Send file descriptor 2 (where glog writes) to ``log_path`` while Python's ``sys.stderr`` stays on
    the terminal. Call in worker processes before importing the native library."""
    py_err = os.dup(2)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = os.fdopen(py_err, "w", buffering=1)


class StoreClient:
    """One ``MooncakeDistributedStore`` with a closed flag. Thread-safe for concurrent data calls.

    Data methods take lists of keys and return per-item codes exactly as Mooncake does (``batch_get_into``:
    bytes read or a negative code; ``batch_put_from``: 0 or a negative code; ``batch_is_exist``: 1, 0 or a
    negative code). After :meth:`close` they return :data:`CLIENT_CLOSED` for every item instead of
    touching the native object.
    """

    def __init__(self, config: ClientConfig):
        self.config = config
        self._store = None
        self._closed = False
        self._cond = threading.Condition()
        self._inflight = 0  # data calls running now; close() waits for them (a call after close segfaults)

    def setup(self, setup_retries: int = 2) -> None:
        """Connect to the master; ``StoreError`` (one line) if it is unreachable or ``setup()`` fails."""
        cfg = self.config
        try:
            host, port = split_hostport(cfg.master)
        except ValueError as exc:
            raise StoreError(f"--master: {exc}") from None
        if not probe_tcp(host, port, timeout_s=2.0):
            raise StoreError(f"no Mooncake master answers at {cfg.master} (TCP connect failed)")
        os.environ.setdefault("MC_LOG_LEVEL", "ERROR")
        os.environ["MC_STORE_CLIENT_SETUP_RETRIES"] = str(setup_retries)
        for k, v in cfg.env:
            os.environ[k] = v
        try:
            from mooncake.store import MooncakeDistributedStore
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise StoreError(f"cannot import mooncake.store ({exc}); run `kvtui doctor`") from None
        store = MooncakeDistributedStore()
        rc = store.setup(cfg.local_host, cfg.metadata_url, int(cfg.segment_bytes), int(cfg.local_buffer_bytes),
                         cfg.protocol, cfg.device, cfg.master)
        if rc != 0:  # older wheels return +1, newer -1: only 0 is success
            raise StoreError(f"Mooncake setup() failed with code {rc} (master {cfg.master}, metadata {cfg.metadata_url})")
        self._store = store

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or setup never succeeded)."""
        return self._closed or self._store is None

    def _enter(self):
        with self._cond:
            if self.closed:
                return None
            self._inflight += 1
            return self._store

    def _leave(self) -> None:
        with self._cond:
            self._inflight -= 1
            self._cond.notify_all()

    def _call(self, name: str, n: int, *args):
        store = self._enter()
        if store is None:
            return [CLIENT_CLOSED] * n
        try:
            return list(getattr(store, name)(*args))
        finally:
            self._leave()

    def batch_is_exist(self, keys: Sequence[str]) -> list[int]:
        """1 present, 0 absent, negative code on error, per key. Grants a read lease on present keys."""
        return self._call("batch_is_exist", len(keys), list(keys))

    def batch_get_into(self, keys: Sequence[str], ptrs: Sequence[int], sizes: Sequence[int]) -> list[int]:
        """Read each key into ``ptrs[i]`` (capacity ``sizes[i]`` bytes): bytes read, or a negative code."""
        return self._call("batch_get_into", len(keys), list(keys), list(ptrs), list(sizes))

    def batch_put_from(self, keys: Sequence[str], ptrs: Sequence[int], sizes: Sequence[int]) -> list[int]:
        """Put-if-absent of each buffer: 0 (stored, or already present: not overwritten) or a negative code."""
        return self._call("batch_put_from", len(keys), list(keys), list(ptrs), list(sizes))

    def _scalar(self, name: str, closed_value: int, *args) -> int:
        store = self._enter()
        if store is None:
            return closed_value
        try:
            return int(getattr(store, name)(*args))
        finally:
            self._leave()

    def remove(self, key: str, force: bool = False) -> int:
        """Remove one key: 0, -704 missing, -706 leased (unless ``force``)."""
        return self._scalar("remove", CLIENT_CLOSED, key, force)

    def remove_all(self, force: bool = True) -> int:
        """Remove every object of every client (global!); returns the count removed or a negative code."""
        return self._scalar("remove_all", CLIENT_CLOSED, force)

    def health(self) -> int:
        """``health_check()``: 0 healthy, 1 not set up/closed, 2 master unreachable (segment owners only)."""
        return self._scalar("health_check", 1)

    def close(self) -> None:
        """Close once, after in-flight calls finish; later calls do nothing. Segment owners take ~2 s."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            while self._inflight:
                self._cond.wait(timeout=1.0)
            store, self._store = self._store, None
        if store is not None:
            store.close()


def open_client(endpoints: dict, segment_bytes: int = 0, local_buffer_bytes: int = 16 << 20) -> StoreClient:
    """Set up a :class:`StoreClient` from ``ClusterEndpoints.as_dict()``; ``StoreError`` on failure."""
    cfg = ClientConfig(
        master=endpoints["master"], metadata_url=endpoints["metadata_url"], segment_bytes=int(segment_bytes),
        local_buffer_bytes=int(local_buffer_bytes), protocol=endpoints.get("protocol", "tcp"),
        device=endpoints.get("device", ""), env=tuple(tuple(kv) for kv in endpoints.get("client_env", ())),
    )
    client = StoreClient(cfg)
    client.setup()
    return client
