"""Where the pages go and who moves them: the store (an embedded cluster on loopback, or an attached one), the
worker topology (N prefill × M decode processes, the route, the store nodes, how workers join the segment),
emulated hosts and their links, and the listener remote workers join through.

:func:`cluster_from_args` checks every flag and sizes the embedded segment for the workload's working set
(:func:`kvtui.core.capacity.plan_store`); it starts nothing (attaching only checks that the cluster answers).
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kvtui.config.paths import path_arg
from kvtui.config.tiers import NO_TIERS, TierPlan, add_tier_arguments, tiers_from_args
from kvtui.core.defaults import DEFAULT_STORE_BYTES, DEFAULT_STORE_SIZE_TEXT, MIN_SEGMENT_BYTES
from kvtui.core.errors import KvtuiError, bad_value
from kvtui.core.layout import PageLayout
from kvtui.core.topology import (
    DEFAULT_ROUTE,
    DEFAULT_WORKERS,
    MAX_WORKERS,
    REMOTE_SLOTS,
    ROUTE_HELP,
    ROUTES,
    check_count,
)
from kvtui.core.verify import DEFAULT_VERIFY, SAMPLE_WORDS, VERIFY_MODES
from kvtui.mooncake.cluster import WORKER_CLIENTS, ClusterEndpoints, ClusterOptions
from kvtui.mooncake.errors import BadAddress, ClusterError, Conflict, MissingTool
from kvtui.mooncake.ha import HA_MAX, HA_MIN, HA_RPC_TIMEOUT_MS

if TYPE_CHECKING:
    from kvtui.mooncake.hosts import LinkSpec
    from workload.working_set import WorkingSet

DEFAULT_WORKER_CLIENT = "auto"
"""``--worker-client``'s default (:data:`~kvtui.mooncake.cluster.WORKER_CLIENTS`, or ``auto``)."""

TOKEN_ENV = "KVTUI_TOKEN"
"""The environment variable ``--token`` defaults to."""

PORT_FLAGS = ("master_port", "metrics_port", "metadata_port")
"""The embedded cluster's explicit listener ports (``--master-port``…)."""

ISOLATE_MODES = ("auto", "on", "off")
"""``--isolate-network``'s choices."""

LEASE_S = 2.0
"""``--lease-ttl``'s default (seconds) for an embedded master (Mooncake's own is 10 s). Every probe and read
grants a lease, and a leased page cannot be evicted, so the pages read within one lease stay pinned: with 10 s,
a multi-turn conversation's pages stayed pinned for 10 s after it restarted, and at ~10 requests/s the
monitor's default store refused 77 puts in 2.5 minutes of multi-turn (none with 2 s). The lease only has to
outlast a reload (a probe, then reads in batches of at most 256 MiB: well under a second on loopback)."""

LEASE_BATCHES = 4
"""With ``--link``, the default lease outlasts this many 256 MiB read batches at the link's rate."""


FLAGS = {"master": "--master", "metadata": "--metadata", "metrics_url": "--metrics-url", "protocol": "--protocol",
         "ha": "--ha N", "hosts": "--hosts auto", "ports": "the port flags", "worker_client": "--worker-client dummy",
         "store_nodes": "--store-nodes", "disk_bytes": "--disk-size", "store_bytes": "--store-size",
         "segment_on": "--segment-on prefill|decode"}
"""The flag of each setting the backend's errors name (:mod:`kvtui.mooncake.errors`)."""


def cluster_error_text(exc: ClusterError) -> str:
    """The one line a user reads for a backend error, naming the flags of the settings it is about."""
    if isinstance(exc, BadAddress):  # ("--master must be …", "--master 'x': …", "--metadata: expected …")
        joint = " " if exc.why.startswith(("must ", "'")) else ": "
        return f"{FLAGS.get(exc.what, exc.what)}{joint}{exc.why}"
    if isinstance(exc, Conflict):
        return (f"{FLAGS.get(exc.setting, exc.setting)} cannot go with {FLAGS.get(exc.other, exc.other)}: "
                f"{exc.why}")
    if isinstance(exc, MissingTool):
        return f"{exc}; `kvtui doctor` checks it"
    return str(exc)


