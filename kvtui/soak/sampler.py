"""What a soak samples every ``--sample-s`` seconds, and the series file (CSV) it writes as it goes.

* :class:`ResourceSampler`: resident memory (RSS, bytes) and open file descriptors of every process kvtui
  runs (kvtui itself, the workers, the embedded master, metadata server and store node), by name; and
  the TCP sockets of kvtui's process tree by state. Sockets are read with ``psutil.net_connections``, which
  reads ``/proc/net/tcp*`` of the network namespace kvtui's own process is in: the embedded cluster's
  private namespace when it is isolated (:mod:`kvtui.mooncake.netns`), where every socket is the tree's, or
  the host's, where they are filtered to the tree. An ESTABLISHED socket counts when a process of the tree
  owns it; a TIME_WAIT socket has no owner any more, so it counts when one of its ports is a port the tree
  listens on (or one of the cluster's): the closing side of a connection to or from the tree.
* :class:`SeriesWriter`: one CSV row per sample, flushed as written, so a soak cut short leaves its series
  up to the last sample.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping

import psutil

PROCS = ("kvtui", "metadata", "master", "store", "prefill", "decode")  # series columns, in this order
TCP_STATES = {"ESTABLISHED": "tcp_established", "TIME_WAIT": "tcp_time_wait"}


class ResourceSampler:
    """Samples RSS, file descriptors and TCP sockets. ``cluster_ports``: ports of the cluster (master RPC,
    metrics, metadata) that count a TIME_WAIT socket as the tree's even before a listener is seen."""

    def __init__(self, cluster_ports: set[int] | None = None):
        self.cluster_ports = set(cluster_ports or ())
        self._procs: dict[int, psutil.Process] = {}
        self.me = psutil.Process(os.getpid())
        self.seen: dict[int, tuple[str, float]] = {}  # every descendant pid seen: (name, create_time)

    def _proc(self, pid: int) -> psutil.Process | None:
        p = self._procs.get(pid)
        if p is None:
            try:
                p = self._procs[pid] = psutil.Process(pid)
            except psutil.Error:
                return None
        return p

    def tree(self, named: dict[str, int]) -> set[int]:
        """kvtui's pid and every descendant's now; records each in :attr:`seen` under its name in
        ``named`` (``{name: pid}``) or its process name."""
        by_pid = {pid: name for name, pid in named.items()}
        pids = {self.me.pid}
        try:
            kids = self.me.children(recursive=True)
        except psutil.Error:
            kids = []
        for k in kids:
            pids.add(k.pid)
            if k.pid not in self.seen:
                try:
                    self.seen[k.pid] = (by_pid.get(k.pid) or k.name(), k.create_time())
                except psutil.Error:
                    pass
        return pids

    def processes(self, named: dict[str, int]) -> dict[str, dict]:
        """``{name: {"pid", "rss_bytes", "fds"}}`` of kvtui and ``named``; a process that is gone has None
        values (it died and was not replaced yet)."""
        out = {}
        for name, pid in {"kvtui": self.me.pid, **named}.items():
            p = self._proc(pid)
            row = {"pid": pid, "rss_bytes": None, "fds": None}
            if p is not None:
                try:
                    with p.oneshot():
                        if p.status() != psutil.STATUS_ZOMBIE:
                            row.update(rss_bytes=p.memory_info().rss, fds=p.num_fds())
                except psutil.Error:
                    self._procs.pop(pid, None)
            out[name] = row
        live = {r["pid"] for r in out.values()}
        for pid in [pid for pid in self._procs if pid not in live]:
            del self._procs[pid]  # (replaced processes: keep the cache bounded)
        return out

    def tcp(self, tree: set[int]) -> Mapping[str, int | None]:
        """``{"tcp_established", "tcp_time_wait", "tcp_listen"}`` of the tree (see the module's note); None
        each when the kernel's table cannot be read."""
        try:
            conns = psutil.net_connections(kind="tcp")
        except (psutil.Error, OSError):
            return {"tcp_established": None, "tcp_time_wait": None, "tcp_listen": None}
        listen = {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN and c.pid in tree and c.laddr}
        ports = listen | self.cluster_ports
        out = {"tcp_established": 0, "tcp_time_wait": 0, "tcp_listen": len(listen)}
        for c in conns:
            if c.status == psutil.CONN_ESTABLISHED and c.pid in tree:
                out["tcp_established"] += 1
            elif (c.status == psutil.CONN_TIME_WAIT and c.raddr and c.laddr
                  and (c.laddr.port in ports or c.raddr.port in ports)):
                out["tcp_time_wait"] += 1
        for state, n in other_namespaces_tcp(tree).items():
            out[state] += n
        return out


