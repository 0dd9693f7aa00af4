"""A guarded Mooncake Store client for one process.

Mooncake store calls return negative codes instead of raising (``mooncake-store/include/types.h``; names in
:mod:`kvtui.core.codes`). This module wraps ``mooncake.store.MooncakeDistributedStore`` so that:

* the native library is only imported here, after ``MC_LOG_LEVEL=ERROR`` is set: the client reads it once,
  when ``mooncake.store`` is imported, accepts only upper-case TRACE/INFO/WARNING/ERROR, and ignores the
  ``GLOG_*`` variables;
* a closed client is never called again: calling most methods of a closed ``MooncakeDistributedStore``
  segfaults the process (exit 139); only ``health_check()`` (1), ``get()`` and a second ``close()`` are safe;
* ``setup()`` is preceded by a TCP probe of the master (of an HA cluster's etcd: ``etcd://…``, see
  :mod:`kvtui.mooncake.ha`), and ``MC_STORE_CLIENT_SETUP_RETRIES`` is set low: against a missing master
  ``setup()`` retries 20 times, about 4.4 s each, and returns -1 after ~90 s;
* ``close()`` runs exactly once, after the data calls in flight returned; a client of an HA cluster is never
  closed (its ``close()``, and its destructor, wait ~30 s for a change of the master view, holding the GIL):
  a process with one leaves with ``os._exit``, as kvtui's workers and store nodes do;
* a publish says who wrote each page (:meth:`StoreClient.batch_put_if_absent`): a plain ``batch_put_from`` of
  a key that exists, or that another client is putting at that moment, returns 0 without writing;
* a dummy client (``ClientConfig.real_client``) gets its page buffers from the real client's shared memory
  (:meth:`StoreClient.new_buffer`): buffers of its own answer INVALID_PARAMS (-600) to every data call.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from kvtui.core.codes import CLIENT_CLOSED, INVALID_PARAMS, OBJECT_ALREADY_EXISTS, SIZE_MISMATCH
from kvtui.mooncake.hosts import BRIDGE_ADDRESS, Host, enter_host as _enter_namespace
from kvtui.mooncake.net import is_etcd, probe_targets, probe_tcp, route_address, split_hostport

__all__ = ["ClientConfig", "ClusterEndpoints", "StoreClient", "StoreError", "enter_host", "is_etcd", "open_client",
           "probe_tcp", "redirect_native_stderr", "route_address", "split_hostport"]

SETUP_ATTEMPTS = 3
"""Store clients a :meth:`StoreClient.setup` creates at most while the master answers TCP (each one tries
``MC_STORE_CLIENT_SETUP_RETRIES`` times): a test session's hundreds of clients share one port range."""


class StoreError(RuntimeError):
    """A store client could not be set up or used (message is one line, for the user)."""


