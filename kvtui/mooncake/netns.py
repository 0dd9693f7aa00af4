"""Loopback-only isolation of the embedded cluster with a private network namespace (Linux, needs
CAP_SYS_ADMIN, e.g. root).

Mooncake's transfer listeners bind ``0.0.0.0`` whatever ``MC_TCP_BIND_ADDRESS`` says (``ss -ltnp`` shows it
on the wheel's 0.3.x builds; the master's built-in HTTP metadata server ignores its host flag too). In a
fresh network namespace the only interface is ``lo``, so those listeners are reachable from nowhere but this process
tree. :func:`isolate_network` moves the calling thread (call it from the main thread before any thread or child starts)
into such a namespace and brings ``lo`` up; every child started afterwards inherits it.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import sys

CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def _bring_lo_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))


_isolated = False


def isolate_network() -> str | None:
    """Enter a private network namespace with only ``lo`` up. Returns ``None`` on success, else the reason.
    A second call in the same process does nothing (the process is already isolated)."""
    global _isolated
    if _isolated:
        return None
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError as exc:
        return f"cannot load libc ({exc})"
    try:
        original = os.open("/proc/self/ns/net", os.O_RDONLY)  # to go back if lo cannot be brought up
    except OSError:
        original = -1
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            return f"unshare(CLONE_NEWNET) failed: {os.strerror(err)} (needs root or CAP_SYS_ADMIN)"
        try:
            _bring_lo_up()
        except OSError as exc:
            # (CAP_SYS_ADMIN without CAP_NET_ADMIN): a namespace whose lo is down reaches nothing, not even
            # the cluster's own processes, so return to the namespace we came from
            if original < 0 or libc.setns(original, CLONE_NEWNET) != 0:
                raise OSError(f"cannot bring lo up in the new network namespace ({exc}) nor leave it") from None
            return f"cannot bring lo up in the new namespace ({exc}; needs CAP_NET_ADMIN)"
    finally:
        if original >= 0:
            os.close(original)
    _isolated = True
    return None


def isolation_possible() -> str | None:
    """Try :func:`isolate_network` in a throw-away child process: ``None`` if it works, else the reason."""
    code = "from kvtui.mooncake.netns import isolate_network as f; r = f(); print(r or 'ok')"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "the isolation check timed out"
    line = (out.stdout.strip() or out.stderr.strip() or "unknown error").splitlines()[-1]
    return None if line == "ok" else line


def current_netns(pid: int | str = "self") -> str:
    """The network namespace id of ``pid`` (e.g. ``net:[4026531840]``), or ``""`` if unreadable."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""
