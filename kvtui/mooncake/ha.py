"""HA Mooncake clusters: several masters elect a leader through etcd (``--enable_ha``), and kvtui's own etcd.

A client of such a cluster names etcd, not a master: ``etcd://HOST:PORT[;HOST:PORT…]`` is both its master
address and its metadata server (etcd holds the segments' transfer descriptors too). The masters keep their
view in etcd under ``mooncake-store/<cluster id>/master_view`` (the leader's RPC ``HOST:PORT`` and nothing
else: the masters' admin URLs are not in etcd, so kvtui is told them, ``--metrics-url URL,URL…``, or knows
them because it started the masters). Each master's admin HTTP endpoint says what it is:

* ``/health``: JSON with ``role`` (``leader`` | ``standby``), ``ha_state`` (``standby`` | ``catching_up`` (a
  standby applying the OpLog) | ``candidate`` | ``leader_warmup`` | ``serving``), ``leader_address`` (the
  leader's RPC address, as the master sees it);
* ``/metrics``: ``ha_oplog_standby_lag`` (OpLog entries a standby has not applied yet).

A master that says ``leader`` does not accept requests until it is ``serving`` (about 5 s later: the
warm-up), so readiness and the end of a failover are both "a master is serving".

The embedded etcd (:class:`EtcdServer`) runs like every cluster process (:func:`kvtui.runtime.procs.spawn`: dies
with kvtui, own process group, log in the log folder) on free loopback ports, with a data folder of its own
in a temporary folder. That folder is removed when the cluster stops, and, when kvtui is killed (SIGKILL), by a
janitor (:func:`kvtui.runtime.procs.spawn_janitor`) that outlives kvtui for that moment only.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from kvtui.core.panels import MasterRow
from kvtui.mooncake import tiers
from kvtui.mooncake.errors import MissingTool
from kvtui.mooncake.net import etcd_url, free_port, http_get, parse_etcd, parse_metrics, probe_tcp, split_hostport
from kvtui.runtime.procs import spawn_janitor

DEFAULT_CLUSTER_ID = "mooncake_cluster"  # MC_STORE_CLUSTER_ID's default (the masters' --cluster_id)
HA_MIN, HA_MAX = 2, 5  # --ha N: masters of an embedded HA cluster
HA_RPC_TIMEOUT_MS = 2000
"""``MC_RPC_TIMEOUT_MS`` kvtui gives every store client of an HA cluster (unless the environment sets it): how
long one master RPC may take. Mooncake's default, 30 s, is what each call in flight costs when the leader
hangs (SIGSTOP, a stalled host) instead of dying: the client fails over only once its calls time out. With
2 s a hung leader costs about as much as a dead one (the standby needs ~10 s to serve anyway), and a master
RPC on loopback takes milliseconds, so 2 s is far from timing out healthy calls."""
ETCD_BINARY_ENV = "KVTUI_ETCD"  # the etcd binary to run, when not the one on PATH


def cluster_id() -> str:
    """The cluster whose master view clients read (``MC_STORE_CLUSTER_ID``, else Mooncake's default)."""
    return os.environ.get("MC_STORE_CLUSTER_ID") or DEFAULT_CLUSTER_ID


def etcd_healthy(endpoints: Sequence[tuple[str, int]], timeout_s: float = 1.0) -> bool:
    """True when one of ``endpoints`` answers ``GET /health`` with ``{"health":"true"}``."""
    for host, port in endpoints:
        status, body = http_get(f"http://{host}:{port}/health", timeout_s=timeout_s)
        if status == 200 and '"true"' in body:
            return True
    return False


def etcd_read(endpoints: Sequence[tuple[str, int]], key: str, timeout_s: float = 1.0) -> tuple[bool, str | None]:
    """``(an endpoint answered, the value of key (UTF-8) or None when absent)`` from the first endpoint that
    answers (etcd's JSON gateway, ``POST /v3/kv/range``)."""
    import urllib.error
    import urllib.request

    body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
    for host, port in endpoints:
        try:
            req = urllib.request.Request(f"http://{host}:{port}/v3/kv/range", data=body, method="POST")
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                kvs = json.loads(resp.read()).get("kvs") or []
        except (OSError, ValueError):
            continue
        return True, base64.b64decode(kvs[0].get("value", "")).decode("utf-8", "replace") if kvs else None
    return False, None


def etcd_get(endpoints: Sequence[tuple[str, int]], key: str, timeout_s: float = 1.0) -> str | None:
    """The value of ``key`` (UTF-8) from the first endpoint that answers; None when the key is absent or no
    endpoint answers (:func:`etcd_read` tells the two apart)."""
    return etcd_read(endpoints, key, timeout_s)[1]


def master_view_key() -> str:
    """The etcd key where the masters write the leader's RPC address."""
    return f"mooncake-store/{cluster_id()}/master_view"


def master_view(endpoints: Sequence[tuple[str, int]], timeout_s: float = 1.0) -> str | None:
    """The leader's RPC ``HOST:PORT`` as the masters wrote it into etcd; None while no master leads (the key
    lives on the leader's etcd lease, ~5 s after it died) or etcd does not answer."""
    value = etcd_get(endpoints, master_view_key(), timeout_s)
    return value.strip() or None if value is not None else None


# -- the masters, as their admin endpoints say ----------------------------------------------------------------
ROLE_WORDS = {"serving": "leader", "leader_warmup": "warm-up", "candidate": "candidate", "standby": "standby",
              "catching_up": "catch-up"}
"""``/health``'s ``ha_state`` → the word the Processes panel and observe mode show."""


@dataclass(frozen=True)
class MasterState:
    """One master of an HA cluster as its admin endpoint answered: ``name`` (``master-0`` …), ``url`` (admin
    base), ``up`` (``/health`` answered), ``role`` / ``ha_state`` (its words), ``leader`` (the leader's RPC
    address as it sees it; None when it knows none), ``lag`` (``ha_oplog_standby_lag``; None when unknown)."""

    name: str
    url: str
    up: bool
    role: str = ""
    ha_state: str = ""
    leader: str | None = None
    lag: int | None = None

    @property
    def serving(self) -> bool:
        """The leader, accepting requests."""
        return self.up and self.ha_state == "serving"

    @property
    def word(self) -> str:
        """What it is in one word: ``leader`` (serving), ``warm-up``, ``candidate``, ``standby``, ``catch-up``,
        ``down``."""
        if not self.up:
            return "down"
        return ROLE_WORDS.get(self.ha_state, self.ha_state or self.role or "?")

    def as_row(self) -> MasterRow:
        """Plain data for a frame's store panel (``masters``)."""
        row = MasterRow(name=self.name, url=self.url, up=self.up, role=self.word, ha_state=self.ha_state)
        if self.leader:
            row["leader"] = self.leader
        if self.lag is not None:
            row["lag"] = self.lag
        return row


def master_state(name: str, url: str, *, timeout_s: float = 0.6, lag: bool = False) -> MasterState:
    """Ask the master at admin ``url`` what it is (``/health``; with ``lag``, a standby's ``/metrics`` too)."""
    status, body = http_get(url.rstrip("/") + "/health", timeout_s=timeout_s)
    try:
        h = json.loads(body) if status == 200 else None
    except ValueError:
        h = None
    if not isinstance(h, dict):
        return MasterState(name, url, False)
    behind = None
    if lag and h.get("role") != "leader":
        ms, mbody = http_get(url.rstrip("/") + "/metrics", timeout_s=timeout_s)
        if ms == 200:
            value = parse_metrics(mbody).value("ha_oplog_standby_lag")
            behind = int(value) if value is not None else None
    return MasterState(name, url, True, str(h.get("role") or ""), str(h.get("ha_state") or ""),
                       h.get("leader_address") or None, behind)


def master_states(masters: Sequence[tuple[str, str]], *, timeout_s: float = 0.6,
                  lag: bool = False) -> list[MasterState]:
    """:func:`master_state` of every ``(name, admin url)``, asked at once (a hung master costs ``timeout_s``
    once, not per master)."""
    if len(masters) <= 1:
        return [master_state(n, u, timeout_s=timeout_s, lag=lag) for n, u in masters]
    with ThreadPoolExecutor(len(masters), thread_name_prefix="kvtui-ha-probe") as pool:
        return list(pool.map(lambda m: master_state(m[0], m[1], timeout_s=timeout_s, lag=lag), masters))


def serving_url(masters: Sequence[tuple[str, str]], timeout_s: float = 0.6) -> str | None:
    """The admin URL of the master that serves now (None: none does, a failover is under way)."""
    return next((s.url for s in master_states(masters, timeout_s=timeout_s) if s.serving), None)


def admin_names(urls: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``(name, url)`` for masters known only by their admin URLs (attached): ``master-0`` …, in the order
    given (one alone: ``master``)."""
    from kvtui.core.topology import worker_names

    return tuple(zip(worker_names("master", len(urls)), urls))


# -- the embedded etcd ----------------------------------------------------------------------------------------
def etcd_binary() -> str | None:
    """The etcd binary (``KVTUI_ETCD``, else ``etcd`` on PATH, as Debian's ``etcd-server`` installs it); None
    when there is none."""
    given = os.environ.get(ETCD_BINARY_ENV)
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which("etcd")


def etcd_version(binary: str) -> str:
    """``3.4.23`` from ``etcd --version`` ("" when it does not say)."""
    import subprocess

    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    first = out.splitlines()[0] if out else ""
    return first.split(":", 1)[1].strip() if ":" in first else ""


ETCD_REMEDY = f"Debian: apt-get install etcd-server; or set {ETCD_BINARY_ENV} to its path"
"""How to get the etcd an embedded HA cluster runs."""


class EtcdServer:
    """kvtui's own one-member etcd on ``bind`` (free ports for clients, peers and metrics), its data in a new
    temporary folder. :meth:`start` returns the :class:`~kvtui.runtime.procs.ManagedProcess`; :meth:`wait_ready`
    polls ``/health``; :meth:`remove_data` (after the process is gone) deletes the folder and ends the
    janitor that would delete it if kvtui died first."""

    def __init__(self, bind: str = "127.0.0.1"):
        self.bind = bind
        self.client_port = self.peer_port = self.metrics_port = 0
        self.data_dir: Path | None = None
        self._janitor: Any = None

    @property
    def endpoints(self) -> tuple[tuple[str, int], ...]:
        """Where clients reach it."""
        return ((self.bind, self.client_port),)

    @property
    def url(self) -> str:
        """``etcd://HOST:PORT``: the masters' backend, the clients' master address and metadata server."""
        return etcd_url(self.endpoints)

    def argv(self) -> list[str]:
        binary = etcd_binary()
        if binary is None:
            raise MissingTool("etcd", ETCD_REMEDY)
        assert self.data_dir is not None
        b, peer = self.bind, f"http://{self.bind}:{self.peer_port}"
        return [binary, "--name", "kvtui", "--data-dir", str(self.data_dir / "data"),
                "--listen-client-urls", f"http://{b}:{self.client_port}",
                "--advertise-client-urls", f"http://{b}:{self.client_port}",
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"kvtui={peer}", "--initial-cluster-state", "new",
                "--listen-metrics-urls", f"http://{b}:{self.metrics_port}",
                "--logger", "zap", "--log-level", "warn"]

    def start(self, log_path: Path, spawn_fn, env: dict[str, str] | None = None):
        """Start etcd (``spawn_fn(name, argv, log_path, env)``: how the cluster starts its processes, e.g. from
        its spawner thread) and its janitor; returns the managed process."""
        self.client_port, self.peer_port, self.metrics_port = free_port(self.bind), free_port(self.bind), \
            free_port(self.bind)
        self.data_dir = Path(tempfile.mkdtemp(prefix="kvtui-etcd-"))
        argv = self.argv()
        proc = spawn_fn("etcd", argv, log_path, env)
        self._janitor = spawn_janitor(proc.pid, [str(self.data_dir)])
        return proc

    def wait_ready(self, alive, timeout_s: float = 20.0) -> bool:
        """Poll ``/health`` until it answers (True), ``alive()`` is False or ``timeout_s`` passes (False)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and alive():
            if etcd_healthy(self.endpoints, timeout_s=0.5):
                return True
            time.sleep(0.05)
        return False

    def remove_data(self) -> None:
        """Delete the data folder (call once etcd is gone) and end the janitor."""
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None
        if self._janitor is not None:
            self._janitor.release()
            self._janitor = None


def ha_client_env() -> tuple[tuple[str, str], ...]:
    """The ``MC_*`` variables every store client of an HA cluster gets: :data:`HA_RPC_TIMEOUT_MS` (or the
    environment's ``MC_RPC_TIMEOUT_MS``), and the cluster id when the environment names one."""
    env = [("MC_RPC_TIMEOUT_MS", os.environ.get("MC_RPC_TIMEOUT_MS") or str(HA_RPC_TIMEOUT_MS))]
    if os.environ.get("MC_STORE_CLUSTER_ID"):
        env.append(("MC_STORE_CLUSTER_ID", os.environ["MC_STORE_CLUSTER_ID"]))
    return tuple(env)


# -- what a failover did to the keys ----------------------------------------------------------------------------
def stored_keys(url: str, timeout_s: float = 5.0) -> set[str] | None:
    """Every key the master at admin ``url`` lists (``/get_all_keys``, one per line); None when it does not
    answer 200. Unlike ``is_exist`` / ``batch_is_exist`` (and ``/query_key``), this grants no lease: checking
    kvtui's pages this way pins none of them against eviction, so it changes no figure it measures."""
    status, body = http_get(url.rstrip("/") + "/get_all_keys", timeout_s=timeout_s)
    if status != 200:
        return None
    return {line.strip() for line in body.splitlines() if line.strip()}


def keys_found(url: str, keys: Sequence[str], timeout_s: float = 5.0) -> dict[str, bool] | None:
    """Per key, whether the master at admin ``url`` has it (:func:`kvtui.mooncake.tiers.query_keys`: no lease; it
    answers from the master's metadata, also for keys whose segment is not mounted yet); None when it does not
    answer."""
    entries = tiers.query_keys(url, keys, timeout_s)
    return None if entries is None else {k: bool(e.get("ok")) for k, e in entries.items()}


def master_metric(url: str, name: str, timeout_s: float = 1.0) -> int | None:
    """The value of metric ``name`` (no labels) in the ``/metrics`` of the master at admin ``url``; None when it
    does not answer or lacks it."""

    status, body = http_get(url.rstrip("/") + "/metrics", timeout_s=timeout_s)
    value = parse_metrics(body).value(name) if status == 200 else None
    return int(value) if value is not None else None


def evicted_keys(url: str, timeout_s: float = 1.0) -> int | None:
    """``master_evicted_key_count`` of the master at admin ``url`` (keys it evicted since it started); None when
    unknown."""
    return master_metric(url, "master_evicted_key_count", timeout_s)


def capacity_bytes(url: str, timeout_s: float = 1.0) -> int | None:
    """``master_total_capacity_bytes`` of the master at admin ``url``: the segments mounted on it. A new leader
    lists no key (``/get_all_keys`` empty, ``is_exist`` 0) until the segments holding them are mounted again
    (the clients' heartbeats do it, ~1–2 s after it serves); None when unknown."""
    return master_metric(url, "master_total_capacity_bytes", timeout_s)


def leader_ready(master: str, masters: Sequence[tuple[str, str]], timeout_s: float = 0.5) -> bool:
    """Whether the HA cluster at ``master`` (``etcd://…``) takes requests now: with the masters' admin URLs
    known (``masters``), one serves and has a segment mounted again (a new leader serves ~0.5-1.5 s before
    the clients' heartbeats re-mount their segments, and until then puts and gets fail); else the leader etcd
    names accepts a TCP connection (a leader warming up does not listen yet)."""
    if masters:
        url = serving_url(masters, timeout_s=timeout_s)
        return url is not None and (capacity_bytes(url, timeout_s) or 0) > 0
    leader = master_view(parse_etcd(master), timeout_s=timeout_s)
    try:
        return leader is not None and probe_tcp(*split_hostport(leader), timeout_s=timeout_s)
    except ValueError:
        return False