@dataclass(frozen=True)
class ClusterEndpoints:
    """Where the store lives, as plain data every process can use.

    ``master``: RPC ``HOST:PORT``, or ``etcd://HOST:PORT[;…]`` for an HA cluster (:mod:`kvtui.mooncake.ha`);
    ``metadata_url``: ``http://HOST:PORT/metadata`` (HA: the ``etcd://`` address); ``metrics_url``: the
    master's admin HTTP base (``/metrics``, ``/health``) or ``None`` if unknown (HA: the leader's when the
    endpoints were made; :attr:`masters` says where each master is); ``client_env``: ``MC_*`` variables each
    store client sets before importing Mooncake (loopback port ranges, bind address, the HA RPC timeout);
    ``masters``: ``(name, admin URL)`` of every master of an HA cluster (``master-0`` …), empty otherwise or
    when not known.
    """

    master: str
    metadata_url: str
    metrics_url: str | None
    protocol: str = "tcp"
    device: str = ""
    embedded: bool = True
    client_env: tuple[tuple[str, str], ...] = ()
    log_dir: str = ""
    hosts: tuple[Host, ...] = ()  # the emulated hosts (kvtui.mooncake.hosts), none without --hosts auto
    real_client: str = ""  # HOST:PORT of the standalone real client the workers are dummy clients of ("": none)
    masters: tuple[tuple[str, str], ...] = ()  # HA: (name, admin URL) of each master
    tiers: tuple[str, ...] = ("memory",)  # ("memory", "disk") when the store has a disk tier (kvtui.mooncake.tiers)
    replicate_hot: bool = False  # the master gives hot keys a second memory replica (dynamic replication)
    disk_read_bytes: int = 0  # the largest batch of disk-only pages a reader may ask for at once (0: no limit)

    @property
    def ha(self) -> bool:
        """An HA cluster: clients find the leader through etcd."""
        return is_etcd(self.master)

    def as_dict(self) -> dict[str, Any]:
        """Plain-data form for worker messages and recorded sessions (``hosts``: ``{name: Host.as_dict()}``,
        only with emulated hosts)."""
        d: dict[str, Any] = {"master": self.master, "metadata_url": self.metadata_url, "metrics_url": self.metrics_url,
             "protocol": self.protocol, "device": self.device, "embedded": self.embedded,
             "client_env": [list(kv) for kv in self.client_env], "log_dir": self.log_dir}
        if self.hosts:
            d["hosts"] = {h.name: h.as_dict() for h in self.hosts}
        if self.real_client:
            d["real_client"] = self.real_client
        if self.masters:
            d["masters"] = [list(m) for m in self.masters]
        if self.tiers != ("memory",):
            d["tiers"], d["disk_read_bytes"] = list(self.tiers), self.disk_read_bytes
        if self.replicate_hot:
            d["replicate_hot"] = True
        return d


