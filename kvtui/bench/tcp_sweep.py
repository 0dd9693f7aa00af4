"""``kvtui bench --tcp-sweep``: remote reload throughput under each of a few Mooncake TCP transport settings.

Mooncake's TCP transport splits a transfer into slices (``MC_TCP_SLICE_SIZE``, 64 KiB in the source) and
keeps few in flight per peer (kvcache-ai/Mooncake RFC #3446 describes the design; ``MC_TCP_LANES_PER_PEER``
sets the connections per peer). Each setting is measured on a fresh embedded cluster (segment on the store
node, so every reload crosses loopback TCP), the settings in alternating order across rounds (A B C … then
… C B A) so a slow spell of the machine hits every setting; each round also measures one loopback TCP
stream of the same bytes. The figure per setting is the median over rounds of each round's reload MB/s
p50 (10^6 B/s), and its ratio to the median loopback TCP figure.

The settings go to the processes kvtui starts through the environment (master, store node and workers
inherit it; kvtui sets none of these variables itself), so a user applies the sweep's best setting the same
way: ``MC_TCP_SLICE_SIZE=… kvtui watch``. kvtui keeps Mooncake's defaults: which setting is fastest depends
on the machine, and this sweep is how to find out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from kvtui.bench.baselines import loopback_tcp_mbps
from kvtui.bench.engines import BenchEngines, BenchInputs, Environment, environment, first_workers, say
from kvtui.bench.reuse import ReloadFigures, reload_figures
from kvtui.core.text import plural
from kvtui.core.units import median
from kvtui.engine.protocol import BenchReload, Publish

if TYPE_CHECKING:
    from kvtui.core.layout import PageLayout

SETTINGS: tuple[dict[str, str], ...] = (
    {"MC_TCP_SLICE_SIZE": "65536"},
    {"MC_TCP_SLICE_SIZE": "1048576"},
    {"MC_TCP_SLICE_SIZE": "4194304"},
    {"MC_TCP_SLICE_SIZE": "16777216"},
    {"MC_TCP_SLICE_SIZE": "4194304", "MC_TCP_LANES_PER_PEER": "2"},
    {"MC_TCP_SLICE_SIZE": "4194304", "MC_TCP_LANES_PER_PEER": "4"},
)
"""The settings swept (``MC_*`` variables and their values); the first is Mooncake's own slice size."""


class SettingFigures(TypedDict):
    """One setting's row: its ``name`` (:func:`setting_name`), ``env`` (its variables), ``MBps_p50`` (the median
    over rounds of each round's reload MB/s p50), ``rounds_MBps`` (each round's) and ``vs_loopback_tcp``."""

    name: str
    env: dict[str, str]
    MBps_p50: float
    rounds_MBps: list[float]
    vs_loopback_tcp: float


class TcpSweepRatios(TypedDict):
    """The best setting's ``tcp_reload_vs_loopback_tcp`` and ``best_vs_mooncake_default`` (÷ the first setting)."""

    tcp_reload_vs_loopback_tcp: float
    best_vs_mooncake_default: float


class TcpSweepFigures(BenchInputs):
    """Every figure of ``kvtui bench --tcp-sweep --json`` (:func:`measure_tcp_sweep`)."""

    layout: dict[str, int]
    iterations: int
    rounds: int
    settings: list[SettingFigures]
    environment: Environment
    best: str
    loopback_tcp_MBps: float
    loopback_tcp_rounds_MBps: list[float]
    verified: bool
    ratios: TcpSweepRatios


class _Setting(ReloadFigures):
    """One setting on one cluster: :class:`~kvtui.bench.reuse.ReloadFigures` and the ``bytes`` of a reload."""

    bytes: int


def setting_name(setting: dict[str, str]) -> str:
    """``MC_TCP_SLICE_SIZE=4194304 MC_TCP_LANES_PER_PEER=2``: a setting as an environment prefix."""
    return " ".join(f"{k}={v}" for k, v in setting.items())


@contextmanager
def _environment(setting: dict[str, str]) -> Iterator[None]:
    """``setting`` in ``os.environ`` for the processes started meanwhile; the previous values after."""
    old = {k: os.environ.get(k) for k in setting}
    os.environ.update(setting)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _one(engines: BenchEngines, layout: PageLayout, prompt: np.ndarray, second: np.ndarray, iterations: int
         ) -> _Setting:
    """One setting on a fresh cluster: publish, ``iterations`` timed reloads of the shared prefix."""
    stack = engines.engine(layout, worker_client="real")  # (the TCP path: a store node, real clients)
    try:
        prefill, decode = first_workers(stack.engine)
        prefill.call(Publish(prompt))
        decode.call(BenchReload(second, 1))  # first touch of the reload buffer, untimed
        runs = [t.result for t in decode.call(BenchReload(second, iterations))]
    finally:
        stack.stop()
    return {**reload_figures(runs), "bytes": runs[0].bytes_loaded}


