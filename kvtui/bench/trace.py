"""``kvtui bench --trace``: the replay rate of a FAST'25 trace through the engine against a bare loop of the
same store calls (:mod:`kvtui.bench.bare`) on the same cluster, one request at a time, and against the
same calls split over two processes (the two-process loop: what handing each request from decode's process
to prefill's costs by itself, without kvtui's work).

The three sides alternate ``rounds`` times (ABC, then CBA), each replay from an empty store; a round's
ratio is bare-loop seconds / engine seconds of its replays back to back, and the ratio judged is the median
of the rounds' ratios (a slow spell of the machine hits both sides of a ratio). ``engine_vs_two_process_loop``
(two-process seconds / engine seconds) and ``two_process_loop_vs_bare_loop`` (bare / two-process) split that
ratio into kvtui's own work and the hand-off between two processes; their product is the ratio of a round.

Each replay also counts the CPU it cost, per process, in ms per request (user + system time, psutil's
``cpu_times``): on the engine side the parent (hashing, routing, results into metrics), the decode and
prefill workers and the cluster's processes; on the bare loop's side the loop's own process (its timed loop
alone) and the same cluster processes; on the two-process loop's, its reader's timed loop, its writer from
its start-up's end to the loop's end, and the cluster processes. A replay on few cores is bound by that CPU,
so these figures say where the time of a request goes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from kvtui.bench.bare import bare_replay
from kvtui.bench.engines import BenchEngines, BenchInputs, BrokenStoreWatch, say
from kvtui.core.units import median

if TYPE_CHECKING:
    from kvtui.core.events import EngineEvent, RequestResult
    from kvtui.core.layout import PageLayout
    from kvtui.engine.engine import Engine
    from kvtui.metrics.summary import RunSummary
    from workload import Request, TraceRow


@dataclass(frozen=True)
class Side:
    """One side of ``bench --trace``: ``label`` in the table and the progress lines, ``key`` the prefix of its
    fields in ``--json`` (``{key}_s``, ``{key}_pages_hit``, ``{key}_cpu_ms_per_request`` per round; ``{key}``
    for its best run), ``doing`` the end of its progress line."""

    label: str
    key: str
    doing: str


SIDES = (Side("engine", "engine", "through the engine, one request at a time…"),
         Side("bare loop", "bare_loop", "with a bare loop of the same store calls…"),
         Side("two-process loop", "two_process_loop",
              "with the same calls split over two processes (the hand-off alone)…"))
"""The sides of ``bench --trace``, in a round's order (odd rounds reverse it)."""

CPU_NAMES = {"parent": "kvtui's own process (hashing, routing, results into metrics)",
             "decode": "the decode worker", "prefill": "the prefill worker",
             "loop": "the bare loop's process", "reader": "the two-process loop's reader (decode's part)",
             "writer": "its writer (prefill's part)", "master": "mooncake_master",
             "store": "mooncake_client (the segment's real client)",
             "metadata": "Mooncake's HTTP metadata server"}
"""What each process named in ``cpu_ms_per_request`` is (the legend of the table's CPU lines)."""


class TraceRound(TypedDict):
    """One round of ``bench --trace`` (``rounds`` of its ``--json``), each side's fields named after its
    :attr:`Side.key`: its replay's seconds (``{key}_s``), page hits (``{key}_pages_hit``; the engine's tokens hit,
    token hit rate and mismatches too) and CPU per request by process (``{key}_cpu_ms_per_request``, ms), and the
    round's ratios of seconds."""

    engine_s: float
    bare_loop_s: float
    two_process_loop_s: float
    engine_vs_bare_loop: float
    engine_vs_two_process_loop: float
    two_process_loop_vs_bare_loop: float
    engine_pages_hit: int
    engine_tokens_hit: int
    engine_token_hit_rate: float
    engine_mismatches: int
    bare_loop_pages_hit: int
    two_process_loop_pages_hit: int
    engine_cpu_ms_per_request: dict[str, float]
    bare_loop_cpu_ms_per_request: dict[str, float]
    two_process_loop_cpu_ms_per_request: dict[str, float]


class LoopRun(TypedDict):
    """A side's best run: its ``seconds``, ``requests_per_s`` and ``pages_hit``."""

    seconds: float
    requests_per_s: float
    pages_hit: int


class EngineRun(LoopRun):
    """The engine's best run (:class:`LoopRun`), the last round's ``tokens_hit`` and ``token_hit_rate`` and the
    pages that failed verification over every round (``mismatches``)."""

    tokens_hit: int
    token_hit_rate: float
    mismatches: int


class TraceRatios(TypedDict):
    """The ratios of ``bench --trace`` (medians of the rounds', and engine ÷ bare loop of the best runs)."""

    engine_vs_bare_loop: float
    engine_vs_bare_loop_best_of: float
    engine_vs_two_process_loop: float
    two_process_loop_vs_bare_loop: float