@dataclass(frozen=True)
class ClientConfig:
    """How one process joins the cluster.

    ``master``: ``HOST:PORT`` of the master's RPC service, or ``etcd://HOST:PORT[;…]`` (an HA cluster: the
    leader is found through etcd). ``metadata_url``: the transfer-engine metadata server
    (``http://HOST:PORT/metadata``, or ``etcd://…``). ``segment_bytes``: memory this client contributes to the store
    (0 = none: its puts land in other clients' segments). ``local_buffer_bytes``: the client's staging
    buffer for ``put``/``get`` of Python bytes. ``protocol``: ``tcp`` or ``rdma``; ``device``: RDMA device.
    ``env``: extra ``MC_*`` variables (port ranges, bind address) set before the library is imported.
    ``real_client``: ``HOST:PORT`` of a standalone real client (``mooncake_client``) on this host: this client
    is then a dummy client of it (``setup_dummy``; no segment of its own, ``segment_bytes`` unused).
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
    real_client: str = ""  # HOST:PORT: be a dummy client of that standalone real client (setup_dummy)
    offload: bool = False  # a segment owner with a disk tier (MOONCAKE_OFFLOAD_* in env; kvtui.mooncake.tiers)
    tiers: bool = False  # the store has a disk tier or hot-key replication: replica_tiers() says where each key is
    disk_read_bytes: int = 0  # the largest batch of disk-only objects one read may ask for (0: no limit)


MEMORY, DISK = 1, 2
"""Where :meth:`StoreClient.replica_tiers` finds a key: in a memory segment, or only on the disk tier."""

_NEVER_CLOSED: list = []  # closed clients of HA clusters, kept from the destructor (it waits like close())


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
    negative code; :meth:`batch_put_if_absent`: 0, ``OBJECT_ALREADY_EXISTS`` or a negative code). After
    :meth:`close` they return :data:`CLIENT_CLOSED` for every item instead of touching the native object.
    """

    def __init__(self, config: ClientConfig):
        self.config = config
        self._store = None
        self._closed = False
        self._cond = threading.Condition()
        self._inflight = 0  # data calls running now; close() waits for them (a call after close segfaults)
        self._side = None  # a dummy client's real client without a segment, for replica_tiers (its own cannot)
        self._reserving: set[str] = set()  # keys this client holds a put session on (start .. end/revoke)
        self._unrevoked: set[str] = set()  # put sessions a revoke could not clear (revoked again before reuse)

    def setup(self, setup_retries: int = 2) -> None:
        """Connect to the master; ``StoreError`` (one line) if it is unreachable or ``setup()`` fails."""
        cfg = self.config
        try:
            targets = probe_targets(cfg.master)
        except ValueError as exc:
            raise StoreError(f"the master address {exc}" if is_etcd(cfg.master) else f"master address: {exc}") from None

        def answers() -> bool:
            return any(probe_tcp(h, p, timeout_s=2.0) for h, p in targets)

        if not answers():
            what = "etcd" if is_etcd(cfg.master) else "Mooncake master"
            raise StoreError(f"no {what} answers at {cfg.master} (TCP connect failed)")
        os.environ.setdefault("MC_LOG_LEVEL", "ERROR")
        os.environ["MC_STORE_CLIENT_SETUP_RETRIES"] = str(setup_retries)
        for k, v in cfg.env:
            os.environ[k] = v
        try:
            from mooncake.store import MooncakeDistributedStore
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise StoreError(f"cannot import mooncake.store ({exc}); run `kvtui doctor`") from None
        for _ in range(SETUP_ATTEMPTS):
            store = MooncakeDistributedStore()
            if cfg.real_client:  # (the pool size is nominal: alloc_from_mem_pool is not held to it)
                rc = store.setup_dummy(int(cfg.local_buffer_bytes) + (64 << 20), int(cfg.local_buffer_bytes),
                                       cfg.real_client)
                break
            if cfg.offload:  # (the path and backend come from MOONCAKE_OFFLOAD_* in the environment)
                rc = store.setup(cfg.local_host, cfg.metadata_url, int(cfg.segment_bytes),
                                 int(cfg.local_buffer_bytes), cfg.protocol, cfg.device, cfg.master,
                                 enable_ssd_offload=True,
                                 ssd_offload_path=os.environ.get("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", ""))
            else:
                rc = store.setup(cfg.local_host, cfg.metadata_url, int(cfg.segment_bytes),
                                 int(cfg.local_buffer_bytes), cfg.protocol, cfg.device, cfg.master)
            # setup() failed once with the master answering (a clean-clone test run, cause not logged; a
            # listener port of the client's range held by another client is one): a new client tries again
            if rc == 0 or not answers():
                break
        if rc != 0:  # older wheels return +1, newer -1: only 0 is success
            raise StoreError(f"Mooncake setup() failed with code {rc} "
                             f"(master {cfg.master}, metadata {cfg.metadata_url})")
        if cfg.tiers and cfg.real_client:  # (a dummy client's batch_get_replica_desc answers RPC_FAIL)
            side = MooncakeDistributedStore()
            if side.setup(cfg.local_host, cfg.metadata_url, 0, 1 << 20, cfg.protocol, cfg.device, cfg.master) != 0:
                raise StoreError(f"Mooncake setup() of the replica-tier client failed (master {cfg.master})")
            self._side = side
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
        """Put-if-absent of each buffer: 0 (stored, or already present: not overwritten — it cannot tell which;
        :meth:`batch_put_if_absent` can) or a negative code."""
        return self._call("batch_put_from", len(keys), list(keys), list(ptrs), list(sizes))

    @property
    def reports_existing(self) -> bool:
        """True when :meth:`batch_put_if_absent` can tell "stored by this call" from "already there" (the
        wheel has the put-session calls); False on a closed client, an older wheel or a dummy client."""
        store = self._store
        return (store is not None and not self._closed and not self.config.real_client
                and hasattr(store, "batch_put_session_start"))

    def new_buffer(self, nbytes: int) -> np.ndarray:
        """A uint8 buffer of ``nbytes`` bytes this client's data calls can read into and put from: plain memory
        for a real client; for a dummy client, memory of the real client's shared pool (``alloc_from_mem_pool``,
        which touches it, then ``register_buffer``), kept until the process ends (the wheel has no call that
        gives it back). ``StoreError`` when the pool refuses it or the client is closed."""
        if not self.config.real_client:
            return np.empty(int(nbytes), dtype=np.uint8)
        store = self._enter()
        if store is None:
            raise StoreError("the store client is closed")
        try:
            ptr = int(store.alloc_from_mem_pool(int(nbytes))) if nbytes else 0
            if nbytes and (not ptr or int(store.register_buffer(ptr, int(nbytes))) != 0):
                raise StoreError(f"the real client's shared memory pool refused a {nbytes}-byte page buffer")
        finally:
            self._leave()
        if not nbytes:
            return np.empty(0, dtype=np.uint8)
        return np.frombuffer(memoryview((ctypes.c_uint8 * int(nbytes)).from_address(ptr)), dtype=np.uint8)

    def batch_put_if_absent(self, keys: Sequence[str], ptrs: Sequence[int], sizes: Sequence[int],
                            segment: str = "") -> list[int]:
        """Put-if-absent that says who wrote each object. Per key: ``0`` stored by this call,
        ``OBJECT_ALREADY_EXISTS`` (-705) the key exists or another writer (another process, or another thread
        of this one) is storing it right now, nothing written; another negative code: nothing stored.

        ``batch_put_from`` cannot tell (a put of an existing key, or of a key another client is putting
        at that moment, returns 0 without writing); the put-session calls can, because the master starts a
        put atomically per key: of writers racing on one key exactly one gets 0 and the others -705 (the
        flow is upstream's ``mooncake-store/tests/e2e/session_ranges_tcp_e2e.py``):

        1. ``batch_put_session_start(keys, sizes)`` reserves each object (0), or answers -705, -200, …;
        2. ``batch_put_from_multi_buffer_ranges`` writes each reserved object whole (answers bytes written);
        3. ``batch_put_session_end`` makes the objects readable; one whose write or end failed is revoked
           (``batch_put_session_revoke``), so its key is free again.

        Until its end a reserved key answers -705 to other writers and is absent to readers; a writer killed
        inside a reservation blocks the key until the master discards unfinished puts
        (``--put_start_discard_timeout_sec``, 30 s by default), as a writer killed inside ``batch_put_from``
        does. On a wheel without the put-session calls this is ``batch_put_from`` (0 also for a key a peer
        stored; :attr:`reports_existing` is False); so it is for a dummy client, whose put sessions answer
        INVALID_PARAMS, except that a key another thread of this client is storing answers -705: exact
        when this process is the keys' only writer (kvtui's ``--worker-client dummy`` has one prefill worker).
        Sizes in bytes; ``ptrs[i]`` holds ``sizes[i]`` bytes.
        ``segment``: put the objects into that segment (a :meth:`segment_name`) if it has room
        (``ReplicateConfig.preferred_segment``); "" lets Mooncake's allocator pick one at random.
        """
        keys, ptrs, sizes = list(keys), [int(p) for p in ptrs], [int(n) for n in sizes]
        store = self._enter()
        if store is None:
            return [CLIENT_CLOSED] * len(keys)
        try:
            if len(ptrs) != len(keys) or len(sizes) != len(keys):
                return [INVALID_PARAMS] * len(keys)
            if self.config.real_client:  # a dummy client's put sessions answer INVALID_PARAMS (-600)
                return self._put_exclusive(store, keys, ptrs, sizes)
            if not hasattr(store, "batch_put_session_start"):
                return [int(r) for r in store.batch_put_from(keys, ptrs, sizes)]
            return self._put_sessions(store, keys, ptrs, sizes, segment)
        finally:
            self._leave()

    def segment_name(self) -> str:
        """The name of this client's segment (``get_hostname()``: ``HOST:PORT``), "" when closed."""
        store = self._enter()
        if store is None:
            return ""
        try:
            return str(store.get_hostname())
        finally:
            self._leave()

    def replica_tiers(self, keys: Sequence[str]) -> list[tuple[int, int]]:
        """Per key, where the store holds it (``batch_get_replica_desc``, one master RPC; it grants a read lease,
        as ``batch_is_exist`` does): ``(tier, memory replicas)``, tier :data:`MEMORY` for a complete memory
        replica, :data:`DISK` for a complete replica on the disk tier only, 0 when neither (absent, or the call
        failed); memory replicas: the complete ones (2 once hot-key replication copied it). A dummy client asks
        through a real client of its own without a segment."""
        store = self._enter()
        if store is None:
            return [(0, 0)] * len(keys)
        try:
            descs = (self._side or store).batch_get_replica_desc(list(keys))
        except Exception:  # (a master outage: unknown)
            return [(0, 0)] * len(keys)
        finally:
            self._leave()
        out = []
        for k in keys:
            tier = memory = 0
            for d in descs.get(k, ()) or ():
                if str(d.status).endswith("COMPLETE"):
                    if d.is_memory_replica():
                        tier, memory = MEMORY, memory + 1
                    elif d.is_local_disk_replica() and not tier:
                        tier = DISK
            out.append((tier, memory))
        return out

    def replica_segments(self, keys: Sequence[str], prefer: str = "") -> list[str]:
        """Per key, the segment (transport endpoint, as :meth:`segment_name`) a read of it comes from: ``prefer``
        (the reader's own segment) when one of its memory replicas is there, else its first memory replica's; ""
        when it has none or the call failed (``batch_get_replica_desc``; one master RPC). A client reads its own
        segment's replica when there is one: a 4 MiB page copied there by hot-key replication read in 0.25 ms
        against 6.9 ms for one held only on the other segment (wheel 0.3.13.post1)."""
        store = self._enter()
        if store is None:
            return [""] * len(keys)
        try:
            descs = store.batch_get_replica_desc(list(keys))
        except Exception:  # (a master outage: unknown, the caller counts such bytes as remote)
            return [""] * len(keys)
        finally:
            self._leave()
        out = []
        for k in keys:
            places = [str(d.get_memory_descriptor().buffer_descriptor.transport_endpoint)
                      for d in descs.get(k, ()) or () if d.is_memory_replica()]
            out.append(prefer if prefer and prefer in places else places[0] if places else "")
        return out

    def _claim(self, keys: list[str]) -> list[int]:
        """Under ``_cond``: the indexes of ``keys`` this call now stores (added to ``_reserving``), leaving out
        a key another call of this client is storing and a key repeated in the batch (its first copy only)."""
        mine = []
        for i, k in enumerate(keys):
            if k not in self._reserving:
                self._reserving.add(k)
                mine.append(i)
        return mine

    def _put_sessions(self, store, keys: list[str], ptrs: list[int], sizes: list[int], segment: str = "") -> list[int]:
        out = [OBJECT_ALREADY_EXISTS] * len(keys)
        with self._cond:  # a key this client is already storing (another thread): -705, no second session
            mine = self._claim(keys)
            stale = [keys[i] for i in mine if keys[i] in self._unrevoked]
        try:
            if stale:
                self._revoke(store, stale)
            if not mine:
                return out
            extra = (_placed(segment),) if segment else ()
            started = [int(r) for r in store.batch_put_session_start([keys[i] for i in mine], [sizes[i] for i in mine],
                                                                     *extra)]
            held = []
            for i, r in zip(mine, started + [INVALID_PARAMS] * (len(mine) - len(started))):
                out[i] = r
                if r == 0:
                    held.append(i)
            if held:
                wrote = [int(w) for w in store.batch_put_from_multi_buffer_ranges(
                    [keys[i] for i in held], [[ptrs[i]] for i in held], [[sizes[i]] for i in held], [[0]] * len(held))]
                whole = []
                for i, w in zip(held, wrote + [INVALID_PARAMS] * (len(held) - len(wrote))):
                    if w == sizes[i]:
                        whole.append(i)
                    else:
                        out[i] = w if w < 0 else SIZE_MISMATCH
                ended = [int(e) for e in store.batch_put_session_end([keys[i] for i in whole])] if whole else []
                for i, e in zip(whole, ended + [INVALID_PARAMS] * (len(whole) - len(ended))):
                    out[i] = e
                failed = [keys[i] for i in held if out[i] != 0]
                if failed:
                    self._revoke(store, failed)
            return out
        finally:
            with self._cond:
                self._reserving.difference_update(keys[i] for i in mine)

    def _put_exclusive(self, store, keys: list[str], ptrs: list[int], sizes: list[int]) -> list[int]:
        out = [OBJECT_ALREADY_EXISTS] * len(keys)
        with self._cond:  # as _put_sessions: a key another thread (or the batch) is storing answers -705
            mine = self._claim(keys)
        try:
            if mine:
                rcs = [int(r) for r in store.batch_put_from([keys[i] for i in mine], [ptrs[i] for i in mine],
                                                            [sizes[i] for i in mine])]
                for i, r in zip(mine, rcs + [INVALID_PARAMS] * (len(mine) - len(rcs))):
                    out[i] = r
            return out
        finally:
            with self._cond:
                self._reserving.difference_update(keys[i] for i in mine)

    def _revoke(self, store, keys: list[str]) -> None:
        """Drop this client's put sessions on ``keys``; one whose revoke fails (master down) is revoked again
        before the key is reserved again (a leftover session makes the next start answer INVALID_PARAMS)."""
        rcs = [int(r) for r in store.batch_put_session_revoke(keys)]
        with self._cond:
            for k, r in zip(keys, rcs + [-1] * (len(keys) - len(rcs))):  # no answer: try again later
                if r in (0, INVALID_PARAMS):  # revoked, or no session left to revoke
                    self._unrevoked.discard(k)
                else:
                    self._unrevoked.add(k)

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
            side, self._side = self._side, None
        for one in (store, side):
            if one is not None and is_etcd(self.config.master):
                _NEVER_CLOSED.append(one)  # (see the module's docstring: the process leaves with os._exit)
            elif one is not None:
                one.close()


