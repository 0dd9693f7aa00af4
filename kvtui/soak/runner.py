"""A soak: a live session (the engine and driver of ``kvtui run``) sampled every few seconds for hours,
with the faults of a seeded schedule injected, and a summary of what grew and what survived.

:class:`Soak` runs in the calling (main) thread: :meth:`Soak.run` samples until the session's driver is
done (its duration), with the :class:`~kvtui.soak.faults.Injector` thread injecting faults meanwhile; the
caller then stops the session and asks :meth:`Soak.summary` (which also checks that no process kvtui
started outlived it).
"""

from __future__ import annotations

import math
from array import array
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Callable

import psutil

from kvtui.core.failover import loss_summary
from kvtui.core.storeloss import LOSS_CHECKED
from kvtui.soak.faults import Injector, RecoveryTracker, unavailable
from kvtui.soak.sampler import PROCS, ResourceSampler, SeriesWriter, ephemeral_ports
from kvtui.soak.schedule import KINDS, default_window, schedule
from kvtui.soak.summary import (
    FD_RISE,
    KVTUI_RSS_TARGET_MIB_PER_H,
    fault_summary,
    fit_columns,
    resource_growth,
    time_wait_check,
)

if TYPE_CHECKING:
    from kvtui.live import LiveSession

JOIN_INJECTOR_S = 30.0  # at the end, the fault under way is cleared within this (a filler, a restart)


@dataclass(frozen=True)
class SoakPlan:
    """How a soak runs. Seconds; ``chaos_per_min``: faults a minute (0: none); ``kinds``: the fault kinds
    to draw from; ``seed``: of the schedule; ``warmup_s``: samples before this are left out of the growth
    fits; ``series_path``: the CSV series (None: kept in memory only)."""

    duration_s: float
    sample_s: float = 5.0
    warmup_s: float = 300.0
    chaos_per_min: float = 0.0
    kinds: tuple[str, ...] = KINDS
    seed: int = 0
    pause_s: float = 3.0
    recovery_timeout_s: float = 120.0
    series_path: str | None = None

    @property
    def checks_pages(self) -> bool:
        """Faults whose loss check needs the engine to keep every page a put acknowledged
        (:data:`kvtui.core.storeloss.LOSS_CHECKED`) may be drawn."""
        return bool(self.chaos_per_min) and any(k in LOSS_CHECKED for k in self.kinds)


def default_warmup(duration_s: float) -> float:
    """Samples before ``min(5 min, 20 %)`` of a soak are not fitted: kvtui's bounded buffers (the rate
    series keep 300 one-second points, the latency window 30 s) fill during the first minutes."""
    return min(300.0, 0.2 * duration_s)