# -- flags ----------------------------------------------------------------------------------------------------
def add_topology_arguments(p: argparse.ArgumentParser) -> None:
    """Add the group of worker flags to a command's parser."""
    g = p.add_argument_group("workers (N prefill × M decode processes, each with its own store client)")
    g.add_argument("--prefill-workers", type=int, default=DEFAULT_WORKERS, metavar="N",
                   help=f"prefill worker processes, 1-{MAX_WORKERS} (default {DEFAULT_WORKERS}); each request's "
                        "publish goes to the one with the fewest requests under way")
    g.add_argument("--decode-workers", type=int, default=DEFAULT_WORKERS, metavar="M",
                   help=f"decode worker processes, 1-{MAX_WORKERS} (default {DEFAULT_WORKERS}); --concurrency is "
                        "per decode worker, so M × --concurrency requests are in flight in all")
    g.add_argument("--store-nodes", type=int, default=DEFAULT_WORKERS, metavar="K",
                   help=f"embedded, with --segment-on store: store node processes, 1-{MAX_WORKERS} (default "
                        f"{DEFAULT_WORKERS}), each contributing an equal share of --store-size (with --hosts auto, "
                        "each on a host of its own); Mooncake's allocator spreads the pages over them")
    g.add_argument("--worker-client", choices=("auto", *WORKER_CLIENTS), default=DEFAULT_WORKER_CLIENT,
                   help="how the workers join an embedded store: dummy: as dummy clients of the wheel's "
                        "standalone real client (mooncake_client), which owns the segment, so pages move "
                        "through shared memory on this host; real: each worker is a real client and pages "
                        "cross TCP from a store node; auto: dummy where it is exact (embedded, --segment-on "
                        "store, one store node, no --hosts, one prefill worker: the only writer), else real "
                        f"(default {DEFAULT_WORKER_CLIENT})")
    g.add_argument("--route", choices=ROUTES, default=DEFAULT_ROUTE,
                   help="which decode worker a request goes to (default " + DEFAULT_ROUTE + "): "
                        + "; ".join(f"{k}: {v}" for k, v in ROUTE_HELP.items()))


def add_host_arguments(g: argparse._ActionsContainer) -> None:
    """Add ``--hosts`` and ``--link`` to the argument group ``g``."""
    g.add_argument("--hosts", choices=("off", "auto"), default="off",
                   help="embedded mode: auto puts the master (with the metadata server), the store node and each "
                        "worker on an emulated host of its own: a network namespace with its own address "
                        "(10.77.0.x) on a private bridge inside kvtui's namespace, so store traffic crosses real "
                        "kernel TCP between hosts (needs root; default off)")
    g.add_argument("--link", metavar="RATE[,DELAY]", default=None,
                   help="with --hosts auto: shape every host's link in both directions with tc, rate in bit/s "
                        "with tc's units (25gbit, 1gbit, 500mbit) and an optional one-way delay (200us, 1ms; "
                        "needs the kernel's netem). Default: unshaped veth links")


