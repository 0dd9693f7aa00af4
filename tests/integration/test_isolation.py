"""Loopback only: nothing kvtui starts in embedded mode is reachable beyond 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import psutil
import pytest
from waits import wait_for

from kvtui.mooncake.netns import current_netns, isolation_possible

pytestmark = pytest.mark.integration


def _hex_ip(h: str) -> str:
    if len(h) == 8:
        return socket.inet_ntop(socket.AF_INET, bytes.fromhex(h)[::-1])
    raw = bytes.fromhex(h)
    return socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))


def _listeners(procs):
    """Listening TCP sockets of each process, read from its own /proc/PID/net (its own namespace)."""
    out = []
    for p in procs:
        try:
            inodes = set()
            for fd in os.listdir(f"/proc/{p.pid}/fd"):
                link = os.readlink(f"/proc/{p.pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
            cmd = " ".join(p.cmdline()[:4])
            for proto in ("tcp", "tcp6"):
                with open(f"/proc/{p.pid}/net/{proto}") as f:
                    next(f)
                    for line in f:
                        parts = line.split()
                        local, state, inode = parts[1], parts[3], parts[9]
                        if state == "0A" and inode in inodes:
                            ip, port = local.rsplit(":", 1)
                            out.append((p.pid, cmd, _hex_ip(ip), int(port, 16), current_netns(p.pid)))
        except (OSError, psutil.Error):
            pass
    return out


def test_listening_sockets_of_the_process_tree_are_loopback_only():
    reason = isolation_possible()
    env = {k: v for k, v in os.environ.items() if k != "KVTUI_ISOLATE"}
    proc = subprocess.Popen([sys.executable, "-m", "kvtui.cli", "run", "--duration", "30", "--layout", "tiny",
                             "--store-size", "64MiB", "--quiet"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        parent = psutil.Process(proc.pid)

        def listening() -> list | None:  # the cluster and both workers, and their listeners
            assert proc.poll() is None, f"kvtui run exited ({proc.returncode}) first: {proc.stderr.read()}"
            tree = [parent, *parent.children(recursive=True)]
            rows = _listeners(tree)
            return rows if len(tree) >= 6 and len(rows) >= 5 else None

        rows = wait_for(listening, 30, "5 listening sockets in kvtui run's process tree", interval_s=0.3,
                        detail=lambda: _listeners([parent, *parent.children(recursive=True)]))
        host_ns = current_netns()
        for pid, cmd, ip, port, ns in rows:
            if ip in ("127.0.0.1", "::1"):
                continue
            # a wildcard listener is acceptable only inside kvtui's private namespace (only `lo` there)
            assert reason is None and ns != host_ns, f"{cmd} (pid {pid}) listens on {ip}:{port} in the host namespace"
        if reason is None:
            assert all(ns != host_ns for *_, ns in rows)
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.returncode in (0, 143, -15), proc.stderr.read()  # SIGTERM: 128 + 15


@pytest.mark.skipif(shutil.which("capsh") is None or os.geteuid() != 0, reason="needs root and capsh (libcap2-bin)")
def test_without_net_admin_isolation_is_declined_and_the_process_keeps_its_network():
    """CAP_SYS_ADMIN without CAP_NET_ADMIN: unshare works but lo cannot be brought up; a namespace like that
    reaches nothing (a run then waited 20 s for its master), so kvtui goes back and says why."""
    code = ("from kvtui.mooncake.netns import isolate_network, current_netns; before = current_netns(); "
            "print(isolate_network()); print(current_netns() == before)")
    out = subprocess.run(["capsh", "--drop=cap_net_admin", "--", "-c", f"{sys.executable} -c '{code}'"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    reason, same = out.stdout.strip().splitlines()[-2:]
    assert "cannot bring lo up" in reason and "CAP_NET_ADMIN" in reason and same == "True", out.stdout