def enter_host(endpoints: dict[str, Any], role: str) -> None:
    """Move this process into the emulated host of ``role`` (``endpoints["hosts"]``, :mod:`kvtui.mooncake.hosts`)
    before its store client is set up: call first thing, before any thread starts (threads made later inherit
    it); nothing to do without emulated hosts or without a host for ``role``. ``OSError`` when the namespace
    is gone or not permitted."""
    _enter_namespace(endpoints.get("hosts", {}).get(role))


def open_client(endpoints: dict, segment_bytes: int = 0, local_buffer_bytes: int = 16 << 20,
                role: str | None = None, dummy: bool = False, offload: bool = False) -> StoreClient:
    """Set up a :class:`StoreClient` from ``ClusterEndpoints.as_dict()``; ``StoreError`` on failure. With
    emulated hosts (``endpoints["hosts"]``, :mod:`kvtui.mooncake.hosts`), ``role``'s host address is the
    client's own (its ``local_hostname`` and ``MC_TCP_BIND_ADDRESS``; the process must already be in that
    host's namespace), and a ``role`` without a host gets the bridge's (kvtui's own namespace). ``dummy``: a
    dummy client of the endpoints' standalone real client (``endpoints["real_client"]``), when they have one.
    Attached to a cluster (``embedded`` false), the client's address is the one this host reaches the master from
    (:func:`route_address`: 127.0.0.1 for a master on loopback), so clients on other machines can reach it."""
    env = tuple(tuple(kv) for kv in endpoints.get("client_env", ()))
    local_host = "127.0.0.1"
    if not endpoints.get("embedded", True):  # attached: announce the address this host reaches the master from
        local_host = route_address(probe_targets(endpoints["master"])[0][0])
    hosts = endpoints.get("hosts", {})
    if hosts:  # a process without a host of its own (the soak's filler, a bench client) is in kvtui's namespace
        local_host = hosts[role]["address"] if role in hosts else BRIDGE_ADDRESS
        env = tuple(kv for kv in env if kv[0] != "MC_TCP_BIND_ADDRESS") + (("MC_TCP_BIND_ADDRESS", local_host),)
    cfg = ClientConfig(
        master=endpoints["master"], metadata_url=endpoints["metadata_url"], segment_bytes=int(segment_bytes),
        local_buffer_bytes=int(local_buffer_bytes), protocol=endpoints.get("protocol", "tcp"),
        device=endpoints.get("device", ""), local_host=local_host, env=env,
        real_client=endpoints.get("real_client", "") if dummy else "", offload=offload,
        tiers="disk" in endpoints.get("tiers", ()) or bool(endpoints.get("replicate_hot")),
        disk_read_bytes=int(endpoints.get("disk_read_bytes", 0)),
    )
    client = StoreClient(cfg)
    client.setup()
    return client


def _placed(segment: str):
    """A ``ReplicateConfig`` preferring ``segment`` (one replica, as the default)."""
    from mooncake.store import ReplicateConfig

    cfg = ReplicateConfig()
    cfg.preferred_segment = segment
    return cfg