def add_cluster_arguments(p: argparse.ArgumentParser) -> None:
    """``--store-size``, ``--segment-on``, attach-mode flags, ``--lease-ttl``, ``--log-dir``, the network, and
    the worker topology (``--prefill-workers``, ``--decode-workers``, ``--route``…)."""
    add_topology_arguments(p)
    g = p.add_argument_group("store (embedded by default; --master/--metadata attach to an existing cluster; --ha N "
                             "embeds an HA cluster)")
    g.add_argument("--store-size", default=None, metavar="BYTES",
                   help=f"embedded store segment size, bytes with units (1GiB, 512MiB, 20000000: to the byte; at "
                        f"least {MIN_SEGMENT_BYTES >> 20}MiB; default: {DEFAULT_STORE_SIZE_TEXT}, or what the "
                        "workload's working set needs below the 90%% eviction watermark, up to half the free "
                        "memory, said in one line)")
    g.add_argument("--segment-on", choices=("store", "prefill", "decode"), default="store",
                   help="where the embedded segment lives: a separate store node (default; decode reads go "
                        "through shared memory with --worker-client dummy, the default here, or cross TCP with "
                        "real) or co-located with the prefill or decode workers (with several, each contributes "
                        "an equal share of --store-size)")
    g.add_argument("--master", metavar="HOST:PORT|etcd://HOST:PORT",
                   help="attach: the master's RPC address, or the etcd of an HA cluster whose masters elect their "
                        "leader through it, etcd://HOST:PORT[;HOST:PORT…] (starts nothing; default: an embedded "
                        "master on loopback)")
    g.add_argument("--metadata", metavar="URL",
                   help="attach: metadata server URL, e.g. http://HOST:8080/metadata (needed with a HOST:PORT "
                        "--master; default: the embedded one, or with an etcd:// --master the same etcd)")
    g.add_argument("--metrics-url", metavar="URL[,URL…]",
                   help="attach: master admin HTTP base for /metrics, e.g. http://HOST:9003; for an HA cluster "
                        "every master's, separated by commas (the leader's is read; etcd knows only the leader's "
                        "RPC address). Default: none, store panel without master metrics")
    g.add_argument("--ha", type=int, default=0, metavar="N",
                   help=f"embedded: an HA cluster of N masters ({HA_MIN}-{HA_MAX}) with OpLog, electing their "
                        "leader through an etcd kvtui starts (Debian's etcd-server; its data in a temporary folder, "
                        "removed at exit); clients find the leader through etcd, and a leader that dies or hangs is "
                        f"replaced in ~10 s (client RPC timeout {HA_RPC_TIMEOUT_MS} ms unless MC_RPC_TIMEOUT_MS is "
                        "set). Default 0: one master, no etcd")
    g.add_argument("--protocol", choices=("tcp", "rdma"), default="tcp", help="transfer protocol (default tcp)")
    g.add_argument("--device", default="", metavar="NAME",
                   help="RDMA device name (with --protocol rdma; default: Mooncake picks)")
    g.add_argument("--lease-ttl", type=float, default=None, metavar="SECONDS",
                   help=f"embedded master's read lease (default {LEASE_S:g} s, or with --link as long as "
                        f"{LEASE_BATCHES} read batches of 256 MiB take at its rate; Mooncake's own default is 10 s). "
                        "Every probe and read grants one, and a leased page cannot be evicted: the pages read "
                        "within one lease stay in the store")
    g.add_argument("--log-dir", type=path_arg, metavar="DIR", help="where native logs of the cluster and workers go, "
                   "kept (default: a new /tmp/kvtui-logs-* folder, removed when the run ends without trouble, kept "
                   "and named on stderr when a process died or start-up failed)")
    g.add_argument("--isolate-network", choices=ISOLATE_MODES, default="auto",
                   help="embedded mode: run the cluster and workers in a private network namespace so Mooncake's "
                        "all-interface transfer listeners are reachable only on loopback (auto: when permitted, "
                        "e.g. as root; on: fail if not possible; default auto; env KVTUI_ISOLATE overrides auto)")
    add_host_arguments(g)
    g.add_argument("--master-port", type=int, default=0, metavar="PORT",
                   help="embedded: master RPC port (default: a free one)")
    g.add_argument("--metrics-port", type=int, default=0, metavar="PORT",
                   help="embedded: master metrics/admin HTTP port (default: a free one)")
    g.add_argument("--metadata-port", type=int, default=0, metavar="PORT",
                   help="embedded: metadata server port (default: a free one)")
    g.add_argument("--read-streams", type=int, default=1, metavar="N",
                   help="concurrent batch_get_into calls one reload of 8 MiB per stream or more is split across "
                        "(default 1; `kvtui bench --max-streams N` compares 1..N on this machine)")
    add_verify_argument(g)
    add_tier_arguments(g)


VERIFY_HELP = (
    "how the decode worker checks each page it loads: full (default) compares every byte with what the page's "
    f"key says it holds; sampled compares every chunk header (one word per 256 KiB) and {SAMPLE_WORDS:,} random "
    "words a page, a sample drawn anew for each page, and catches every time a page of another key, a buffer "
    "shifted by any number of words and a page torn or zeroed at chunk granularity, but catches a few flipped "
    f"bytes only where the sample lands: one corrupted word of a page of W words with probability about "
    f"({SAMPLE_WORDS:,} + W/32,768)/W, 0.06%% for 14 MiB pages (a page of at most {SAMPLE_WORDS:,} words is "
    "checked whole)")
"""``--verify``'s help (:mod:`kvtui.core.verify` says the same in full)."""


def add_verify_argument(g: argparse._ActionsContainer, more: str = "") -> None:
    """``--verify full|sampled``: how loaded pages are checked (:data:`VERIFY_HELP`, then ``more``)."""
    g.add_argument("--verify", choices=VERIFY_MODES, default=DEFAULT_VERIFY, help=VERIFY_HELP + more)


