"""CPU and memory of the processes kvtui runs, read with psutil (the Processes panel, observe mode, the soak)."""

from __future__ import annotations

import os

import psutil

from kvtui.core.panels import ProcRow


class ProcessSampler:
    """CPU % (of one core) and RSS bytes of named processes; call :meth:`sample` about once a second.
    ``hosts``: ``{name: address}`` of processes on emulated hosts (:mod:`kvtui.mooncake.hosts`)."""

    def __init__(self, pids: dict[str, int], hosts: dict[str, str] | None = None):
        self._procs: dict[str, psutil.Process] = {}
        self.hosts = dict(hosts or {})
        self.set_pids(pids)

    def set_pids(self, pids: dict[str, int]) -> None:
        """Track these ``{name: pid}`` (kvtui itself is always included)."""
        pids = {"kvtui": os.getpid(), **pids}
        procs = {}
        for name, pid in pids.items():
            try:
                p = psutil.Process(pid)
                p.cpu_percent(None)  # prime: the first call always returns 0
                procs[name] = p
            except psutil.Error:
                pass
        self._procs = procs

    def sample(self) -> tuple[ProcRow, ...]:
        """One :class:`kvtui.core.panels.ProcRow` per process: ``({"name", "pid", "cpu_percent", "rss_bytes",
        "alive"}, ...)``, with ``"host"`` for a process on an emulated host."""
        rows: list[ProcRow] = []
        for name, p in self._procs.items():
            row: ProcRow
            try:
                with p.oneshot():
                    row = {"name": name, "pid": p.pid, "cpu_percent": p.cpu_percent(None),
                           "rss_bytes": p.memory_info().rss, "alive": p.is_running()}
            except psutil.Error:
                row = {"name": name, "pid": p.pid, "cpu_percent": 0.0, "rss_bytes": 0, "alive": False}
            if name in self.hosts:
                row["host"] = self.hosts[name]
            rows.append(row)
        return tuple(rows)
