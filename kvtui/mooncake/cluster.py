"""The Mooncake cluster kvtui runs against: embedded on loopback (default) or attached.

Embedded mode starts, each on a free 127.0.0.1 port and each dying with kvtui (:mod:`kvtui.runtime.procs`):

* ``mooncake_master`` (RPC ``--rpc_address=127.0.0.1``, admin/metrics ``--metrics_host=127.0.0.1``, its
  embedded HTTP metadata server off because it binds 0.0.0.0 whatever ``--http_metadata_server_host`` says);
* the wheel's Python metadata server (``mooncake.http_metadata_server --host 127.0.0.1``);
* with ``segment_on="store"``, a store node (:mod:`kvtui.mooncake.store_node`) contributing the segment, or,
  with ``worker_client="dummy"``, the wheel's standalone real client (``mooncake_client``) owning it, whose
  dummy clients (the workers) move pages through shared memory with it (:data:`WORKER_CLIENTS`).

Readiness is probed with bounded waits (the master answers ``/health`` ~1.1 s after start); a process that
exits early stops start-up with the tail of its log (a master whose RPC or metrics port is taken exits with
code 1 about 2 s after start, without naming the port). Native logs go to files in ``log_dir``
(:mod:`kvtui.runtime.logs`: a folder kvtui made is removed after a run without trouble).
With ``ha`` N (``--ha N``) the master side is an HA cluster instead (:mod:`kvtui.mooncake.ha`): kvtui's own etcd
and N masters with ``--enable_ha --enable_oplog`` electing a leader through it, no metadata server (etcd is the
metadata server), every client given ``etcd://127.0.0.1:PORT`` as master and metadata address. Start-up waits
until one master is ``serving``; each master's admin URL is in ``ClusterEndpoints.masters``.

Attach mode starts nothing and only records the endpoints (an ``etcd://`` master: its etcd answers).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from kvtui.core.defaults import DEFAULT_STORE_BYTES
from kvtui.core.units import split_bytes
from kvtui.mooncake import ha
from kvtui.mooncake.client import ClusterEndpoints
from kvtui.mooncake.errors import BadAddress, ClusterError, Conflict, MissingTool, Unreachable
from kvtui.mooncake.hosts import EmulatedHosts, HostsError, LinkSpec, nsenter_argv
from kvtui.mooncake.net import free_port, http_get, is_etcd, parse_etcd, port_is_free, probe_tcp, split_hostport
from kvtui.mooncake.tiers import TIERS_DISK, DiskFolder, DiskTier, check_disk, master_flags
from kvtui.runtime.logs import KEPT_RESTARTED, KEPT_WHY, LogFolder
from kvtui.runtime.procs import ManagedProcess, spawn, stop_processes

__all__ = ["WORKER_CLIENTS", "ClusterEndpoints", "ClusterError", "ClusterOptions", "EmbeddedCluster", "attach",
           "attach_ha", "loopback_client_env", "master_binary"]

READY_TIMEOUT_S = 20.0
HA_READY_TIMEOUT_S = 40.0  # an HA master serves ~5 s after the election (its warm-up), later on a loaded machine
STOP_GRACE_S = 0.8  # teardown: the metadata server gets SIGTERM, then SIGKILL after this long


def loopback_client_env(rng: random.Random | None = None) -> tuple[tuple[str, str], ...]:
    """``MC_*`` variables that keep a store client's own listeners on loopback and in a private range.

    Mooncake accepts ranges inside 1024–32767 (51xxx is silently replaced by the default 12300–14300), so a
    random 400-port window in 20000–32000 is used: 200 for segment ids, 200 for transfer-engine RPC/TCP.
    """
    rng = rng or random.Random()
    base = rng.randrange(20000, 31600, 400)
    return (
        ("MC_STORE_CLIENT_MIN_PORT", str(base)), ("MC_STORE_CLIENT_MAX_PORT", str(base + 199)),
        ("MC_MIN_RPC_PORT", str(base + 200)), ("MC_MAX_RPC_PORT", str(base + 399)),
        ("MC_TCP_BIND_ADDRESS", "127.0.0.1"), ("MC_LOG_LEVEL", "ERROR"),
        ("MC_TCP_ENABLE_CONNECTION_POOL", "1"),
    )


def master_binary() -> str:
    """Path of the ``mooncake_master`` binary shipped in the wheel (``ClusterError`` if absent)."""
    spec = importlib.util.find_spec("mooncake")
    if spec is None or not spec.submodule_search_locations:
        raise MissingTool("the Mooncake wheel", "pip install mooncake-transfer-engine-non-cuda")
    for loc in spec.submodule_search_locations:
        path = Path(loc) / "mooncake_master"
        if path.exists():
            if not os.access(path, os.X_OK):
                path.chmod(path.stat().st_mode | 0o111)
            return str(path)
    raise MissingTool("mooncake_master", "it is missing from the Mooncake wheel: reinstall "
                                         "mooncake-transfer-engine-non-cuda")


WORKER_CLIENTS = ("real", "dummy")
"""How the workers of an embedded cluster join the store (``--worker-client``). ``real``: each worker is a
real client (``setup``) and the segment is a store node's; a reload is a TCP transfer from it. ``dummy``: the
store node is the wheel's standalone real client (``mooncake_client``, Mooncake's standalone deployment),
each worker a dummy client of it (``setup_dummy``) whose page buffers come from its shared memory pool
(``alloc_from_mem_pool``), so a reload is a copy between mappings on this host."""

HOT_REPLICATION_FLAGS = ("--dynamic_replication_mode=enforce", "--dynamic_replication_heat_window_seconds=5",
                         "--dynamic_replication_admission_qps_threshold=0.5")
"""The master's dynamic MEMORY replication, on: a key read more than 0.5 times a second over a 5 s window gets a
second memory replica on another segment (seen within ~5 s with two owners, wheel 0.3.13.post1)."""

START_ATTEMPTS = 2
"""Starts of an embedded cluster on kvtui-picked ports before its error is reported (see ``start``)."""


@dataclass
class ClusterOptions:
    """Embedded-cluster settings. Sizes in bytes, times in seconds. Explicit ports of 0 mean "pick free"."""

    store_bytes: int = DEFAULT_STORE_BYTES
    segment_on: str = "store"  # store | prefill | decode
    rpc_port: int = 0
    metrics_port: int = 0
    metadata_port: int = 0
    lease_ttl_ms: int = 10_000
    client_ttl_s: int = 10
    eviction_high_watermark: float = 0.9
    eviction_ratio: float = 0.05
    log_dir: str | None = None
    isolation: str | None = None  # one line on loopback isolation, shown to the user (see kvtui.mooncake.netns)
    hosts: bool = False  # each process on an emulated host of its own (kvtui.mooncake.hosts; needs isolation)
    link: LinkSpec | None = None  # shapes every host's link (with hosts); None: unshaped
    worker_names: tuple[str, ...] = ("prefill", "decode")  # one emulated host each (kvtui.core.topology)
    store_nodes: int = 1  # with segment_on "store": that many store nodes sharing store_bytes to the byte
    worker_client: str = "real"  # WORKER_CLIENTS; "dummy" needs segment_on "store", one store node, no hosts
    ha: int = 0  # N > 0: an HA cluster of N masters and kvtui's own etcd (kvtui.mooncake.ha); no hosts, no ports
    oplog: bool = True  # HA masters replicate their metadata (--enable_oplog); False only in tests: a failover
    # then loses every key, which a test of the loss count needs
    disk_bytes: int = 0  # > 0: a disk tier of this many bytes behind the DRAM segment (kvtui.mooncake.tiers)
    disk_path: str | None = None  # the folder its files go under (a new kvtui-disk-* in it); None: the temp folder
    page_bytes: int = 0  # one KV page (a disk bucket holds at least one)
    replicate_hot: bool = False  # the master gives a hot key a second memory replica on another store node


@dataclass
class EmbeddedCluster:
    """Starts and owns an embedded cluster (use as a context manager, or ``start()`` / ``stop()``).

    Raises :class:`ClusterError` when a port requested explicitly is busy, a process exits during start-up
    (message includes its log tail), or readiness is not reached within ``READY_TIMEOUT_S``.
    """

    options: ClusterOptions = field(default_factory=ClusterOptions)
    processes: list[ManagedProcess] = field(default_factory=list)
    endpoints: ClusterEndpoints | None = None
    _spawner: ThreadPoolExecutor | None = None
    _logs: LogFolder | None = None  # this start's log folder (kvtui.runtime.logs: removed or kept by stop)
    _restarted: bool = False
    emulated: EmulatedHosts | None = None  # with ClusterOptions.hosts
    disk: DiskTier | None = None  # with ClusterOptions.disk_bytes
    _disk_folder: DiskFolder | None = None
    etcd: ha.EtcdServer | None = None  # with ClusterOptions.ha
    _master_argv: dict[str, list[str]] = field(default_factory=dict)  # each master's command line, by name
    real_client_health: str = ""  # HA with dummy workers: the real client's /health URL ("": none)

    def __enter__(self) -> "EmbeddedCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _port(self, requested: int, what: str) -> int:
        if requested:
            if not port_is_free(requested):
                raise ClusterError(f"{what} port {requested} on 127.0.0.1 is busy; choose another or omit it")
            return requested
        return free_port()

    def start(self) -> ClusterEndpoints:
        """Start master, metadata server and (optionally) the store node; return the endpoints.
        ``ClusterError`` (one line plus a log tail) if they do not start. With every port picked by kvtui
        a failed start is tried once more on new ports: a port found free can be taken by another process
        before the master binds it (a master whose RPC port is busy answers ``/health`` for ~2 s and exits:
        the likely cause of a rare "no Mooncake master answers" from the store node)."""
        o = self.options
        attempts = 1 if (o.rpc_port or o.metrics_port or o.metadata_port) else START_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once()
            except ClusterError as exc:
                if attempt == attempts or not exc.retry:
                    raise
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _start_once(self) -> ClusterEndpoints:
        o = self.options
        self._master_argv = {}
        if o.ha and (o.hosts or o.rpc_port or o.metrics_port or o.metadata_port):
            raise Conflict("ha", "hosts" if o.hosts else "ports",
                           "an HA cluster's etcd and masters start on free loopback ports")
        if o.disk_bytes:
            if o.segment_on != "store":
                raise Conflict("disk_bytes", "segment_on", "the disk tier belongs to the store nodes' segments")
            if o.ha:
                raise Conflict("disk_bytes", "ha", "a disk tier behind HA masters is not measured here")
            check_disk(o.disk_bytes, o.store_bytes)
        self._logs = LogFolder(o.log_dir)
        log_dir = self._logs.path
        rpc = self._port(o.rpc_port, "master RPC")
        metrics = self._port(o.metrics_port, "master metrics")
        meta = self._port(o.metadata_port, "metadata")
        env = dict(os.environ, GLOG_minloglevel="1")
        bind, on = "127.0.0.1", {}  # on: role → the nsenter prefix that starts it on its emulated host
        self._store_env: dict[str, dict[str, str]] = {}  # each store node's environment (restarts reuse it)
        try:
            if o.disk_bytes:
                self._disk_folder = DiskFolder(o.disk_path)
                self.disk = DiskTier(o.disk_bytes, str(self._disk_folder.path), o.store_bytes, o.page_bytes)
            if o.hosts:
                self.emulated = EmulatedHosts(log_dir, o.link)
                names = ["master"] + (self.store_names() if o.segment_on == "store" else []) + list(o.worker_names)
                try:
                    made = self.emulated.make(names)
                except HostsError:
                    self.stop()  # (nothing ran yet whose logs would help)
                    raise
                bind = made["master"].address
                on = {name: nsenter_argv(h) for name, h in made.items()}
            self._env, self._log_dir = env, log_dir
            if o.ha:
                self.endpoints = self._start_ha(env, log_dir)
            else:
                self.processes.append(spawn("metadata", on.get("master", []) + [
                    sys.executable, "-m", "mooncake.http_metadata_server", "--host", bind,
                    "--port", str(meta), "--log-level", "WARNING"], log_dir / "metadata.log", env))
                self._master_argv["master"] = on.get("master", []) + [
                    master_binary(), f"--rpc_port={rpc}", f"--rpc_address={bind}",
                    f"--metrics_port={metrics}", f"--metrics_host={bind}", *self._master_flags()]
                self.processes.append(spawn("master", self._master_argv["master"], log_dir / "master.log", env))
                metrics_url = f"http://{bind}:{metrics}"
                self._wait("master", lambda: http_get(metrics_url + "/health")[0] == 200 and probe_tcp(bind, rpc))
                self._wait("metadata", lambda: http_get(f"http://{bind}:{meta}/metadata")[0] == 400)
                hosts = tuple(self.emulated.hosts.values()) if self.emulated else ()
                self.endpoints = ClusterEndpoints(
                    master=f"{bind}:{rpc}", metadata_url=f"http://{bind}:{meta}/metadata",
                    metrics_url=metrics_url, embedded=True, client_env=loopback_client_env(), log_dir=str(log_dir),
                    hosts=hosts)
            if o.segment_on == "store" and o.worker_client == "dummy":
                if o.hosts or o.store_nodes != 1:
                    raise Conflict("worker_client", "hosts" if o.hosts else "store_nodes",
                                   "dummy clients need one store node on this host")
                port = free_port()
                self._store_argv = {"store": self._real_client_argv(o.store_bytes, port)}
                self._store_env["store"] = dict(env, **dict(self.endpoints.client_env), **self._owner_env("store"))
                self.processes.append(spawn("store", self._store_argv["store"], log_dir / "store.log",
                                            self._store_env["store"]))
                self._wait("store", lambda: self.capacity_bytes() > 0 and probe_tcp("127.0.0.1", port))
                if (got := self.capacity_bytes()) != o.store_bytes:  # (a wheel that rounds: say so, never hide it)
                    raise ClusterError(f"mooncake_client mounted a segment of {got:,} bytes, not the "
                                       f"{o.store_bytes:,} asked for")
                self.endpoints = replace(self.endpoints, real_client=f"127.0.0.1:{port}")
            elif o.segment_on == "store":
                names = self.store_names()
                self._store_argv = {name: on.get(name, []) + [
                    sys.executable, "-m", "kvtui.mooncake.store_node",
                    "--endpoints", json.dumps(self.endpoints.as_dict()),
                    "--segment-bytes", str(each), "--name", name, *(["--disk"] if self.disk else [])]
                    for name, each in zip(names, split_bytes(o.store_bytes, len(names)))}
                for name, argv in self._store_argv.items():
                    self._store_env[name] = dict(env, **self._owner_env(name))
                    self.processes.append(spawn(name, argv, log_dir / f"{name}.log", self._store_env[name]))
                self._wait("store", lambda: self.capacity_bytes() >= o.store_bytes)
            if o.replicate_hot:
                self.endpoints = replace(self.endpoints, replicate_hot=True)
            if self.disk is not None and self._disk_folder is not None:
                first = self.process(self.store_names()[0])
                if first is not None:  # (its files go when it does, also if kvtui is killed)
                    self._disk_folder.guard(first.pid)
                self.endpoints = replace(self.endpoints, tiers=TIERS_DISK, disk_read_bytes=self.disk.read_bytes)
            # the thread that restarts the master (M), made now: a thread made later by the monitor's
            # thread would inherit its nice +10, and so would the master it forks
            self._spawner = ThreadPoolExecutor(1, thread_name_prefix="kvtui-spawner")
            self._spawner.submit(lambda: None).result()
        except BaseException as exc:  # (a Ctrl-C or SIGTERM is the user's, not a failure the logs would explain)
            self.stop(keep_logs=isinstance(exc, Exception))
            raise
        return self.endpoints

    def _master_flags(self) -> list[str]:
        """The flags every embedded master gets besides its addresses (a disk tier's too). An HA master logs at
        INFO (``--minloglevel=0``): its role changes (``leader_warmup``, ``serving``) are INFO lines, and a
        failover report is checked against them; a single master logs warnings and errors only."""
        o = self.options
        return ["--enable_http_metadata_server=false", "--enable_metric_reporting=false",
                f"--default_kv_lease_ttl={o.lease_ttl_ms}", f"--client_ttl={o.client_ttl_s}",
                f"--eviction_high_watermark_ratio={o.eviction_high_watermark}",
                f"--eviction_ratio={o.eviction_ratio}", f"--minloglevel={0 if o.ha else 1}", "--logtostderr=1",
                *(master_flags() if o.disk_bytes else []),
                *(HOT_REPLICATION_FLAGS if o.replicate_hot else ())]

    def _owner_env(self, name: str) -> dict[str, str]:
        """The disk tier's variables of store node ``name`` (none without a disk tier)."""
        if self.disk is None:
            return {}
        return self.disk.owner_env(name, len(self.store_names()))

    def _start_ha(self, env: dict[str, str], log_dir: Path) -> ClusterEndpoints:
        """etcd, then ``ha`` masters with OpLog on free loopback ports; returns the endpoints once one serves."""
        from kvtui.core.topology import worker_names

        etcd = self.etcd = ha.EtcdServer("127.0.0.1")
        self.processes.append(etcd.start(log_dir / "etcd.log", spawn, env))
        self._wait("etcd", lambda: ha.etcd_healthy(etcd.endpoints, timeout_s=0.5))
        masters = []
        for name in worker_names("master", self.options.ha):
            rpc, admin = free_port(), free_port()
            self._master_argv[name] = [
                master_binary(), f"--rpc_port={rpc}", "--rpc_address=127.0.0.1", f"--metrics_port={admin}",
                "--metrics_host=127.0.0.1", *self._master_flags(), "--enable_ha=true",
                f"--ha_backend_connstring=127.0.0.1:{etcd.client_port}",
                f"--enable_oplog={'true' if self.options.oplog else 'false'}"]
            self.processes.append(spawn(name, self._master_argv[name], log_dir / f"{name}.log", env))
            masters.append((name, f"http://127.0.0.1:{admin}"))
        leader: list[str] = []

        def serving() -> bool:
            url = ha.serving_url(masters, timeout_s=0.5)
            if url:
                leader.append(url)
            return url is not None

        self._wait("a serving master", serving, HA_READY_TIMEOUT_S)
        return ClusterEndpoints(master=etcd.url, metadata_url=etcd.url, metrics_url=leader[0], embedded=True,
                                client_env=loopback_client_env() + ha.ha_client_env(), log_dir=str(log_dir),
                                masters=tuple(masters))

    def master_names(self) -> list[str]:
        """The masters' process names: ``master``, or with ``--ha N`` ``master-0`` …"""
        return list(self._master_argv) or ["master"]

    def admin_url(self) -> str | None:
        """The admin HTTP base of the master that serves now (HA: the leader's; None while none serves)."""
        if not self.endpoints:
            return None
        if self.endpoints.masters:
            return ha.serving_url(self.endpoints.masters)
        return self.endpoints.metrics_url

    def capacity_bytes(self) -> int:
        """``master_total_capacity_bytes`` from the (serving) master's ``/metrics`` (0 if unknown)."""
        url = self.admin_url()
        if not url:
            return 0
        status, body = http_get(url + "/metrics")
        if status != 200:
            return 0
        for line in body.splitlines():
            if line.startswith("master_total_capacity_bytes "):
                return int(float(line.split()[1]))
        return 0

    def _wait(self, name: str, ready, timeout_s: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for p in self.processes:
                if not p.alive():
                    raise ClusterError(f"{p.name} exited during start-up (code {p.popen.returncode}); "
                                       f"last lines of {p.log_path}:\n{p.log_tail()}")
            if ready():
                return
            time.sleep(0.05)
        raise ClusterError(f"{name} not ready after {timeout_s:.0f} s; logs in {self.processes[0].log_path.parent}")

    def _real_client_argv(self, segment_bytes: int, port: int) -> list[str]:
        """``mooncake_client`` owning ``segment_bytes`` and serving dummy clients on ``127.0.0.1:port`` (and the
        abstract unix socket ``@mooncake_client_<port>.sock``). Its ``--global_segment_size`` takes a plain
        byte count as exactly that many bytes (the master's capacity is then ``segment_bytes`` to the byte:
        measured with wheel 0.3.13.post1), so no size is rounded to a unit."""
        binary = Path(master_binary()).with_name("mooncake_client")
        if not binary.exists():
            raise MissingTool("mooncake_client", "it is missing from the Mooncake wheel: reinstall "
                                                 "mooncake-transfer-engine-non-cuda")
        if not os.access(binary, os.X_OK):
            binary.chmod(binary.stat().st_mode | 0o111)
        assert self.endpoints is not None  # set by start() before any process is spawned
        health = []
        if self.options.ha:  # (its /health says when it reaches the new leader after a failover)
            http = free_port()
            self.real_client_health = f"http://127.0.0.1:{http}/health"
            health = ["--enable_http_server=true", f"--http_port={http}"]
        return [str(binary), f"--global_segment_size={int(segment_bytes)}",
                f"--master_server_address={self.endpoints.master}", f"--metadata_server={self.endpoints.metadata_url}",
                f"--port={port}", "--host=127.0.0.1", f"--protocol={self.endpoints.protocol}", "--minloglevel=1",
                *health, *(["--enable_offload=true"] if self.options.disk_bytes else [])]

    def store_reaches_master(self) -> bool:
        """The standalone real client of dummy workers says it reaches the master (HA: its ``/health``, whose
        ``master_unreachable`` lasts until it has found the new leader after a failover); True when there is
        none to ask."""
        if not self.real_client_health:
            return True
        status, body = http_get(self.real_client_health, timeout_s=0.5)
        return status == 200 and '"healthy"' in body

    def restart_master(self) -> None:
        """Start the master again on the same ports after it died (the new master has no keys); with ``--ha``,
        every master that died, each on its own ports (it joins as a standby: the leader and its keys are the
        survivors').

        The new master is spawned from a thread owned by the cluster, because the parent-death signal is
        tied to the spawning thread (a UI worker thread would take the master with it when it ends).
        ``ClusterError`` if none is dead, or one does not come up.
        """
        dead = [n for n in self.master_names() if (p := self.process(n)) is None or not p.alive()]
        if not dead:
            raise ClusterError("the master is still running" if not self.options.ha else "every master is running")
        self._restarted = True
        if self._spawner is None:
            self._spawner = ThreadPoolExecutor(1, thread_name_prefix="kvtui-spawner")
        admin = dict(self.endpoints.masters) if self.endpoints else {}
        for name in dead:
            old = self.process(name)
            at = self.processes.index(old) if old is not None else len(self.processes)
            if old is not None:
                self.processes.remove(old)
            proc = self._spawner.submit(spawn, name, self._master_argv[name], self._log_dir / f"{name}.log",
                                        self._env).result()
            self.processes.insert(at, proc)
            url = admin.get(name) or (self.endpoints.metrics_url if self.endpoints else None)
            assert url is not None  # an embedded master: start() set its admin URL
            self._wait(name, lambda u=url: http_get(u + "/health")[0] == 200)

    def store_names(self) -> list[str]:
        """The store nodes' process (and host) names: ``store``, or ``store-0`` … with several."""
        from kvtui.core.topology import worker_names

        return worker_names("store", max(1, self.options.store_nodes))

    def restart_store(self, name: str = "store") -> None:
        """Start store node ``name`` again after it died (from the cluster's spawner thread, as the master),
        with a new segment of the same size; returns once its client is set up (its log says ``store node
        ready``). The master lists the dead node's pages until ``client_ttl`` passes. ``ClusterError`` if it
        is still running or does not come up."""
        old = self.process(name)
        if old is not None and old.alive():
            raise ClusterError(f"the store node {name} is still running")
        self._restarted = True
        if old is not None:
            self.processes.remove(old)
        assert self.endpoints is not None and self._spawner is not None  # set by start()
        if self.endpoints.real_client:  # the standalone real client, on its port again (its dummy clients do
            # not come back to a new one: the engine starts its workers again, Engine.restart_store)
            before, port = self.capacity_bytes(), split_hostport(self.endpoints.real_client)[1]
            self.processes.append(self._spawner.submit(spawn, name, self._store_argv[name],
                                                       self._log_dir / f"{name}.log", self._store_env[name]).result())
            self._wait(name, lambda: self.capacity_bytes() > before and probe_tcp("127.0.0.1", port))
            return
        log = self._log_dir / f"{name}.log"
        start = log.stat().st_size if log.exists() else 0
        proc = self._spawner.submit(spawn, name, self._store_argv[name], log, self._store_env[name]).result()
        self.processes.append(proc)

        def ready() -> bool:
            with open(log, "rb") as f:
                f.seek(start)
                return b"store node ready" in f.read()

        self._wait(name, ready)

    def process(self, name: str) -> ManagedProcess | None:
        """The managed process called ``name`` (``master``, ``metadata``, ``store``), if any."""
        return next((p for p in self.processes if p.name == name), None)

    def stop(self, keep_logs: bool = False, grace_s: float = STOP_GRACE_S) -> None:
        """Stop every process at once: the store node, the masters (and etcd) get SIGKILL, the metadata server
        SIGTERM and, after ``grace_s``, SIGKILL. Typically all are gone within ~0.1 s; then etcd's data folder
        is removed (nothing in it outlives the cluster: the masters' view and OpLog are of this run only).

        Nothing is lost by not asking the master and the store node to shut down: the embedded master keeps
        every key in memory only (a SIGTERM would take it up to a second to exit, to the same end), and a store
        node's clean close takes ~2 s for a segment owner (and blocks ~4.3 s per call once the master is
        gone), only to remove keys from that master. No page is left half-written: a page becomes readable
        only when its put completed. A log folder kvtui created itself
        (:class:`~kvtui.runtime.logs.LogFolder`) is removed when every process was still running and ended by
        these signals or exit 0 and ``keep_logs`` is false (a failed start keeps them, one interrupted by a Ctrl-C
        or SIGTERM does not; the engine keeps them when one of its workers died), or whenever every file in it is
        empty (stopped during start-up, before anything was logged); otherwise it stays and its path is printed
        on stderr.
        """
        clean = True
        procs = list(reversed(self.processes))  # store node first, metadata server last
        for p in procs:
            clean &= p.alive()  # one that died before we stopped it is trouble worth keeping logs for
        codes = stop_processes([(p, signal.SIGTERM if p.name == "metadata" else signal.SIGKILL) for p in procs],
                               grace_s)
        clean &= all(code in (0, -signal.SIGTERM, -signal.SIGKILL) for code in codes)
        self.processes.clear()
        if self.etcd is not None:  # (etcd is gone: its data folder can go, and its janitor with it)
            self.etcd.remove_data()
            self.etcd = None
        if self._disk_folder is not None:  # (the store nodes are gone: so can the disk tier's files)
            self._disk_folder.remove()
            self._disk_folder = None
        logs, self._logs = self._logs, None
        if logs is not None:
            failed = not clean or keep_logs
            logs.close(failed or self._restarted, "the embedded cluster and workers",
                       KEPT_WHY if failed else KEPT_RESTARTED)
        if self._spawner is not None:
            self._spawner.shutdown(wait=False)
            self._spawner = None
        if self.emulated is not None:
            self.emulated.stop()
            self.emulated = None


def attach(master: str, metadata_url: str | None, protocol: str = "tcp", device: str = "",
           metrics_url: str | None = None) -> ClusterEndpoints:
    """Endpoints of an existing cluster. Checks the master's RPC port answers within 2 s, or for an HA cluster
    (``etcd://…``, :func:`attach_ha`) that etcd answers and a master leads. ``metrics_url``: the master's admin
    base, or for an HA cluster each master's, separated by commas. :class:`BadAddress` for a malformed or
    missing address, :class:`Unreachable` when nothing answers."""
    if is_etcd(master):
        return attach_ha(master, metadata_url, protocol, device, metrics_url)
    if metadata_url is None:
        raise BadAddress("metadata", None, "attaching to a master needs its metadata server's URL too")
    try:
        host, port = split_hostport(master)
    except ValueError as exc:
        raise BadAddress("master", master, str(exc)) from None
    if not metadata_url.startswith(("http://", "https://", "etcd://", "P2PHANDSHAKE")):
        raise BadAddress("metadata", metadata_url, f"expected a URL such as http://HOST:PORT/metadata, got "
                                                   f"{metadata_url!r}")
    _check_protocol(protocol)
    urls = _admin_urls(metrics_url)
    if len(urls) > 1:
        raise BadAddress("metrics_url", metrics_url, "several admin URLs are for the masters of an HA cluster "
                                                     "(an etcd:// master); give one")
    if not probe_tcp(host, port, timeout_s=2.0):
        raise Unreachable("Mooncake master", master, "TCP connect failed within 2 s")
    if metadata_url.startswith(("http://", "https://")) and http_get(metadata_url, timeout_s=2.0)[0] == 0:
        raise Unreachable("metadata server", metadata_url, "HTTP request failed within 2 s")
    return ClusterEndpoints(master=master, metadata_url=metadata_url, metrics_url=urls[0] if urls else None,
                            protocol=protocol, device=device, embedded=False, client_env=(("MC_LOG_LEVEL", "ERROR"),))


LEADER_WAIT_S = 12.0  # attaching to an HA cluster waits this long for a leader (a failover under way)


def attach_ha(master: str, metadata_url: str | None, protocol: str = "tcp", device: str = "",
              metrics_url: str | None = None) -> ClusterEndpoints:
    """Endpoints of an HA cluster whose masters elect their leader through the etcd of ``master``
    (``etcd://HOST:PORT[;HOST:PORT…]``); ``metadata_url``: None for the same etcd. :class:`BadAddress` for a
    malformed address, :class:`Unreachable` for an etcd that does not answer ``/health`` within 2 s or no
    master leading within :data:`LEADER_WAIT_S` (none runs, or they use another cluster id:
    ``MC_STORE_CLUSTER_ID``)."""
    try:
        endpoints = parse_etcd(master)
    except ValueError as exc:
        raise BadAddress("master", master, str(exc)) from None
    if metadata_url is not None and is_etcd(metadata_url):
        try:
            parse_etcd(metadata_url)
        except ValueError as exc:
            raise BadAddress("metadata", metadata_url, str(exc)) from None
    elif metadata_url is not None and not metadata_url.startswith(("http://", "https://")):
        raise BadAddress("metadata", metadata_url, f"expected etcd://HOST:PORT or an http:// metadata URL, got "
                                                   f"{metadata_url!r}")
    _check_protocol(protocol)
    masters = ha.admin_names(_admin_urls(metrics_url))
    if not ha.etcd_healthy(endpoints, timeout_s=2.0):
        raise Unreachable("etcd", master, "GET /health failed within 2 s")
    deadline = time.monotonic() + LEADER_WAIT_S
    while ha.master_view(endpoints) is None:
        if time.monotonic() > deadline:
            raise Unreachable("leading Mooncake master", master,
                              f"etcd answers, but no master leads cluster {ha.cluster_id()!r} there (no master_view "
                              "key): are the masters started with --enable_ha=true --ha_backend_connstring=… on this "
                              "etcd, with this cluster id (MC_STORE_CLUSTER_ID)?")
        time.sleep(0.25)
    url = (ha.serving_url(masters) or masters[0][1]) if masters else None
    return ClusterEndpoints(master=ha.etcd_url(endpoints), metadata_url=metadata_url or ha.etcd_url(endpoints),
                            metrics_url=url, protocol=protocol, device=device, embedded=False,
                            client_env=(("MC_LOG_LEVEL", "ERROR"), *ha.ha_client_env()), masters=masters)


PROTOCOLS = ("tcp", "rdma")
"""The transports a client of an attached cluster may use."""


def _check_protocol(protocol: str) -> None:
    if protocol not in PROTOCOLS:
        raise BadAddress("protocol", protocol, f"must be {' or '.join(PROTOCOLS)}, got {protocol!r}")


def _admin_urls(text: str | None) -> list[str]:
    """The masters' admin URLs (comma-separated), without a trailing ``/``; :class:`BadAddress` for one that is
    not ``http(s)://``."""
    urls = [u.strip().rstrip("/") for u in (text or "").split(",") if u.strip()]
    for u in urls:
        if not u.startswith(("http://", "https://")):
            raise BadAddress("metrics_url", text, "expected the masters' admin URLs, "
                                                  f"http://HOST:PORT[,http://HOST:PORT…], got {u!r}")
    return urls