def verify_from_args(args: argparse.Namespace) -> str:
    """``--verify`` as given (argparse checked it against :data:`~kvtui.core.verify.VERIFY_MODES`)."""
    return str(args.verify)


def add_listen_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--listen`` and ``--token`` to a command's parser."""
    g = p.add_argument_group("remote workers (attach mode: --master/--metadata)")
    g.add_argument("--listen", metavar="[HOST:]PORT", default=None,
                   help=f"accept up to {REMOTE_SLOTS} decode and {REMOTE_SLOTS} prefill workers from other machines "
                        "(kvtui worker --join) on "
                        "this address; a bare PORT listens on loopback only (default: no listener)")
    g.add_argument("--token", default=None, metavar="T",
                   help=f"the shared secret a joining worker must present (required with --listen; default: the "
                        f"{TOKEN_ENV} environment variable); checked by HMAC challenge, a wrong one is refused "
                        "and logged")


# -- single flags ---------------------------------------------------------------------------------------------
def store_size(text: str) -> int:
    """``--store-size`` in bytes; ``KvtuiError`` if it is not a size, is below Mooncake's smallest segment
    (``MIN_SEGMENT_BYTES``) or is more than this machine's memory."""
    import psutil

    from kvtui.core.units import parse_bytes

    least = f"--store-size must be at least {MIN_SEGMENT_BYTES >> 20} MiB (Mooncake's smallest segment)"
    if str(text).strip().startswith("-"):
        raise KvtuiError(f"{least}, got {text.strip()}")
    try:
        store_bytes = parse_bytes(text)
    except ValueError as exc:
        raise KvtuiError(f"--store-size: {exc}") from None
    if store_bytes < MIN_SEGMENT_BYTES:
        raise KvtuiError(f"{least}, got {store_bytes} bytes")
    total = psutil.virtual_memory().total
    if store_bytes > total:
        raise KvtuiError(f"--store-size {text} is more than this machine's memory ({total >> 20} MiB)")
    return store_bytes


def link_option(text: str) -> LinkSpec:
    """``--link``'s :class:`~kvtui.mooncake.hosts.LinkSpec`; ``KvtuiError`` (one line) when malformed."""
    from kvtui.mooncake.hosts import parse_link

    try:
        return parse_link(text)
    except ValueError as exc:
        raise KvtuiError(f"--link {exc}") from None


def default_lease_s(link: LinkSpec | None) -> float:
    """``--lease-ttl``'s default: :data:`LEASE_S`, or with a shaped ``link`` the time :data:`LEASE_BATCHES`
    read batches (``MAX_BATCH_BYTES``) take at its rate, if longer (seconds, rounded up to 0.1 s)."""
    from kvtui.engine.connector import MAX_BATCH_BYTES

    if link is None:
        return LEASE_S
    return max(LEASE_S, math.ceil(LEASE_BATCHES * MAX_BATCH_BYTES / link.rate_bytes_per_s * 10) / 10)


def check_log_dir(path: str | None) -> None:
    """``--log-dir``: create the folder now (``KvtuiError`` naming the flag when it cannot be one)."""
    if path:
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KvtuiError(f"--log-dir: cannot use {path} as a folder ({exc.strerror})") from None


# -- the plan -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Topology:
    """N prefill × M decode worker processes, how a request picks its decode worker (``route``), and K store
    nodes (:mod:`kvtui.core.topology`)."""

    prefill_workers: int = DEFAULT_WORKERS
    decode_workers: int = DEFAULT_WORKERS
    route: str = DEFAULT_ROUTE
    store_nodes: int = DEFAULT_WORKERS

    @property
    def several(self) -> bool:
        """More than one worker of a role: a dead worker is replaced and the run goes on."""
        return self.prefill_workers > 1 or self.decode_workers > 1