def measure_tcp_sweep(engines: BenchEngines, layout: PageLayout, prompt_tokens: int, shared_tokens: int,
                      iterations: int, rounds: int) -> TcpSweepFigures:
    """Every :data:`SETTINGS` entry ``rounds`` times (alternating order), with a loopback TCP baseline per
    round. Returns ``{"settings": [{name, env, MBps_p50, rounds_MBps, vs_loopback_tcp}], "best", "loopback_tcp_MBps",
    "rounds", "verified", "ratios": {"tcp_reload_vs_loopback_tcp"}}``."""
    prompt = np.arange(prompt_tokens, dtype=np.uint32) + 1000
    second = prompt.copy()
    second[shared_tokens:] += 1_000_000
    per: dict[int, list[float]] = {i: [] for i in range(len(SETTINGS))}
    tcp: list[float] = []
    verified = True
    for r in range(rounds):
        order = list(range(len(SETTINGS)))
        if r % 2:
            order.reverse()
        for i in order:
            say(f"round {r + 1}/{rounds}: {setting_name(SETTINGS[i])}…")
            with _environment(SETTINGS[i]):
                one = _one(engines, layout, prompt, second, iterations)
            per[i].append(one["MBps_p50"])
            verified = verified and one["verified"]
        tcp.append(loopback_tcp_mbps(one["bytes"], iterations))
    tcp_mbps = median(tcp)
    rows: list[SettingFigures] = [{"name": setting_name(s), "env": dict(s), "MBps_p50": median(per[i]),
                                   "rounds_MBps": per[i], "vs_loopback_tcp": median(per[i]) / tcp_mbps}
                                  for i, s in enumerate(SETTINGS)]
    best = max(rows, key=lambda row: row["MBps_p50"])
    return {"layout": layout.as_dict(), "iterations": iterations, "rounds": rounds, "settings": rows,
            "environment": environment(None),
            "best": best["name"], "loopback_tcp_MBps": tcp_mbps, "loopback_tcp_rounds_MBps": tcp,
            "verified": verified, "ratios": {"tcp_reload_vs_loopback_tcp": best["vs_loopback_tcp"],
                                             "best_vs_mooncake_default": best["MBps_p50"] / rows[0]["MBps_p50"]}}


def format_tcp_sweep(o: TcpSweepFigures) -> str:
    """The human table of :func:`measure_tcp_sweep`'s figures, at most :data:`~kvtui.core.text.WIDTH` columns."""
    from kvtui.bench.targets import LEGEND, ratio_section
    from kvtui.core.text import legend, wrap
    from kvtui.metrics.figures import RELOAD_P50, TCP_P50, number

    w = max(len(s["name"]) for s in o["settings"])
    rounds = plural(o["rounds"], "round")
    lines = wrap(f"kvtui bench --tcp-sweep: {RELOAD_P50.name} across loopback TCP under each Mooncake TCP setting, "
                 f"the median of {rounds} ({RELOAD_P50.unit}), and its ratio to one loopback TCP stream:")
    lines.append(f"  {'setting':<{w}}  {RELOAD_P50.unit:>8}  {'÷ TCP':>6}")
    for s in o["settings"]:
        mark = "  ← best" if s["name"] == o["best"] else ""
        lines.append(f"  {s['name']:<{w}}  {number(s['MBps_p50'], 'MB/s'):>8}  {number(s['vs_loopback_tcp'], '×'):>5}×"
                     f"{mark}")
    lines.append(f"  {TCP_P50.label.removeprefix('baseline '):<{w}}  {number(o['loopback_tcp_MBps'], 'MB/s'):>8}  "
                 "(one stream, the same bytes)")
    lines.append(f"  verified: {'yes' if o['verified'] else 'MISMATCH'}; the first setting is Mooncake's own (64 KiB "
                 "slices)")
    lines += ratio_section(o["ratios"], ("tcp_reload_vs_loopback_tcp", "best_vs_mooncake_default"))
    lines += legend([LEGEND])
    return "\n".join(lines)