class TraceFigures(BenchInputs):
    """Every figure of ``kvtui bench --trace --json`` (:func:`measure_trace`): the trace (its name, a digest of the
    rows replayed, their count, ``block_tokens``, the rows skipped), the ``layout``, each round, each side's best
    run (``engine``, ``bare_loop``, ``two_process_loop``), ``cpu_ms_per_request`` (by side, by process: ms) and
    the ``ratios``."""

    trace: str
    trace_sha256: str
    rows: int
    block_tokens: int
    bad_rows_skipped: int
    layout: dict[str, int]
    rounds: list[TraceRound]
    engine: EngineRun
    bare_loop: LoopRun
    two_process_loop: LoopRun
    cpu_ms_per_request: dict[str, dict[str, float]]
    ratios: TraceRatios


@dataclass
class _Round:
    """One round as it is measured, by :attr:`Side.key`: each replay's ``seconds``, each loop's page ``hits``, each
    side's ``cpu`` per request by process (ms); and the engine's summary (``engine``)."""

    seconds: dict[str, float] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, dict[str, float]] = field(default_factory=dict)
    engine: RunSummary | None = None

    def as_dict(self) -> TraceRound:
        """The round's :class:`TraceRound`."""
        assert self.engine is not None  # (set once the round's sides have run)
        s, t = self.engine, self.seconds
        return {"engine_s": t["engine"], "bare_loop_s": t["bare_loop"], "two_process_loop_s": t["two_process_loop"],
                "engine_vs_bare_loop": t["bare_loop"] / t["engine"],
                "engine_vs_two_process_loop": t["two_process_loop"] / t["engine"],
                "two_process_loop_vs_bare_loop": t["bare_loop"] / t["two_process_loop"],
                "engine_pages_hit": s["pages_hit"], "engine_tokens_hit": s["tokens_hit"],
                "engine_token_hit_rate": s["token_hit_rate"], "engine_mismatches": s["mismatches"],
                "bare_loop_pages_hit": self.hits["bare_loop"],
                "two_process_loop_pages_hit": self.hits["two_process_loop"],
                "engine_cpu_ms_per_request": self.cpu["engine"],
                "bare_loop_cpu_ms_per_request": self.cpu["bare_loop"],
                "two_process_loop_cpu_ms_per_request": self.cpu["two_process_loop"]}


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """User + system CPU seconds so far of each process ``{name: pid}`` (a process that is gone is left
    out); the difference of two readings is what a replay cost."""
    import psutil

    out = {}
    for name, pid in pids.items():
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        out[name] = t.user + t.system
    return out


def cpu_ms_per_request(before: Mapping[str, float], after: Mapping[str, float], requests: int) -> dict[str, float]:
    """ms of CPU per request of each process read both times (``before``/``after``: :func:`cpu_seconds`)."""
    return {name: (after[name] - before[name]) * 1e3 / max(1, requests) for name in after if name in before}


def _median_per_process(rounds: list[dict[str, float]]) -> dict[str, float]:
    names = [n for n in rounds[0] if all(n in r for r in rounds)] if rounds else []
    return {n: median([r[n] for r in rounds]) for n in names}


def replay_through(engine: Engine, requests: list[Request], on_result: Callable[[RequestResult], Any]) -> None:
    """Replay ``requests`` through ``engine`` one at a time (:class:`~kvtui.engine.driver.Driver`, concurrency 1),
    each result to ``on_result``. Raises ``StoreError`` at the first request answered with one of
    :data:`~kvtui.core.codes.BROKEN_STORE_CODES`, or when the master (or, for dummy workers, the store node)
    stops answering mid-replay: a ``kvtui run`` holds dispatch until it answers again, but a bench cannot
    measure across an outage, so it stops at once instead of waiting for ever."""
    from kvtui.engine.driver import Driver
    from kvtui.mooncake.client import StoreError

    outage: list[str] = []

    def on_event(event: EngineEvent) -> None:
        if event.kind == "outage" and not outage:  # (the first outage event is its start)
            outage.append(event.text)
            driver.stop()

    broken = BrokenStoreWatch()

    def counted(result: RequestResult) -> None:  # answers of a broken store that did not (yet) hold dispatch count too
        on_result(result)
        if broken.add(result):
            driver.stop()  # (the requests under way are abandoned; none is reported after this one)

    driver = Driver(engine, requests, counted, on_event, concurrency=1)
    driver.run()
    broken.check("the engine's replay")
    if outage:
        raise StoreError(f"the engine's replay met a broken store ({outage[0]}); a bench does not wait it out")