@dataclass(frozen=True)
class ListenPlan:
    """Where remote workers join (``kvtui worker --join``) and the secret they present."""

    host: str
    port: int
    token: str
    text: str = ""  # --listen as given (what a summary's setup states)

    @property
    def address(self) -> str:
        """``HOST:PORT`` as a summary states it."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ClusterPlan:
    """The store and the workers of a run.

    ``endpoints``: the attached cluster (it answered when the plan was made), None for an embedded one;
    ``store_bytes``: the embedded segment (bytes, sized for the working set unless ``--store-size``);
    ``store_note``: the one line saying what size was chosen and why, or warning that the store is too small
    (``""``: nothing to say; a warning starts with ``warning``); ``store_sized``: kvtui chose ``store_bytes``
    for the working set (embedded, no ``--store-size``); ``segment_on``: ``store``, ``prefill`` or
    ``decode``; ``worker_client``: ``real`` or ``dummy`` (``--worker-client auto`` resolved);
    ``lease_ttl_s`` / ``client_ttl_s``: the embedded master's read lease and client TTL (s);
    ``ports``: explicit listener ports by :data:`PORT_FLAGS` name (0: a free one);
    ``isolate``: ``--isolate-network`` resolved (``on`` with emulated hosts, ``off`` with explicit ports);
    ``hosts`` / ``link``: emulated hosts and their shaped links; ``listen``: the remote-worker listener;
    ``ha``: the masters of an embedded HA cluster (``--ha N``; 0: one master, no etcd); ``verify``: how the
    workers check a loaded page, ``full`` or ``sampled`` (``--verify``, :mod:`kvtui.core.verify`); ``tiers``:
    the embedded store's disk tier (``--disk-size``, :mod:`kvtui.config.tiers`)."""

    endpoints: ClusterEndpoints | None
    store_bytes: int
    store_note: str
    segment_on: str
    topology: Topology
    worker_client: str
    read_streams: int = 1
    lease_ttl_s: float = LEASE_S
    client_ttl_s: int = 10
    log_dir: str | None = None
    ports: tuple[tuple[str, int], ...] = ()
    isolate: str = "auto"
    hosts: bool = False
    link: LinkSpec | None = None
    listen: ListenPlan | None = None
    protocol: str = "tcp"
    ha: int = 0
    store_sized: bool = False
    verify: str = DEFAULT_VERIFY
    tiers: TierPlan = NO_TIERS

    @property
    def attached(self) -> bool:
        """An existing cluster (``--master``): kvtui starts nothing of its own."""
        return self.endpoints is not None

    @property
    def remote_slots(self) -> int:
        """Relay slots for remote workers of each role (0 without ``--listen``)."""
        return REMOTE_SLOTS if self.listen is not None else 0

    @property
    def link_text(self) -> str | None:
        """``--link`` normalised (``1Gbit`` → ``1gbit``), so that runs on the same link compare equal."""
        return self.link.text() if self.link is not None else None

    def port(self, name: str) -> int:
        """The explicit port of :data:`PORT_FLAGS` ``name`` (0: a free one)."""
        return dict(self.ports).get(name, 0)

    def cluster_options(self, isolation: str | None, log_dir: str | None = None) -> ClusterOptions:
        """The embedded cluster's :class:`~kvtui.mooncake.cluster.ClusterOptions` (``isolation``: the line
        :func:`kvtui.launch.isolate` returned; None when attached)."""
        from kvtui.core.topology import worker_names

        t = self.topology
        return ClusterOptions(store_bytes=self.store_bytes, segment_on=self.segment_on,
                              worker_names=tuple(worker_names("prefill", t.prefill_workers)
                                                 + worker_names("decode", t.decode_workers)),
                              lease_ttl_ms=int(self.lease_ttl_s * 1000), client_ttl_s=self.client_ttl_s,
                              log_dir=log_dir if log_dir is not None else self.log_dir,
                              rpc_port=self.port("master_port"), metrics_port=self.port("metrics_port"),
                              metadata_port=self.port("metadata_port"), isolation=isolation, hosts=self.hosts,
                              link=self.link, store_nodes=self.topology.store_nodes, worker_client=self.worker_client,
                              ha=self.ha, disk_bytes=self.tiers.disk_bytes, disk_path=self.tiers.disk_path,
                              replicate_hot=self.tiers.replicate_hot)


def _segments(segment_on: str, topology: Topology) -> int:
    """How many segments an embedded store of ``topology`` has: one per store node, or per worker of the role
    the segment is on."""
    return {"store": topology.store_nodes, "prefill": topology.prefill_workers,
            "decode": topology.decode_workers}[segment_on]