class Soak:
    """Samples ``session`` (a started or not yet started :class:`kvtui.live.LiveSession` whose engine has
    ``replace_dead_workers``) and injects ``plan``'s faults. ``say(line)``: injections, recoveries and
    warnings (one line each); ``progress(line)``: the progress line after every sample (None: not shown)."""

    def __init__(self, session: LiveSession, plan: SoakPlan, say: Callable[[str], None],
                 progress: Callable[[str], None] | None = None):
        self.session, self.engine, self.plan = session, session.engine, plan
        self.say, self.progress = say, progress
        self.tracker = RecoveryTracker()
        session.subscribe_results(self.tracker.add)  # (for the session's whole life: a soak is its only run)
        self.skipped_kinds = {k: why for k in plan.kinds if (why := unavailable(k, session.cluster))}
        kinds = tuple(k for k in plan.kinds if k not in self.skipped_kinds)
        chaos = bool(kinds and plan.chaos_per_min)
        self.faults = schedule(plan.seed, plan.duration_s, plan.chaos_per_min, kinds) if chaos else ()
        self.cluster_ports = _ports(session.cluster.endpoints)
        self.embedded = session.cluster.embedded
        self.sampler = ResourceSampler(self.cluster_ports)
        self.noted: dict[int, tuple[str, float]] = {}
        self.injector = None
        if self.faults:
            _start, tail = default_window(plan.duration_s)
            self.injector = Injector(session, self.faults, self.tracker, end_s=plan.duration_s - tail / 2,
                                     recovery_timeout_s=plan.recovery_timeout_s, pause_s=plan.pause_s,
                                     note_pid=self._note, say=say)
        self.series = SeriesWriter(plan.series_path) if plan.series_path else None
        # what the fits need, kept compact (4 bytes a value, NaN when missing: ~70 KB an hour at 5 s, so the
        # soak adds little to the RSS slope it measures); the whole rows go to the series file
        self.cols = {k: array("f") for k in fit_columns(PROCS)}
        self.samples = 0
        self.last: dict = {}
        self._prev: tuple[float, dict] | None = None
        self._pids: dict[str, int] = {}

    def _note(self, name: str, pid: int) -> None:
        try:
            self.noted[pid] = (name, psutil.Process(pid).create_time())
        except psutil.Error:
            pass

    # -- running --------------------------------------------------------------------------------------
    def run(self) -> None:
        """Sample every ``sample_s`` until the driver is done, injecting faults meanwhile; then clear the
        fault under way, take a last sample and close the series. ``KeyboardInterrupt`` passes through,
        after the same cleanup."""
        for name, pid in self.session.process_pids().items():
            self._note(name, pid)
        if self.injector is not None:
            self.injector.start()
        next_t = self.engine.now()
        try:
            while not self.session.wait(0.1):
                if self.engine.now() >= next_t:
                    self.sample()
                    next_t = max(next_t + self.plan.sample_s, self.engine.now() - self.plan.sample_s / 2)
        finally:
            if self.injector is not None:
                self.injector.stop()
                self.injector.join(JOIN_INJECTOR_S)
            try:
                self.sample()
            finally:
                if self.series is not None:
                    self.series.close()

    def sample(self) -> dict:
        """One sample: a series row (:data:`kvtui.soak.sampler.COLUMNS`), written and kept."""
        engine, agg = self.engine, self.session.agg
        pids = self.session.process_pids()  # (the workers and the embedded cluster: growth of each)
        if pids != self._pids:  # a restart or a replacement: the monitor's processes panel follows it
            self.session.follow_processes()
            for name, pid in pids.items():
                if pid not in self.noted:
                    self._note(name, pid)
            self._pids = pids
        now = engine.now()
        # the counters alone: a whole monitor frame (histogram merges and snapshots, the page grid, series)
        # per sample would make kvtui's RSS creep in step with --sample-s, growth the soak would then report
        totals, errors = agg.totals(), agg.errors()
        tree = self.sampler.tree(pids)
        procs = self.sampler.processes(pids)
        store = self.session.panels.store
        row = {"t_s": round(now, 3), "requests": totals["requests"], "mismatches": totals["mismatches"],
               "errors_total": sum(errors.values()), "lost": sum(r.lost for r in engine.replacements),
               "faults": sum(1 for r in self._records() if r.t_s is not None),
               "faults_open": int(self.injector is not None and self.injector.open),
               "keys": store.get("keys") if store.get("up") else None,
               "used_bytes": store.get("used_bytes") if store.get("up") else None,
               "store_up": None if store.get("up") is None else int(bool(store.get("up"))),
               "errors": " ".join(f"{k}={v}" for k, v in sorted(errors.items())), **self.sampler.tcp(tree)}
        if self._prev is not None:
            t0, prev = self._prev
            dt = now - t0
            row["req_per_s"] = round((totals["requests"] - prev["requests"]) / dt, 2) if dt > 0 else None
            dp = totals["pages_total"] - prev["pages_total"]
            row["page_hit_rate"] = round((totals["pages_hit"] - prev["pages_hit"]) / dp, 4) if dp > 0 else None
        self._prev = (now, totals)
        for name in PROCS:
            p = procs.get(name, {})
            row.update({f"rss_bytes_{name}": p.get("rss_bytes"), f"fds_{name}": p.get("fds"),
                        f"pid_{name}": p.get("pid") if p.get("rss_bytes") is not None else None})
        for k, col in self.cols.items():
            v = row.get(k)
            col.append(math.nan if v is None else float(v))
        self.samples += 1
        self.last = row
        if self.series is not None:
            self.series.write(row)
        if self.progress is not None:
            self.progress(self._progress_line(row))
        return row

    def _records(self) -> list:
        return self.injector.records if self.injector is not None else []

    def _progress_line(self, row: dict) -> str:
        recs = [r for r in self._records() if r.t_s is not None]
        rec_ok = sum(1 for r in recs if r.recovery_s is not None)
        rss = row.get("rss_bytes_kvtui")
        hit = row.get("page_hit_rate")
        return (f"soak {_clock(row['t_s'])}/{_clock(self.plan.duration_s)} · {row['requests']:,} req "
                f"({row.get('req_per_s') or 0:.0f}/s) · hit {'n/a' if hit is None else f'{hit:.0%}'} · faults "
                f"{len(recs)}/{len(self.faults)} ({rec_ok} recovered) · lost {row['lost']} · errors "
                f"{row['errors_total']:,} · kvtui RSS {0 if rss is None else rss / 2**20:.0f} MiB, "
                f"{row.get('fds_kvtui')} fds · TCP {row.get('tcp_established')} est, {row.get('tcp_time_wait')} "
                f"TIME_WAIT · keys {row.get('keys') if row.get('keys') is not None else '—'}")

    # -- after the session stopped ----------------------------------------------------------------------
    def orphans(self) -> list[dict]:
        """Processes kvtui started (every descendant seen, and each a fault started) still running, and any
        ``mooncake_master`` still serving this soak's ports (embedded: an attached cluster's master is not
        kvtui's). The ``multiprocessing`` resource tracker is not counted: kvtui's own helper, it ends with it."""
        left = []
        for pid, (name, created) in {**self.sampler.seen, **self.noted}.items():
            try:
                p = psutil.Process(pid)
                if abs(p.create_time() - created) > 0.01 or p.status() == psutil.STATUS_ZOMBIE:
                    continue
                if "resource_tracker" in " ".join(p.cmdline()):
                    continue
                left.append({"pid": pid, "name": name})
            except psutil.Error:
                continue
        rpc = [f"--rpc_port={port}" for port in self.cluster_ports] if self.embedded else []
        for p in psutil.process_iter(["pid", "name", "cmdline"]):
            try:
                if "mooncake_master" in (p.info["name"] or "") and any(a in rpc for a in p.info["cmdline"] or []):
                    if p.pid not in {o["pid"] for o in left}:
                        left.append({"pid": p.pid, "name": "mooncake_master"})
            except psutil.Error:
                continue
        return left

    def summary(self, final, counts, interrupted: bool) -> dict:
        """The soak's summary (after the session stopped): ``final``, the session's last frame; ``counts``
        what became of its requests (:class:`kvtui.live.RunCounts`). Fields: the faults'
        (:func:`~kvtui.soak.summary.fault_summary`), the growth per hour
        (:func:`~kvtui.soak.summary.resource_growth`), the targets and the run's summary
        (:func:`~kvtui.metrics.aggregate.summary_from_frame`); with failovers (the HA faults', and any kvtui did
        not cause) or store faults' loss checks, ``pages_lost`` (:func:`kvtui.core.failover.loss_summary`; with
        store checks, ``expected``: the pages gone with a killed node's DRAM and those the disk tier evicted),
        ``failover_reports`` and ``store_checks`` (:class:`kvtui.core.storeloss.StoreLossReport` as dicts), and the
        targets ``zero_pages_lost`` (beyond the leader-kill window; None when a check could not be made and none
        lost pages) and, with failovers, ``zero_pages_lost_in_window``;
        :func:`~kvtui.soak.summary.format_soak` prints them."""
        from kvtui.metrics.aggregate import summary_from_frame

        plan = self.plan
        run = summary_from_frame(final)
        records = self._records()
        faults = fault_summary(records, tuple(k for k in plan.kinds if k not in self.skipped_kinds))
        by_n = {r.failover["n"]: f"fault {r.n}" for r in records if r.failover}
        reports = [r.as_dict() for r in self.session.failovers]
        checks = [r.loss_check for r in records if r.loss_check is not None]  # (the store faults')
        pages = loss_summary(reports + checks, [by_n.get(r["n"], f"failover {r['n']}") for r in reports]
                             + [f"fault {c['n']}" for c in checks])
        if checks:
            pages["expected"] = {"gone_with_dram": sum(c["gone_with_dram"] for c in checks),
                                 "evicted": sum(c["pages_evicted"] for c in checks)}
        lost = sum(r.lost for r in self.engine.replacements)
        elapsed = self.last.get("t_s", 0.0)
        cols = {k: [None if math.isnan(v) else v for v in col] for k, col in self.cols.items()}
        growth = resource_growth(cols, PROCS, plan.warmup_s)
        tw = time_wait_check(cols["tcp_time_wait"], growth["tcp_time_wait"], ephemeral_ports())
        orphans = self.orphans()
        kv_rss = growth["rss_MiB"].get("kvtui")
        fds_growing = {p: g["rise"] for p, g in growth["fds"].items() if g["rise"] > FD_RISE}
        est = [int(v) for v in cols["tcp_established"] if v is not None]
        seen: dict[str, list[int]] = {}
        for pid, (name, _t) in sorted({**self.sampler.seen, **self.noted}.items()):
            seen.setdefault(name, []).append(pid)
        return {
            "duration_s": plan.duration_s, "elapsed_s": elapsed, "sample_s": plan.sample_s, "warmup_s": plan.warmup_s,
            "chaos_per_min": plan.chaos_per_min, "seed": plan.seed, "fault_kinds": list(plan.kinds),
            "unavailable_kinds": self.skipped_kinds, "pause_s": plan.pause_s,
            "recovery_timeout_s": plan.recovery_timeout_s,
            "schedule": [f.as_dict() for f in self.faults],
            "requests": {"issued": counts.issued, "completed": counts.completed,
                         "per_s": counts.completed / elapsed if elapsed > 0 else 0.0, "lost": lost,
                         "with_errors": self.tracker.with_errors, "dropped": counts.dropped - lost,
                         "abandoned": counts.abandoned},
            "verified_pages": run["verified_pages"], "mismatches": run["mismatches"], "errors": run["errors"],
            "verify": self.engine.options.verify,
            "faults": faults, "fault_events": [r.as_dict() for r in records],
            **({"pages_lost": pages} if reports or checks else {}),
            **({"failover_reports": reports} if reports else {}),
            **({"store_checks": checks} if checks else {}),
            "worker_replacements": [asdict(r) for r in self.engine.replacements],
            "growth_per_hour": growth, "time_wait": tw,
            "tcp": {"established_last": est[-1] if est else None, "established_max": max(est) if est else None},
            "targets": {"every_fault_recovered": faults["not_recovered"] == faults["cut_short"]
                        and faults["inject_errors"] == 0,
                        "zero_mismatches": run["mismatches"] == 0,
                        **({"zero_pages_lost": None if pages["unchecked"] and not pages["beyond_window"] else
                            pages["beyond_window"] == 0} if reports or checks else {}),
                        **({"zero_pages_lost_in_window": pages["in_window"] == 0} if reports else {}),
                        "zero_orphans": not orphans,
                        "kvtui_rss_MiB_per_h": kv_rss["per_h"] if kv_rss else None,
                        "kvtui_rss_ok": None if kv_rss is None else kv_rss["per_h"] <= KVTUI_RSS_TARGET_MIB_PER_H,
                        "fds_flat": not fds_growing, "fds_growing": fds_growing},
            "orphans": orphans, "processes_seen": seen, "cluster_ports": sorted(self.cluster_ports),
            "series": {"path": plan.series_path, "rows": self.samples},
            "chaos_error": None if self.injector is None or self.injector.error is None else str(self.injector.error),
            "run": run, "interrupted": interrupted,
        }


def _ports(endpoints) -> set[int]:
    """The cluster's ports: master RPC, metrics, metadata (from the endpoints' addresses)."""
    import re

    ports = set()
    for text in (endpoints.master, endpoints.metadata_url, endpoints.metrics_url or ""):
        m = re.search(r":(\d+)(/|$)", text or "")
        if m:
            ports.add(int(m.group(1)))
    return ports


def _clock(seconds: float) -> str:
    """``H:MM:SS`` or ``M:SS``."""
    s = int(max(0, seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"