def measure_trace(engines: BenchEngines, layout: PageLayout, trace: str, rows: list[TraceRow], block_tokens: int,
                  rounds: int, bad_rows: int = 0, label: str | None = None) -> TraceFigures:
    """Replay ``rows`` (the good rows of the file ``trace``, ``block_tokens`` tokens per hash id) ``rounds``
    times through each side (:data:`SIDES`); returns the fields of ``kvtui bench --trace --json``: per-round
    seconds, hits and ratios, each side's best run (seconds, requests/s, page hits) and the ratios (medians of
    the rounds, and engine/bare of the best runs), and ``cpu_ms_per_request``: each side's CPU per request by process,
    the median of the rounds (ms; the bare loop's ``loop`` is its timed loop alone, its cluster processes are counted
    over the loop process's whole life, start-up and close included, so they are if anything high). ``bad_rows``: how
    many rows the reader skipped (reported, not replayed); ``label``: the trace as the user named it (``synthetic``),
    reported as ``trace`` (default: the file). The bare loops read ``rows`` themselves from a temporary copy
    (synthesized rows included), not the file."""
    from kvtui.metrics.aggregate import Aggregator
    from workload import TraceWorkload
    from workload.synthesis import rows_to_jsonl

    engines = replace(engines, model=f"{engines.model}-engine-{uuid.uuid4().hex[:6]}")
    say(f"starting embedded cluster and workers ({layout.describe()})…")
    stack = engines.engine(layout)
    engine = stack.engine
    done: list[_Round] = []
    folder = Path(tempfile.mkdtemp(prefix="kvtui-bench-trace-"))
    bare_trace = folder / "rows.jsonl"  # the very rows the engine replays (--prefix-scale & co. applied)
    try:
        bare_trace_text = rows_to_jsonl(rows)
        bare_trace.write_text(bare_trace_text, encoding="utf-8")
        for r in range(rounds):
            rnd = _Round()
            times, cpu, hits = rnd.seconds, rnd.cpu, rnd.hits
            for side in SIDES[:: 1 if r % 2 == 0 else -1]:  # ABC CBA: warm-up favours none
                engine.clear_store()
                say(f"round {r + 1}/{rounds}: replaying {len(rows)} rows " + side.doing)
                if side.key == "engine":
                    # built before the clock starts, as the bare loops build their own
                    requests = list(TraceWorkload(rows, block_tokens=block_tokens, speed=None))
                    agg = Aggregator()
                    pids = {"parent": os.getpid(), **engine.worker_pids(), **stack.cluster.pids()}
                    cpu0, t0 = cpu_seconds(pids), time.perf_counter()
                    replay_through(engine, requests, agg.add)
                    times[side.key] = time.perf_counter() - t0
                    cpu[side.key] = cpu_ms_per_request(cpu0, cpu_seconds(pids), len(rows))
                    del requests
                else:  # the cluster's processes serve the loop; the (idle) workers are left out
                    cluster = stack.cluster.pids()
                    cpu0 = cpu_seconds(cluster)
                    two = side.key == "two_process_loop"
                    n, times[side.key], hits[side.key], loop_cpu, writer_cpu = bare_replay(
                        engine.endpoints.as_dict(), layout.as_dict(), f"bare-{uuid.uuid4().hex[:6]}",
                        str(bare_trace), block_tokens, two_process=two)
                    own = {"reader": loop_cpu, "writer": writer_cpu} if two else {"loop": loop_cpu}
                    cpu[side.key] = {**{k: v * 1e3 / max(1, n) for k, v in own.items()},
                                     **cpu_ms_per_request(cpu0, cpu_seconds(cluster), n)}
            engine_s, bare_s, two_s = times["engine"], times["bare_loop"], times["two_process_loop"]
            rnd.engine = agg.summary()
            done.append(rnd)
            say(f"round {r + 1}/{rounds}: engine {engine_s:.1f} s, bare loop {bare_s:.1f} s, two-process loop "
                f"{two_s:.1f} s → engine/bare loop {bare_s / engine_s:.2f} "
                f"(engine/two-process loop {two_s / engine_s:.2f})")
    finally:
        stack.stop()
        shutil.rmtree(folder, ignore_errors=True)
    best = {side.key: min(x.seconds[side.key] for x in done) for side in SIDES}
    figures = [x.as_dict() for x in done]
    last = figures[-1]

    def loop_run(key: str) -> LoopRun:  # (n: the requests the last loop replayed, every row)
        return {"seconds": best[key], "requests_per_s": n / best[key], "pages_hit": done[-1].hits[key]}

    return {"trace": label or trace, "trace_sha256": hashlib.sha256(bare_trace_text.encode()).hexdigest()[:16],
            "rows": len(rows), "block_tokens": block_tokens, "bad_rows_skipped": bad_rows,
            "layout": layout.as_dict(), "round_count": rounds, "rounds": figures,
            "engine": {"seconds": best["engine"], "requests_per_s": len(rows) / best["engine"],
                       "pages_hit": last["engine_pages_hit"], "tokens_hit": last["engine_tokens_hit"],
                       "token_hit_rate": last["engine_token_hit_rate"],
                       "mismatches": sum(x["engine_mismatches"] for x in figures)},
            "bare_loop": loop_run("bare_loop"), "two_process_loop": loop_run("two_process_loop"),
            "cpu_ms_per_request": {side.key: _median_per_process([x.cpu[side.key] for x in done]) for side in SIDES},
            "ratios": {"engine_vs_bare_loop": median([x["engine_vs_bare_loop"] for x in figures]),
                       "engine_vs_bare_loop_best_of": best["bare_loop"] / best["engine"],
                       "engine_vs_two_process_loop": median([x["engine_vs_two_process_loop"] for x in figures]),
                       "two_process_loop_vs_bare_loop": median([x["two_process_loop_vs_bare_loop"] for x in figures])}}