def topology_from_args(args: argparse.Namespace) -> Topology:
    """The :class:`Topology` of the flags; ``KvtuiError`` (one line) for a count out of range, and for
    ``--store-nodes`` above 1 without an embedded ``--segment-on store``."""
    t = Topology(getattr(args, "prefill_workers", DEFAULT_WORKERS), getattr(args, "decode_workers", DEFAULT_WORKERS),
                 getattr(args, "route", DEFAULT_ROUTE), getattr(args, "store_nodes", DEFAULT_WORKERS))
    try:
        check_count("--prefill-workers", t.prefill_workers)
        check_count("--decode-workers", t.decode_workers)
        check_count("--store-nodes", t.store_nodes)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    if t.store_nodes > 1 and (getattr(args, "segment_on", "store") != "store" or getattr(args, "master", None)):
        raise KvtuiError("--store-nodes starts embedded store nodes: it needs --segment-on store and no --master")
    return t


def listen_from_args(args: argparse.Namespace) -> ListenPlan | None:
    """The :class:`ListenPlan` of ``--listen``/``--token``, None without ``--listen``; ``KvtuiError`` (one
    line) for a malformed address, a missing token, or ``--listen`` without an attached cluster."""
    text = getattr(args, "listen", None)
    if text is None:
        if getattr(args, "token", None):
            raise KvtuiError("--token is the secret of --listen: add --listen [HOST:]PORT")
        return None
    host, sep, port = str(text).rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536 or (sep and not host):
        raise KvtuiError(f"--listen must be [HOST:]PORT with a port within 1-65535, got {text!r}")
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    if not token:
        raise KvtuiError(f"--listen needs --token T (or {TOKEN_ENV}): remote workers must present it")
    if not getattr(args, "master", None):
        raise KvtuiError("--listen: remote workers join an attached cluster; add --master HOST:PORT and "
                         "--metadata URL (both sides use the same one)")
    return ListenPlan(host, int(port), token, str(text))


def hosts_from_args(args: argparse.Namespace) -> tuple[bool, LinkSpec | None]:
    """``(hosts, link)``: whether to run emulated hosts, and the :class:`~kvtui.mooncake.hosts.LinkSpec` of
    ``--link`` or None. ``KvtuiError`` (one line) for ``--link`` without ``--hosts auto`` or malformed, and for
    ``--hosts auto`` with ``--master``/``--metadata`` (checked before attaching), with ``--isolate-network off``
    or with an explicit listener port. (``KVTUI_ISOLATE`` overrides ``--isolate-network auto`` only: emulated
    hosts always run isolated.)"""
    hosts = getattr(args, "hosts", "off") == "auto"
    link = None
    if getattr(args, "link", None) is not None:
        if not hosts:
            raise KvtuiError("--link shapes the links of emulated hosts: add --hosts auto")
        link = link_option(args.link)
    if not hosts:
        return hosts, link
    if getattr(args, "master", None) or getattr(args, "metadata", None):
        raise KvtuiError("--hosts auto runs the embedded cluster on emulated hosts; it cannot attach (--master)")
    if args.isolate_network == "off":
        raise KvtuiError("--hosts auto lives inside kvtui's private network namespace: drop --isolate-network off")
    for flag in PORT_FLAGS:
        if getattr(args, flag, 0):
            raise KvtuiError(f"--{flag.replace('_', '-')}: with --hosts auto the cluster listens on its emulated "
                             "host's address, which this host cannot reach; drop the port")
    return hosts, link


def ha_from_args(args: argparse.Namespace) -> int:
    """``--ha N``: the masters of an embedded HA cluster (0 without it); ``KvtuiError`` (one line) for N out of
    range, with an attached cluster, emulated hosts or explicit ports, or without an etcd binary here."""
    n = getattr(args, "ha", 0) or 0
    if not n:
        return 0
    if not HA_MIN <= n <= HA_MAX:
        raise KvtuiError(f"--ha must be within {HA_MIN}-{HA_MAX} masters, got {n}")
    if getattr(args, "master", None) or getattr(args, "metadata", None):
        raise KvtuiError("--ha starts an embedded HA cluster; to attach to one, drop --ha and give --master "
                         "etcd://HOST:PORT")
    if getattr(args, "hosts", "off") == "auto":
        raise KvtuiError("--ha runs its etcd and masters on loopback; it does not combine with --hosts auto")
    for flag in PORT_FLAGS:
        if getattr(args, flag, 0):
            raise KvtuiError(f"--{flag.replace('_', '-')}: with --ha every master has ports of its own, picked free; "
                             "drop the port")
    from kvtui.mooncake.ha import ETCD_REMEDY, etcd_binary

    if etcd_binary() is None:
        raise KvtuiError(f"--ha needs etcd, which is not installed here ({ETCD_REMEDY}); `kvtui doctor` checks it")
    return n


