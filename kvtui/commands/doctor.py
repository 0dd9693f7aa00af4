"""``kvtui doctor``: check this machine can run kvtui against a real Mooncake Store.

One line per check; every problem line says what to do. Exit 0 only when every check passes. Mooncake is
imported in a child process, so a wheel that cannot load (missing ``libibverbs.so.1``, or the CUDA wheel
without ``libcuda.so.1``) is reported, not fatal.
"""

from __future__ import annotations

import argparse
import ctypes.util
import importlib.metadata as md
import socket
import subprocess
import sys
from pathlib import Path

WHEELS = ("mooncake-transfer-engine-non-cuda", "mooncake-transfer-engine", "mooncake-transfer-engine-cuda13")


def register(subparsers) -> None:
    """Add the ``doctor`` subcommand."""
    p = subparsers.add_parser("doctor", help="check the Mooncake wheel, libibverbs1 and loopback ports",
                              description="Check that this machine can run kvtui: Python version, which Mooncake "
                                          "wheel is installed and whether it imports, the libibverbs1 system "
                                          "library, the master binary, loopback ports, and etcd (for --ha). "
                                          "Exit 0 only when all is well; each problem comes with the command "
                                          "that fixes it.")
    p.set_defaults(func=run)


def _installed_wheels() -> list[tuple[str, str]]:
    found = []
    for name in WHEELS:
        try:
            found.append((name, md.version(name)))
        except md.PackageNotFoundError:
            pass
    return found


def check_libibverbs() -> tuple[bool, str]:
    """Is ``libibverbs.so.1`` loadable? (the store library links it even over TCP)."""
    if ctypes.util.find_library("ibverbs"):
        try:
            ctypes.CDLL("libibverbs.so.1")
            return True, "libibverbs1 present (the store library links it even for TCP)"
        except OSError:
            pass
    return False, "libibverbs1 is missing: install it with `apt-get install -y libibverbs1` (needed even for TCP)"


def check_import() -> tuple[bool, str]:
    """Import ``mooncake.store`` in a child process and report why it fails, if it does."""
    code = ("import os; os.environ['MC_LOG_LEVEL']='ERROR'; import mooncake.store as s; "
            "print(s.MooncakeDistributedStore.__name__)")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, "importing mooncake.store hung for 60 s"
    if proc.returncode == 0:
        return True, "mooncake.store imports"
    err = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    if "libibverbs" in err:
        return False, f"mooncake.store cannot load: {err} → apt-get install -y libibverbs1"
    if "libcuda" in err:
        return False, (f"mooncake.store cannot load: {err} → the CUDA wheel needs an NVIDIA driver; "
                       "pip uninstall mooncake-transfer-engine && pip install mooncake-transfer-engine-non-cuda")
    if "No module named" in err:
        return False, "mooncake is not installed → pip install mooncake-transfer-engine-non-cuda"
    return False, f"mooncake.store cannot load: {err}"


def check_ports() -> tuple[bool, str]:
    """Can we bind loopback ports (an ephemeral one and one in kvtui's client range)?"""
    try:
        for port in (0, 0):
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))
        return True, "loopback ports can be bound on 127.0.0.1"
    except OSError as exc:
        return False, f"cannot bind a port on 127.0.0.1 ({exc}); is the loopback interface up?"


def checks() -> list[tuple[bool, str]]:
    """Every check as ``(ok, line)``."""
    python_ok = sys.version_info >= (3, 10)
    out = [(python_ok, f"Python {sys.version.split()[0]}" + ("" if python_ok else " → kvtui needs Python ≥ 3.10"))]
    wheels = _installed_wheels()
    if not wheels:
        out.append((False, "no Mooncake wheel installed → pip install mooncake-transfer-engine-non-cuda"))
    else:
        desc = ", ".join(f"{n} {v}" for n, v in wheels)
        ok = any(n.endswith("non-cuda") for n, _ in wheels) or len(wheels) == 1
        line = f"Mooncake wheel: {desc}"
        if len(wheels) > 1:
            ok, line = False, f"{line} → more than one wheel provides the `mooncake` package; keep only one"
        out.append((ok, line))
    out.append(check_libibverbs())
    if wheels:
        out.append(check_import())
        try:
            from kvtui.mooncake.cluster import ClusterError, master_binary

            out.append((True, f"mooncake_master binary: {master_binary()}"))
            client = Path(master_binary()).with_name("mooncake_client")
            out.append((client.exists(), f"mooncake_client binary: {client}" if client.exists() else
                        f"mooncake_client is missing beside {master_binary()}: use --worker-client real"))
        except ClusterError as exc:
            out.append((False, str(exc)))
    out.append(check_ports())
    from kvtui.mooncake.netns import isolation_possible

    reason = isolation_possible()
    if reason is None:
        out.append((True, "loopback isolation available: the embedded cluster runs in a private network namespace"))
    else:
        out.append((True, f"note: no loopback isolation here ({reason}); Mooncake's transfer listeners then bind "
                          "all interfaces (0.0.0.0) whatever MC_TCP_BIND_ADDRESS says"))
    out.append(check_host_tools(reason))
    out.append(check_etcd())
    return out


def check_etcd() -> tuple[bool, str]:
    """Whether ``--ha N`` can run: an etcd binary (Debian's ``etcd-server``, or ``KVTUI_ETCD``) and its version.
    Never a failure: only that flag needs it (attaching to an HA cluster needs its etcd, not one here)."""
    from kvtui.mooncake.ha import ETCD_BINARY_ENV, etcd_binary, etcd_version

    binary = etcd_binary()
    if binary is None:
        return True, ("note: etcd is not installed: --ha N (an embedded HA cluster) is not available here "
                      f"(Debian: apt-get install etcd-server, or set {ETCD_BINARY_ENV} to its path)")
    version = etcd_version(binary)
    return True, f"etcd {version or '(version unknown)'} at {binary}: --ha N (an embedded HA cluster) available"


def check_host_tools(isolation_reason: str | None) -> tuple[bool, str]:
    """Whether ``--hosts auto`` can run: network namespaces (``isolation_reason`` None) and the ``ip``,
    ``tc``, ``unshare`` and ``nsenter`` tools (iproute2, util-linux). Never a failure: only that flag needs it."""
    from kvtui.mooncake.hosts import missing_tools

    missing = missing_tools()
    if isolation_reason is None and not missing:
        return True, ("emulated hosts available (--hosts auto, --link RATE): network namespaces, ip, tc, nsenter; "
                      "a --link delay also needs the kernel's netem, which is not checked here")
    why = isolation_reason or f"missing {', '.join(missing)} (Debian: apt-get install iproute2 util-linux)"
    return True, f"note: --hosts auto is not available here ({why})"


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Print the checks; exit 0 only if all passed."""
    results = checks()
    for ok, line in results:
        print(f"{'ok ' if ok else 'FAIL'}  {line}")
    bad = sum(1 for ok, _ in results if not ok)
    print("all checks passed" if not bad else f"{bad} problem(s) found")
    return 0 if not bad else 1