def format_trace(o: TraceFigures) -> str:
    """The human lines of a ``--trace`` run (``o``: :func:`measure_trace`'s figures), at most
    :data:`~kvtui.core.text.WIDTH` columns: each side's best run, the ratios (the judged one against its target,
    its split into the hand-off and kvtui's own work), the CPU lines and a legend."""
    from kvtui.bench.targets import LEGEND, ratio_section
    from kvtui.core.text import legend, wrap

    e = o["engine"]
    per_round = ", ".join(format(x["engine_vs_bare_loop"], ".2f") for x in o["rounds"])
    by_side: Mapping[str, Any] = o  # (each side's best run under its Side.key)
    loops = [side for side in SIDES[1:] if side.key in o]
    lines = wrap(f"kvtui bench --trace {o['trace']}: {o['rows']:,} rows, {len(o['rounds'])} round(s); the best run "
                 "of each side:")
    lines.append(f"  {'':<16} {'seconds':>8} {'req/s':>9} {'pages hit':>11}")
    for side in SIDES[:1] + tuple(loops):
        x = by_side[side.key]
        lines.append(f"  {side.label:<16} {x['seconds']:8,.1f} {x['requests_per_s']:9,.1f} {x['pages_hit']:11,}"
                     + (f"  ({e['token_hit_rate']:.2%} of tokens)" if side.key == "engine" else ""))
    lines += ratio_section(o["ratios"], ("engine_vs_bare_loop", "engine_vs_bare_loop_best_of",
                                         "two_process_loop_vs_bare_loop", "engine_vs_two_process_loop"))
    note = f"engine ÷ bare loop is the median of the rounds' ratios ({per_round})"
    if len(loops) > 1:
        note += (", split into two-process loop ÷ bare loop (the hand-off between two processes alone) and "
                 "engine ÷ two-process loop (kvtui's own work: parent, messages, verify and fill), each the median "
                 "of the rounds (a round's two multiply to its engine ÷ bare loop; their medians need not)")
    lines += wrap(note + ".", first="  ", rest="  ")
    lines += _differing_hits(o)
    cpu, named = _format_cpu(o.get("cpu_ms_per_request"))
    lines += cpu
    lines += legend([(name, what) for name, what in CPU_NAMES.items() if name in named] + [LEGEND])
    return "\n".join(lines)


def _differing_hits(o: TraceFigures) -> list[str]:
    """A warning when the sides of a ``--trace`` run hit different pages (none when they agree)."""
    from kvtui.core.text import wrap

    keys = [f"{side.key}_pages_hit" for side in SIDES]
    rounds: list[Mapping[str, object]] = list(o["rounds"])  # (each side's hits under its Side.key)
    return [] if all(len({r[k] for k in keys if k in r}) < 2 for r in rounds) else ["", *wrap(
        "warning: the engine and the bare loops hit different pages (evictions: the store is smaller than the "
        "trace's pages, see --store-size), so the ratio compares different work", rest="  ")]


def _format_cpu(cpu: Mapping[str, Mapping[str, float]] | None) -> tuple[list[str], set[str]]:
    """The CPU-per-request section of a ``--trace`` run (none without it): each side's total and its processes;
    and the processes named (the legend explains them, :data:`CPU_NAMES`)."""
    from kvtui.core.text import wrap

    if not cpu:
        return [], set()
    lines = ["", *wrap("CPU per request by process, each the median of the rounds (ms, user + system; a process "
                       "under 0.005 ms is counted in the total, not listed):")]
    named: set[str] = set()
    for side in (s for s in SIDES if s.key in cpu):
        shown = {name: ms for name, ms in cpu[side.key].items() if ms >= 0.005}
        named.update(shown)
        parts = " + ".join(f"{name} {ms:.2f}" for name, ms in shown.items())
        lines += wrap(f"{sum(cpu[side.key].values()):5.2f} = {parts}", first=f"  {side.label:<16} ",
                      rest=" " * 27)
    return lines, named