def check_segment_share(segment_on: str, store_bytes: int, page_bytes: int, topology: Topology) -> None:
    """Each process of the segment's place (``--segment-on``: the store nodes, or the workers of that role)
    contributes ``store_bytes`` / their count; ``KvtuiError`` (one line) when that share is below
    Mooncake's smallest segment or one page."""
    share = {"prefill": topology.prefill_workers, "decode": topology.decode_workers,
             "store": topology.store_nodes}.get(segment_on, 1)
    if share > 1 and store_bytes // share < max(MIN_SEGMENT_BYTES, page_bytes):
        flag = f"--store-nodes {share}" if segment_on == "store" else f"--segment-on {segment_on}"
        raise KvtuiError(f"{flag} splits the store into {share} segments of {store_bytes // share / 2**20:g} MiB, "
                         f"below Mooncake's smallest segment ({MIN_SEGMENT_BYTES >> 20} MiB) or one page "
                         f"({page_bytes / 2**20:g} MiB); raise --store-size or use fewer")


def resolve_worker_client(choice: str, *, attached: bool, segment_on: str, topology: Topology, hosts: bool) -> str:
    """``--worker-client`` ``choice`` resolved to ``real`` or ``dummy``. A dummy client needs the standalone
    real client on its own host and gives up exact publish accounting between writers (its put sessions
    answer INVALID_PARAMS, :meth:`kvtui.mooncake.client.StoreClient.batch_put_if_absent`), so ``dummy`` is
    refused in one line (``KvtuiError``) and ``auto`` gives ``real`` unless the store is embedded, on a store
    node of its own (one), without emulated hosts, and published by one prefill worker."""
    why = ("--master (an attached cluster)" if attached
           else f"--segment-on {segment_on}" if segment_on != "store"
           else f"--store-nodes {topology.store_nodes}" if topology.store_nodes != 1 else "--hosts auto" if hosts
           else f"--prefill-workers {topology.prefill_workers} (several writers)" if topology.prefill_workers != 1
           else "")
    if choice == "dummy" and why:
        raise KvtuiError(f"--worker-client dummy needs an embedded store on one store node of this host and one "
                         f"prefill worker; drop {why} or use --worker-client real")
    return "real" if choice == "real" or why else "dummy"


def _ports(args: argparse.Namespace) -> tuple[tuple[str, int], ...]:
    """The explicit ports given, each checked (range, no two alike)."""
    ports: dict[int, str] = {}
    for flag in PORT_FLAGS:
        port = getattr(args, flag, 0)
        if port and not (1 <= port <= 65535):
            raise KvtuiError(f"--{flag.replace('_', '-')} must be within 1-65535, got {port}")
        if port and port in ports:
            raise KvtuiError(f"--{flag.replace('_', '-')} and --{ports[port].replace('_', '-')} are both {port}; "
                             "each listener needs its own port")
        if port:
            ports[port] = flag
    return tuple((name, port) for port, name in ports.items())


def _say_size(ws: WorkingSet | None, layout: PageLayout, given: int | None, given_text: str | None,
              endpoints: ClusterEndpoints | None) -> tuple[int, str]:
    """``(segment bytes, the line to say)`` for working set ``ws`` (:func:`kvtui.core.capacity.plan_store`).
    Attach mode sizes nothing: it warns when the cluster's scraped capacity is too small, and refuses a cluster
    whose capacity is 0 (no segment mounted: every put would fail). ``KvtuiError`` when the segment, or this
    machine's free memory, cannot hold one prompt."""
    from kvtui.core.capacity import attached_plan_line, plan_store

    watermark = ClusterOptions.eviction_high_watermark
    if endpoints is not None:
        line = ""
        if endpoints.metrics_url:
            from kvtui.mooncake.samplers import StoreSampler

            capacity = StoreSampler(endpoints.metrics_url).sample().get("capacity_bytes")
            if capacity == 0:
                raise KvtuiError(f"the cluster at {endpoints.master} has 0 bytes of capacity (its master's /metrics "
                                 "says master_total_capacity_bytes 0): no client has mounted a segment, so no page "
                                 "could be stored; mount one (e.g. mooncake_client --global_segment_size …) first")
            if capacity and ws is not None:
                line = attached_plan_line(ws, layout.page_bytes, capacity, watermark)
        return (given if given is not None else DEFAULT_STORE_BYTES), line
    if ws is None:
        return (given if given is not None else DEFAULT_STORE_BYTES), ""
    import psutil

    try:
        plan = plan_store(ws, layout.page_bytes, watermark, given_bytes=given, given_text=given_text or "",
                          available_bytes=psutil.virtual_memory().available, default_bytes=DEFAULT_STORE_BYTES,
                          page_tokens=layout.page_tokens)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    return plan.segment_bytes, plan.line


