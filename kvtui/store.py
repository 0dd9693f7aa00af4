"""A guarded Mooncake Store client for one process, plus the store's return-code names.

Mooncake store calls return negative codes instead of raising (``mooncake-store/include/types.h``); this
module names them and wraps ``mooncake.store.MooncakeDistributedStore`` so that:

* the native library is only imported here, after ``MC_LOG_LEVEL`` is set (it is read at import time);
* a closed client is never called again (calling most methods after ``close()`` segfaults, exit 139);
* ``setup()`` is preceded by a TCP probe of the master so a wrong address fails in seconds, not ~90 s;
* ``close()`` runs exactly once.

Facts behind each rule: ``shared/reference/mooncake-facts.md`` §0, §1, §6, §7.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Sequence

# ErrorCode values of upstream mooncake-store/include/types.h (names as in the enum).
ERROR_CODES: dict[int, str] = {
    0: "OK", -1: "INTERNAL_ERROR", -10: "BUFFER_OVERFLOW",
    -100: "SHARD_INDEX_OUT_OF_RANGE", -101: "SEGMENT_NOT_FOUND", -102: "SEGMENT_ALREADY_EXISTS",
    -103: "CLIENT_NOT_FOUND", -200: "NO_AVAILABLE_HANDLE", -300: "INVALID_VERSION", -400: "INVALID_KEY",
    -500: "WRITE_FAIL", -600: "INVALID_PARAMS", -601: "ILLEGAL_CLIENT",
    -700: "INVALID_WRITE", -701: "INVALID_READ", -702: "INVALID_REPLICA", -703: "REPLICA_IS_NOT_READY",
    -704: "OBJECT_NOT_FOUND", -705: "OBJECT_ALREADY_EXISTS", -706: "OBJECT_HAS_LEASE", -707: "LEASE_EXPIRED",
    -708: "OBJECT_HAS_REPLICATION_TASK", -709: "OBJECT_NO_REPLICATION_TASK", -710: "REPLICA_NOT_FOUND",
    -711: "REPLICA_ALREADY_EXISTS", -712: "REPLICA_IS_GONE", -713: "REPLICA_NOT_IN_LOCAL_MEMORY",
    -714: "OBJECT_REPLICA_BUSY", -800: "TRANSFER_FAIL", -801: "CHECKSUM_MISMATCH",
    -900: "RPC_FAIL", -901: "RPC_TIMEOUT",
    -1000: "ETCD_OPERATION_ERROR", -1001: "ETCD_KEY_NOT_EXIST", -1002: "ETCD_TRANSACTION_FAIL",
    -1003: "ETCD_CTX_CANCELLED", -1004: "OPLOG_ENTRY_NOT_FOUND", -1010: "UNAVAILABLE_IN_CURRENT_STATUS",
    -1011: "UNAVAILABLE_IN_CURRENT_MODE", -1012: "NOT_SUPPORTED",
    -1300: "UNABLE_OFFLOAD", -1301: "UNABLE_OFFLOADING",
    -1700: "TENANT_QUOTA_EXCEEDED", -1701: "TENANT_NOT_REGISTERED", -1702: "TENANT_NOT_EMPTY",
}

# Codes kvtui makes itself for outcomes the store reports as success or as a size.
MASTER_DOWN_CODES = (-900, -901)  # RPC_FAIL, RPC_TIMEOUT: the master does not answer
NO_SPACE = -200  # NO_AVAILABLE_HANDLE: the store is full and nothing can be evicted (all leased)
BACKOFF_FIRST_S, BACKOFF_MAX_S = 0.05, 1.0  # wait after NO_SPACE, doubling up to the maximum
SIZE_MISMATCH = -10001  # a read returned a size other than the layout's page_bytes
CONTENT_MISMATCH = -10002  # bytes loaded differ from what the page key says was published
CLIENT_CLOSED = -10003  # the call was refused because this client is closed
ERROR_CODES.update({SIZE_MISMATCH: "SIZE_MISMATCH", CONTENT_MISMATCH: "CONTENT_MISMATCH",
                    CLIENT_CLOSED: "CLIENT_CLOSED"})


def code_name(code: int) -> str:
    """Name of a Mooncake (or kvtui) return code, e.g. ``-704`` → ``OBJECT_NOT_FOUND``; unknown → ``E<code>``."""
    return ERROR_CODES.get(int(code), f"E{int(code)}")


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