_TCP_STATE_HEX = {"01": "tcp_established", "06": "tcp_time_wait", "0A": "tcp_listen"}  # include/net/tcp_states.h


def other_namespaces_tcp(tree: set[int]) -> dict[str, int]:
    """TCP sockets by state in the network namespaces of ``tree`` other than kvtui's own (emulated hosts,
    :mod:`kvtui.mooncake.hosts`), read from ``/proc/PID/net/tcp`` and ``tcp6`` of one process per namespace
    (``psutil.net_connections`` sees only the caller's): every socket there is the tree's, since only
    kvtui's processes live in those namespaces."""
    out = dict.fromkeys(_TCP_STATE_HEX.values(), 0)
    try:
        mine = os.readlink("/proc/self/ns/net")
    except OSError:
        return out
    seen = {mine}
    for pid in sorted(tree):
        try:
            ns = os.readlink(f"/proc/{pid}/ns/net")
        except OSError:
            continue
        if ns in seen:
            continue
        seen.add(ns)
        for name in ("tcp", "tcp6"):
            try:
                with open(f"/proc/{pid}/net/{name}") as f:
                    next(f, None)  # (the header)
                    for line in f:
                        state = _TCP_STATE_HEX.get(line.split()[3])
                        if state:
                            out[state] += 1
            except (OSError, IndexError):
                pass
    return out


def ephemeral_ports() -> int | None:
    """How many local ports the kernel hands out to outgoing connections (``ip_local_port_range``), or None."""
    try:
        low, high = (int(x) for x in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    except (OSError, ValueError):
        return None
    return high - low + 1


COLUMNS = (["t_s", "requests", "req_per_s", "page_hit_rate", "errors_total", "lost", "mismatches", "faults",
            "faults_open", "keys", "used_bytes", "store_up", "tcp_established", "tcp_time_wait", "tcp_listen"]
           + [f"{what}_{name}" for name in PROCS for what in ("rss_bytes", "fds", "pid")] + ["errors"])
"""The series file's columns: ``t_s`` seconds since the soak began; ``requests`` finished so far;
``req_per_s`` and ``page_hit_rate`` (0..1, pages reloaded ÷ full pages) over the interval since the previous
sample; ``errors_total``, ``lost``, ``mismatches`` and ``faults`` (injected) so far; ``faults_open``: 1 while a
fault is not recovered yet; ``keys`` and ``used_bytes`` from the master's /metrics (empty while it does not
answer; ``store_up`` 0 then); the TCP counts of :meth:`ResourceSampler.tcp`; per process its RSS in bytes,
open file descriptors and pid (empty while it is down); ``errors``: the store codes so far, ``NAME=count``
separated by spaces."""


class SeriesWriter:
    """Writes :data:`COLUMNS` rows to ``path`` (created or truncated at start), flushing each row."""

    def __init__(self, path: str):
        self.path = path
        self._f = open(path, "w", newline="")
        self._w = csv.DictWriter(self._f, fieldnames=COLUMNS, extrasaction="ignore")
        self._w.writeheader()
        self._f.flush()
        self.rows = 0

    def write(self, row: dict) -> None:
        """One sample (keys of :data:`COLUMNS`; None is written empty)."""
        self._w.writerow({k: ("" if row.get(k) is None else row[k]) for k in COLUMNS})
        self._f.flush()
        self.rows += 1

    def close(self) -> None:
        """Close the file (safe twice)."""
        if not self._f.closed:
            self._f.close()