def cluster_from_args(args: argparse.Namespace, layout: PageLayout, working_set: WorkingSet | None) -> ClusterPlan:
    """The :class:`ClusterPlan` of the flags for pages of ``layout`` and the workload's ``working_set``
    (None: size nothing for it). Attach mode checks that the master (and an HTTP metadata server) answer.
    ``KvtuiError`` (one line naming the flag) for any bad value."""
    from kvtui.mooncake.cluster import attach

    given = store_size(args.store_size) if args.store_size is not None else None
    default_bytes = given if given is not None else DEFAULT_STORE_BYTES
    if args.read_streams < 1:
        raise bad_value("--read-streams", "at least 1", args.read_streams)
    if args.lease_ttl is not None and not (args.lease_ttl > 0):
        raise bad_value("--lease-ttl", "positive seconds", args.lease_ttl)
    topology = topology_from_args(args)
    listen = listen_from_args(args)
    hosts, link = hosts_from_args(args)  # (before attaching: --hosts auto with --master is refused as such)
    ha = ha_from_args(args)
    lease_s = args.lease_ttl if args.lease_ttl is not None else default_lease_s(link)
    endpoints = None
    if args.master or args.metadata:
        from kvtui.mooncake.net import is_etcd

        if not (args.master and (args.metadata or is_etcd(args.master))):
            raise KvtuiError("attach mode needs both --master HOST:PORT and --metadata URL (or an etcd:// --master)")
        tiers_from_args(args, 0, attached=True)  # (the embedded store's tier flags: refused before reaching out)
        try:
            endpoints = attach(args.master, args.metadata, args.protocol, args.device, args.metrics_url)
        except ClusterError as exc:
            raise KvtuiError(cluster_error_text(exc)) from None
    if endpoints is None and layout.page_bytes > default_bytes:
        raise KvtuiError(f"a page ({layout.page_bytes} bytes) is larger than the store segment "
                         f"({default_bytes} bytes); raise --store-size or shrink the layout")
    check_log_dir(args.log_dir)
    ports = _ports(args)
    store_bytes, note = _say_size(working_set, layout, given, args.store_size, endpoints)
    if endpoints is None:
        check_segment_share(args.segment_on, store_bytes, layout.page_bytes, topology)
    client = resolve_worker_client(getattr(args, "worker_client", DEFAULT_WORKER_CLIENT),
                                   attached=endpoints is not None, segment_on=args.segment_on, topology=topology,
                                   hosts=hosts)
    mode = args.isolate_network
    if ports and mode == "auto" and not hosts:
        mode = "off"  # explicit ports are meant to be reached (and checked) on this host's loopback
    if hosts:
        mode = "on"  # (the hosts' namespaces and bridge must not touch the machine's own network)
    tiers = tiers_from_args(args, store_bytes, attached=endpoints is not None,
                            segments=_segments(args.segment_on, topology))
    if tiers.disk and working_set is not None:
        from kvtui.core.capacity import tiered_line

        note = tiered_line(working_set, layout.page_bytes, ClusterOptions.eviction_high_watermark, store_bytes,
                           tiers.disk_bytes)
    return ClusterPlan(endpoints=endpoints, store_bytes=store_bytes, store_note=note, segment_on=args.segment_on,
                       topology=topology, worker_client=client, read_streams=args.read_streams,
                       lease_ttl_s=lease_s, log_dir=args.log_dir, ports=ports, isolate=mode, hosts=hosts,
                       link=link, listen=listen, protocol=args.protocol, ha=ha,
                       store_sized=endpoints is None and given is None and working_set is not None,
                       verify=verify_from_args(args),
                       tiers=tiers)

