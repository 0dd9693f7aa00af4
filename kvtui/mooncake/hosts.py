"""Emulated hosts: the embedded cluster's processes each in a network namespace of its own, joined by veth
links to a bridge in kvtui's private namespace, so Mooncake traffic between them crosses real kernel TCP
between distinct addresses, optionally over a rate-limited link (``tc``).

Layout (``--hosts auto``)::

    kvtui's private namespace (kvtui.mooncake.netns) ── bridge kvbr0, 10.77.0.1/24 (kvtui itself: the monitor)
        ├─ veth kvh-master ── host "master"  10.77.0.10  (mooncake_master, metadata server)
        ├─ veth kvh-store  ── host "store"   10.77.0.11  (the store node and its segment)
        ├─ veth kvh-prefill ─ host "prefill" 10.77.0.12  (the prefill worker)
        └─ veth kvh-decode ── host "decode"  10.77.0.13  (the decode worker)

With several workers of a role each has a host of its own, named after it (``decode-0``, ``decode-1``, … at
10.77.0.13, .14, …: :func:`kvtui.core.topology.worker_name`).

A host is held by a ``unshare --net sleep infinity`` process (util-linux) started with kvtui's parent-death
signal; a process is placed in a host with ``nsenter --net=/proc/PID/ns/net`` (native binaries) or
:func:`enter_host` (``setns(2)``, Python processes, before any thread starts). The namespaces, veths and
bridge exist only inside kvtui's private namespace, so nothing is reachable from outside the machine and
all of it disappears with the processes (no named namespace is created). Needs root or CAP_NET_ADMIN +
CAP_SYS_ADMIN, and ``ip``/``tc`` (iproute2).

Links: ``--link RATE[,DELAY]`` shapes both directions of every host's veth, ``tbf`` for the rate (Linux
``tc-tbf(8)``: ``rate``, ``burst``, ``latency``), ``netem`` for a delay (``tc-netem(8)``; a kernel without
``sch_netem`` rejects it, with one line). :meth:`EmulatedHosts.cut` / :meth:`EmulatedHosts.restore` take a
host's link down and up (``ip link set … down``), the soak's ``link-cut`` fault.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kvtui.mooncake.errors import ClusterError
from kvtui.runtime.procs import ManagedProcess, spawn

SUBNET = "10.77.0"
BRIDGE = "kvbr0"
BRIDGE_ADDRESS = f"{SUBNET}.1"
FIRST_HOST = 10  # host i gets SUBNET.(FIRST_HOST + i)
READY_TIMEOUT_S = 5.0
CLONE_NEWNET = 0x40000000

_RATE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<u>[kmgt]?)bit$", re.I)
_DELAY = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<u>us|ms|s)$", re.I)
_RATE_MULT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_DELAY_MULT = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


TOOLS = ("ip", "tc", "unshare", "nsenter")  # iproute2 and util-linux


def missing_tools() -> list[str]:
    """The tools of :data:`TOOLS` not on ``PATH`` (emulated hosts need them all)."""
    return [t for t in TOOLS if shutil.which(t) is None]


class HostsError(ClusterError):
    """Emulated hosts could not be made (no permission, no ``ip``/``tc``, a link the kernel rejects): one line.
    Starting again cannot help."""

    retry = False


@dataclass(frozen=True)
class LinkSpec:
    """One emulated link's shape: ``rate_bps`` bits per second (``tc``'s ``gbit`` = 10^9 bit/s), ``delay_s``
    one-way delay in seconds (0: none). Parsed from ``RATE[,DELAY]`` by :func:`parse_link`."""

    rate_bps: int
    delay_s: float = 0.0

    @property
    def rate_bytes_per_s(self) -> float:
        """The rate in bytes per second (``rate_bps / 8``)."""
        return self.rate_bps / 8

    def text(self) -> str:
        """``1gbit`` / ``1gbit,200us``: the form the user typed, normalised."""
        for unit, mult in (("tbit", 10**12), ("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)):
            if self.rate_bps >= mult and self.rate_bps % mult == 0:
                rate = f"{self.rate_bps // mult}{unit}"
                break
        else:
            rate = f"{self.rate_bps}bit"
        return rate + (f",{self.delay_s * 1e6:g}us" if self.delay_s else "")


def parse_link(text: str) -> LinkSpec:
    """``"25gbit"``, ``"1gbit,200us"``, ``"500mbit,1ms"`` → :class:`LinkSpec`. Rates take ``tc``'s bit units
    only (kbit, mbit, gbit, tbit, decimal: ``tc``'s ``Bps`` forms are bytes, so they are refused rather than
    guessed); delays ``us``, ``ms`` or ``s``. ``ValueError`` (one line) when malformed or when the rate is
    under 1 mbit or over 400 gbit (what a tbf on this kind of veth can emulate)."""
    rate_text, _, delay_text = str(text).strip().partition(",")
    m = _RATE.match(rate_text.strip())
    if not m:
        hint = " (bits: tc's Bps means bytes per second)" if re.search(r"bps$", rate_text.strip(), re.I) else ""
        raise ValueError(f"rate must be bits per second like 25gbit, 1gbit or 500mbit, got "
                         f"{rate_text!r}{hint}")
    rate = int(float(m.group("n")) * _RATE_MULT[m.group("u").lower()])
    if not 10**6 <= rate <= 400 * 10**9:
        raise ValueError(f"rate must be between 1mbit and 400gbit, got {rate_text!r}")
    delay = 0.0
    if delay_text.strip():
        d = _DELAY.match(delay_text.strip())
        if not d:
            raise ValueError(f"delay must look like 200us or 1ms, got {delay_text!r}")
        delay = float(d.group("n")) * _DELAY_MULT[d.group("u").lower()]
        if not 0 < delay <= 1.0:
            raise ValueError(f"delay must be above 0 and at most 1s, got {delay_text!r}")
    return LinkSpec(rate, delay)


@dataclass(frozen=True)
class Host:
    """One emulated host: ``name`` (its role: master, store, prefill, decode), ``address`` (IPv4 on the
    bridge), ``netns`` (``/proc/PID/ns/net`` of the process holding its namespace) and ``veth`` (the
    link's end on the bridge, in kvtui's namespace)."""

    name: str
    address: str
    netns: str
    veth: str

    def as_dict(self) -> dict:
        """Plain data for :class:`~kvtui.mooncake.cluster.ClusterEndpoints` and worker specs."""
        return {"name": self.name, "address": self.address, "netns": self.netns, "veth": self.veth}


def _run(argv: list[str], what: str) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostsError(f"{what}: {exc}") from None
    if out.returncode != 0:
        reason = (out.stderr.strip() or out.stdout.strip() or f"exit code {out.returncode}").splitlines()[-1]
        raise HostsError(f"{what}: {reason}")
    return out.stdout


def nsenter_argv(host: dict | Host | None) -> list[str]:
    """The ``nsenter --net=…`` prefix that starts a native binary in ``host`` (``[]`` for none)."""
    if host is None:
        return []
    netns = host.netns if isinstance(host, Host) else host["netns"]
    return [shutil.which("nsenter") or "nsenter", f"--net={netns}", "--"]


def enter_host(host: dict | None) -> None:
    """Move the calling thread into ``host``'s network namespace (``setns(2)``); call first thing in a
    Python process, before any other thread starts (threads made later inherit it). ``host``: a
    :meth:`Host.as_dict`, or None (nothing to do). ``OSError`` when the namespace is gone or not permitted."""
    if not host:
        return
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    fd = os.open(host["netns"], os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({host['netns']}): {os.strerror(err)}")
    finally:
        os.close(fd)


def _tc_shape(prefix: list[str], dev: str, link: LinkSpec, where: str) -> None:
    rate = f"{link.rate_bps}bit"
    burst = max(64 << 10, int(link.rate_bytes_per_s / 100))  # 10 ms of the rate, at least 64 KiB (tc-tbf: >= rate/HZ)
    if link.delay_s:
        try:
            _run(prefix + ["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "netem",
                           "delay", f"{link.delay_s * 1e6:.0f}us", "limit", "100000"],
                 f"link {link.text()}: the kernel rejects netem on {where}")
        except HostsError as exc:
            if "unknown" in str(exc).lower():
                raise HostsError(f"link {link.text()}: this kernel has no netem qdisc (sch_netem), so a delay "
                                 "cannot be emulated here; give the rate alone") from None
            raise
        parent = ["parent", "1:1", "handle", "10:"]
    else:
        parent = ["root", "handle", "1:"]
    _run(prefix + ["tc", "qdisc", "add" if link.delay_s else "replace", "dev", dev] + parent +
         ["tbf", "rate", rate, "burst", str(burst), "latency", "50ms"],
         f"link {link.text()}: the kernel rejects tbf on {where}")


@dataclass
class EmulatedHosts:
    """Makes and owns the emulated hosts (``make`` them, then ``stop``). Call from the thread that started
    kvtui's private namespace (the main thread), after :func:`kvtui.mooncake.netns.isolate_network`."""

    log_dir: Path
    link: LinkSpec | None = None
    hosts: dict[str, Host] = field(default_factory=dict)
    holders: list[ManagedProcess] = field(default_factory=list)
    _bridge: bool = False

    def make(self, names: list[str]) -> dict[str, Host]:
        """One host per name (``HostsError`` on failure, with the hosts made so far torn down)."""
        missing = missing_tools()
        if missing:
            raise HostsError(f"emulated hosts need {', '.join(missing)} (Debian: iproute2 / util-linux); "
                             "run `kvtui doctor`")
        try:
            if not self._bridge:
                _run(["ip", "link", "add", BRIDGE, "type", "bridge"], "emulated hosts: cannot make the bridge")
                self._bridge = True
                _run(["ip", "addr", "add", f"{BRIDGE_ADDRESS}/24", "dev", BRIDGE], "emulated hosts: bridge address")
                _run(["ip", "link", "set", BRIDGE, "up"], "emulated hosts: bridge up")
            for name in names:
                self._make_one(name)
        except BaseException:
            self.stop()
            raise
        return dict(self.hosts)

    def _make_one(self, name: str) -> Host:
        index = len(self.hosts)
        address = f"{SUBNET}.{FIRST_HOST + index}"
        veth = f"kvh-{name}"[:15]
        holder = spawn(f"host-{name}", ["unshare", "--net", "sleep", "infinity"], self.log_dir / f"host-{name}.log")
        self.holders.append(holder)
        netns = f"/proc/{holder.pid}/ns/net"
        mine = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:  # unshare has run once the holder's namespace differs from ours
            try:
                if os.readlink(netns) != mine:
                    break
            except OSError:
                pass
            if not holder.alive() or time.monotonic() > deadline:
                raise HostsError(f"emulated hosts: host {name} did not get a network namespace "
                                 f"(unshare --net: {holder.log_tail(2) or 'no permission?'})")
            time.sleep(0.01)
        _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(holder.pid)],
             f"emulated hosts: cannot make the link of host {name}")
        _run(["ip", "link", "set", veth, "master", BRIDGE], f"emulated hosts: cannot attach host {name} to the bridge")
        _run(["ip", "link", "set", veth, "up"], f"emulated hosts: link of host {name}")
        inside = nsenter_argv(Host(name, address, netns, veth))
        for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "link", "set", "eth0", "up"],
                    ["ip", "addr", "add", f"{address}/24", "dev", "eth0"]):
            _run(inside + cmd, f"emulated hosts: cannot configure host {name}")
        if self.link is not None:
            _tc_shape([], veth, self.link, f"the link to host {name}")
            _tc_shape(inside, "eth0", self.link, f"host {name}")
        host = Host(name, address, netns, veth)
        self.hosts[name] = host
        return host

    def cut(self, name: str) -> None:
        """Take host ``name``'s link down (its packets are dropped until :meth:`restore`). ``HostsError``."""
        _run(["ip", "link", "set", self.hosts[name].veth, "down"], f"cannot cut the link of host {name}")

    def restore(self, name: str) -> None:
        """Bring host ``name``'s link up again. ``HostsError``."""
        _run(["ip", "link", "set", self.hosts[name].veth, "up"], f"cannot restore the link of host {name}")

    def stop(self) -> None:
        """End the holders and remove the bridge (each host's veth goes with its namespace)."""
        for h in self.holders:
            h.stop(grace_s=0.5, sig=signal.SIGKILL)
        self.holders.clear()
        self.hosts.clear()
        if self._bridge:
            subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, timeout=10)
            self._bridge = False
