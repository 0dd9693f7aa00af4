"""``kvtui bench``: reproduce the demo card's figures on this machine, with same-run baselines.

Steps (seed layout unless overridden): the prefill worker publishes a 2,048-token prompt; the decode worker
reloads a second request sharing its first 1,792 tokens ``--iterations`` times (7 of 8 pages); the same
keys are read with a plain ``batch_get_into`` (no connector) from the same decode process; the reload is
repeated for 1..N concurrent read streams; the PR example's ``tiny`` case (3 of 4 pages shared) runs on the
same store; then the whole thing is repeated with the segment co-located with decode. Baselines: one
loopback TCP stream and an in-process memcpy of the same bytes. MB/s are 10^6 bytes per second.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from kvtui.commands.common import add_page_arguments, check_refresh_hz, layout_of
from kvtui.commands.run import check_writable, write_json_atomic
from kvtui.core.defaults import DEFAULT_HZ, MAX_HZ
from kvtui.core.errors import KvtuiError


def register(subparsers) -> None:
    """Add the ``bench`` subcommand."""
    p = subparsers.add_parser(
        "bench", help="reproduce the demo's reuse figures with same-run baselines",
        description="Publish a prompt's KV pages with the prefill worker, reload a second request that shares "
                    "its prefix with the decode worker, and report hit rate, reload latency, reuse/publish MB/s "
                    "and ratios against raw Mooncake reads, one loopback TCP stream and memcpy, all measured "
                    "in this run on this machine.")
    p.add_argument("--prompt-tokens", type=int, default=2048, metavar="TOKENS", help="tokens of the published prompt (default 2048)")
    p.add_argument("--shared-tokens", type=int, default=1792, metavar="TOKENS",
                   help="tokens the second request shares with the first (default 1792)")
    p.add_argument("--iterations", type=int, default=20, metavar="N", help="reloads to time (default 20)")
    p.add_argument("--store-size", default="1GiB", metavar="BYTES", help="embedded store segment, bytes with units (default 1GiB)")
    p.add_argument("--max-streams", type=int, default=4, metavar="N",
                   help="try reloads split across 1..N concurrent batch_get_into calls (default 4)")
    p.add_argument("--json", metavar="PATH", help="write every figure as JSON to PATH")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--trace", metavar="FILE",
                   help="instead: replay this FAST'25 trace one request at a time through the engine and through a "
                        "bare loop of the same store calls, and report the replay rates and their ratio "
                        "(use a small layout, e.g. --layers 1 --kv-heads 1 --head-dim 1 --elem-bytes 1 --page-tokens 512)")
    mode.add_argument("--ui", action="store_true",
                   help="instead: the workload rate with the live monitor (headless) against the same scenario "
                        "without it, and the monitor process's CPU while the workload is paused "
                        "(use a small layout, e.g. --layout tiny)")
    p.add_argument("--seconds", type=float, default=8.0, metavar="SECONDS", help="--ui: length of each phase (default 8)")
    p.add_argument("--refresh-hz", type=float, default=DEFAULT_HZ, metavar="HZ",
                   help=f"--ui: the monitor's screen updates per second, ≤ {MAX_HZ:g} (default {DEFAULT_HZ:g}, as kvtui "
                        "watch)")
    p.add_argument("--rounds", type=int, default=3, metavar="N",
                   help="--trace / --ui: alternate the two sides N times (ABBA order), each from an empty store; the "
                        "ratio judged against the target is the median of the rounds' ratios, each taken between "
                        "two runs back to back, so a slow spell of the machine hits both sides of a ratio (the "
                        "ratio of each side's best run is printed too; default 3)")
    p.add_argument("--trace-block-tokens", type=int, default=512, metavar="TOKENS", help="tokens per trace hash id (default 512)")
    add_page_arguments(p, "seed")
    p.set_defaults(func=run)


def _stats(values: list[float]) -> dict:
    v = sorted(values)
    return {"min": v[0], "p50": v[len(v) // 2], "mean": statistics.fmean(v), "max": v[-1]}


def _say(msg: str) -> None:
    print(f"kvtui bench: {msg}", file=sys.stderr, flush=True)


def _engine(layout, args, store_bytes, segment_on="store", endpoints=None):
    from kvtui.commands.common import start_engine
    from kvtui.engine.cluster import ClusterOptions
    from kvtui.engine.engine import EngineOptions

    opts = EngineOptions(layout=layout, model=args.model, scheme=args.scheme, namespace=args.key_prefix,
                         segment_on=segment_on, store_bytes=store_bytes, read_streams=1, cluster=ClusterOptions())
    return start_engine(opts, endpoints)


def _reuse_case(engine, prompt: np.ndarray, second: np.ndarray, iterations: int) -> dict:
    """Publish ``prompt`` on prefill, reload ``second`` ``iterations`` times on decode."""
    pub = engine.prefill.call("publish", prompt, None, 0)
    runs = engine.decode.call("bench_reload", second, iterations)
    return {"publish": pub, "runs": runs}


def _reload_figures(runs: list[dict]) -> dict:
    reload_ms = [r["probe_ms"] + r["read_ms"] for r in runs]
    nbytes = runs[0]["bytes_loaded"]
    mbps = [nbytes / (ms / 1e3) / 1e6 for ms in reload_ms if ms > 0]
    return {"reload_ms": _stats(reload_ms), "MBps_p50": sorted(mbps)[len(mbps) // 2],
            "verify_ms_p50": sorted(r["verify_ms"] for r in runs)[len(runs) // 2],
            "verified": all(r["verified"] == r["pages_hit"] and r["mismatches"] == 0 for r in runs)}


def run(args: argparse.Namespace) -> int:
    """Run every step, print the table, write ``--json``; exit 1 if any page failed verification."""
    from kvtui.bench.baselines import loopback_tcp_mbps, memcpy_mbps
    from kvtui.core.units import parse_bytes

    layout = layout_of(args)
    try:
        store_bytes = parse_bytes(args.store_size)
    except ValueError as exc:
        raise KvtuiError(f"--store-size: {exc}") from None
    if args.iterations < 1 or args.max_streams < 1:
        raise KvtuiError("--iterations and --max-streams must be at least 1")
    if args.prompt_tokens < layout.page_tokens:
        raise KvtuiError(f"--prompt-tokens must hold at least one page ({layout.page_tokens} tokens)")
    if not (0 < args.shared_tokens <= args.prompt_tokens):
        raise KvtuiError("--shared-tokens must be within 1..--prompt-tokens")
    pages = args.prompt_tokens // layout.page_tokens
    if pages * layout.page_bytes * 2 > store_bytes:
        raise KvtuiError(f"the store ({store_bytes} bytes) cannot hold {pages} pages of {layout.page_bytes} bytes "
                         "twice; raise --store-size")
    if args.json:
        check_writable(args.json, "--json")
    from kvtui.commands.common import isolate

    _say(f"network: {isolate('auto')}")
    if args.trace:
        return _trace_bench(args, layout, store_bytes)
    if args.ui:
        return _ui_bench(args, layout, store_bytes)
    prompt = np.arange(args.prompt_tokens, dtype=np.uint32) + 1000
    second = prompt.copy()
    second[args.shared_tokens:] += 1_000_000  # diverges after the shared prefix
    out: dict = {"layout": layout.as_dict(), "page_bytes": layout.page_bytes, "iterations": args.iterations}

    _say("starting embedded cluster (segment on a separate store node) and workers…")
    engine = _engine(layout, args, store_bytes)
    try:
        _say(f"publishing a {args.prompt_tokens}-token prompt, reloading the shared prefix {args.iterations}×…")
        case = _reuse_case(engine, prompt, second, args.iterations)
        pub, runs = case["publish"], case["runs"]
        main = _reload_figures(runs)
        hit = runs[0]["pages_hit"]
        keys = engine.decode.call("keys", second, None)[:hit]
        _say("raw batch_get_into of the same keys (no connector)…")
        raw = engine.decode.call("bench_raw_get", keys, args.iterations)
        raw_ms = [r["wall_ms"] for r in raw]
        raw_mbps = hit * layout.page_bytes / (sorted(raw_ms)[len(raw_ms) // 2] / 1e3) / 1e6
        streams = {}
        for n in range(1, args.max_streams + 1):
            _say(f"reload split across {n} concurrent read stream(s)…")
            engine.decode.call("set_read_streams", n)
            streams[n] = _reload_figures(engine.decode.call("bench_reload", second, args.iterations))
        best_n = max(streams, key=lambda n: streams[n]["MBps_p50"])
        _say("the PR example's tiny layout (3 of 4 pages shared)…")
        tiny = _tiny_case(engine, args)
    finally:
        engine.stop()

    _say("again with the segment co-located with the decode worker…")
    engine = _engine(layout, args, store_bytes, segment_on="decode")
    try:
        _reuse_case(engine, prompt, second, args.iterations)
        co_streams = {}
        for n in sorted({1, best_n}):
            engine.decode.call("set_read_streams", n)
            co_streams[n] = _reload_figures(engine.decode.call("bench_reload", second, args.iterations))
    finally:
        engine.stop()
    co = max(co_streams.values(), key=lambda f: f["MBps_p50"])

    nbytes = hit * layout.page_bytes
    _say("baselines: memcpy and one loopback TCP stream of the same bytes…")
    memcpy = memcpy_mbps(nbytes, args.iterations)
    tcp = loopback_tcp_mbps(nbytes, args.iterations)
    best = streams[best_n]
    publish_mbps = pub["bytes_written"] / (pub["put_ms"] / 1e3) / 1e6 if pub["put_ms"] > 0 else 0.0
    verified = main["verified"] and all(s["verified"] for s in streams.values()) and tiny["verified"] \
        and co["verified"] and all(s["verified"] for s in co_streams.values())
    out.update({
        "tokens_requested": int(args.prompt_tokens), "tokens_skipped": hit * layout.page_tokens,
        "pages_total": runs[0]["pages_total"], "pages_hit": hit, "hit_rate": hit / runs[0]["pages_total"],
        "pages_published": pub["stored"], "publish_ms": pub["probe_ms"] + pub["put_ms"],
        "reload_ms": main["reload_ms"], "reload_read_streams": 1,
        "reuse_read_MBps_p50": main["MBps_p50"], "publish_write_MBps": publish_mbps,
        "bytes_reloaded": nbytes, "verify_ms_p50": main["verify_ms_p50"], "verified": bool(verified),
        "best_read_streams": best_n, "best_reload_ms": best["reload_ms"], "best_reuse_read_MBps_p50": best["MBps_p50"],
        "read_streams": {str(n): {"reload_ms_p50": f["reload_ms"]["p50"], "MBps_p50": f["MBps_p50"]} for n, f in streams.items()},
        "colocated": {"reload_ms": co["reload_ms"], "reuse_read_MBps_p50": co["MBps_p50"]},
        "tiny": tiny,
        "baselines": {"raw_get_MBps_p50": raw_mbps, "raw_get_ms_p50": sorted(raw_ms)[len(raw_ms) // 2],
                      "loopback_tcp_MBps": tcp, "memcpy_MBps": memcpy,
                      "colocated_reload_MBps_p50": co["MBps_p50"]},
        "ratios": {"connector_vs_raw": main["MBps_p50"] / raw_mbps,
                   "best_streams_vs_raw": best["MBps_p50"] / raw_mbps,
                   "reload_vs_loopback_tcp": best["MBps_p50"] / tcp,
                   "reload_vs_memcpy": co["MBps_p50"] / memcpy},
    })
    print(format_bench(out))
    if args.json:
        write_json_atomic(args.json, out)
    return 0 if verified else 1


def _tiny_case(engine, args) -> dict:
    """Publish 32 tokens with the tiny layout on the same store and reload a request sharing 24 (3/4 pages)."""
    from kvtui.core.layout import PRESETS

    tiny = PRESETS["tiny"]
    t = _engine(tiny, args, 0, endpoints=engine.endpoints)
    try:
        prompt = np.arange(4 * tiny.page_tokens, dtype=np.uint32) + 7
        second = prompt.copy()
        second[3 * tiny.page_tokens:] += 5000
        t.prefill.call("publish", prompt, None, 0)
        r = t.decode.call("reload", second, None)
    finally:
        t.stop()
    return {"pages_total": r["pages_total"], "pages_hit": r["pages_hit"], "tokens_skipped": r["pages_hit"] * tiny.page_tokens,
            "verified": r["verified"] == r["pages_hit"] and r["mismatches"] == 0, "page_bytes": tiny.page_bytes}


def _target(value: float, target: float) -> str:
    return f"target ≥ {target:g}: {'met' if value >= target else 'NOT met'}"


def _streams(n) -> str:
    return f"{n} stream" + ("" if int(n) == 1 else "s")


def format_bench(o: dict) -> str:
    """The human table of a bench run. Targets are those of the kvtui foundation issue."""
    r, b, q = o["reload_ms"], o["baselines"], o["ratios"]
    rows = [
        ("prefill skipped", f"{o['tokens_skipped']:,} of {o['tokens_requested']:,} tokens"),
        ("KV page hit rate", f"{o['hit_rate']:.1%} ({o['pages_hit']}/{o['pages_total']} pages from the store)"),
        ("prefix reload (1 stream)", f"min {r['min']:.1f} · p50 {r['p50']:.1f} · mean {r['mean']:.1f} · max {r['max']:.1f} ms"
                                     f" for {o['bytes_reloaded'] / 2**20:.0f} MiB ({o['iterations']} reloads)"),
        ("reuse read p50", f"{o['reuse_read_MBps_p50']:.0f} MB/s with 1 stream; best {o['best_reuse_read_MBps_p50']:.0f} MB/s "
                           f"with {_streams(o['best_read_streams'])} (MB/s = 10^6 B/s, p50 of per-reload rates)"),
        ("publish write", f"{o['publish_write_MBps']:.0f} MB/s"),
        ("verify (outside reload time)", f"p50 {o['verify_ms_p50']:.1f} ms"),
        ("byte-exact round-trip", "verified" if o["verified"] else "MISMATCH"),
        ("tiny layout (PR example)", f"{o['tiny']['pages_hit']}/{o['tiny']['pages_total']} pages hit, "
                                     f"{'verified' if o['tiny']['verified'] else 'MISMATCH'}"),
        ("reload split in streams", ", ".join(f"{_streams(n)}: {f['MBps_p50']:.0f} MB/s" for n, f in o["read_streams"].items())),
        ("baseline raw batch_get_into", f"{b['raw_get_MBps_p50']:.0f} MB/s (same keys, same process, no connector) → "
                                        f"connector/raw {q['connector_vs_raw']:.2f} ({_target(q['connector_vs_raw'], 0.97)})"),
        ("baseline loopback TCP", f"{b['loopback_tcp_MBps']:.0f} MB/s (one stream, same bytes) → best reload/TCP "
                                  f"{q['reload_vs_loopback_tcp']:.2f} ({_target(q['reload_vs_loopback_tcp'], 1.0)})"),
        ("co-located reload", f"{b['colocated_reload_MBps_p50']:.0f} MB/s vs memcpy {b['memcpy_MBps']:.0f} MB/s → "
                              f"{q['reload_vs_memcpy']:.2f} ({_target(q['reload_vs_memcpy'], 0.8)})"),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)


def _trace_bench(args, layout, store_bytes: int) -> int:
    """Replay rate of a trace through the engine vs a bare loop of the same store calls (same cluster)."""
    import time
    import uuid

    from kvtui.bench.bare import bare_replay
    from kvtui.engine.driver import Driver
    from kvtui.metrics.aggregate import Aggregator
    from workload import TraceError, TraceWorkload, check_page_divides_block, read_trace

    try:
        check_page_divides_block(layout.page_tokens, args.trace_block_tokens)
        rows, problems = read_trace(args.trace, block_tokens=args.trace_block_tokens)
    except (TraceError, ValueError) as exc:
        raise KvtuiError(str(exc)) from None
    if args.rounds < 1:
        raise KvtuiError("--rounds must be at least 1")
    if problems:  # as `kvtui run` says it; both sides replay the same good rows
        _say(f"skipped {len(problems)} bad trace rows (first: line {problems[0].line_no}: {problems[0].reason})")
    args.model = f"{args.model}-engine-{uuid.uuid4().hex[:6]}"
    _say(f"starting embedded cluster and workers ({layout.describe()})…")
    engine = _engine(layout, args, store_bytes)
    rounds: list[dict] = []
    try:
        for r in range(args.rounds):
            times = {}
            for side in ("engine", "bare loop")[:: 1 if r % 2 == 0 else -1]:  # ABBA: warm-up favours neither
                engine.clear_store()
                _say(f"round {r + 1}/{args.rounds}: replaying {len(rows)} rows "
                     + ("through the engine, one request at a time…" if side == "engine"
                        else "with a bare loop of the same store calls…"))
                if side == "engine":
                    # built before the clock starts, as the bare loop builds its own
                    requests = list(TraceWorkload(rows, block_tokens=args.trace_block_tokens, speed=None))
                    agg = Aggregator()
                    t0 = time.perf_counter()
                    Driver(engine, requests, agg.add, concurrency=1).run()
                    times[side] = time.perf_counter() - t0
                    del requests
                else:
                    n, times[side], bare_hits = bare_replay(engine.endpoints.as_dict(), layout.as_dict(),
                                                            f"bare-{uuid.uuid4().hex[:6]}", args.trace,
                                                            args.trace_block_tokens)
            engine_s, bare_s = times["engine"], times["bare loop"]
            s = agg.summary()
            rounds.append({"engine_s": engine_s, "bare_loop_s": bare_s, "ratio": bare_s / engine_s,
                           "pages_hit": s["pages_hit"], "tokens_hit": s["tokens_hit"],
                           "token_hit_rate": s["token_hit_rate"], "mismatches": s["mismatches"],
                           "bare_loop_pages_hit": bare_hits})
            _say(f"round {r + 1}/{args.rounds}: engine {engine_s:.1f} s, bare loop {bare_s:.1f} s → ratio "
                 f"{bare_s / engine_s:.2f}")
    finally:
        engine.stop()
    engine_s = min(x["engine_s"] for x in rounds)
    bare_s = min(x["bare_loop_s"] for x in rounds)
    paired = statistics.median(x["ratio"] for x in rounds)
    s = rounds[-1]
    mismatches = sum(x["mismatches"] for x in rounds)
    out = {"trace": args.trace, "rows": len(rows), "bad_rows_skipped": len(problems), "layout": layout.as_dict(),
           "rounds": rounds,
           "engine": {"seconds": engine_s, "requests_per_s": len(rows) / engine_s, "pages_hit": s["pages_hit"],
                      "tokens_hit": s["tokens_hit"], "token_hit_rate": s["token_hit_rate"], "mismatches": mismatches},
           "bare_loop": {"seconds": bare_s, "requests_per_s": n / bare_s, "pages_hit": s["bare_loop_pages_hit"]},
           "ratios": {"engine_vs_bare_loop": paired, "engine_vs_bare_loop_best_of": bare_s / engine_s}}
    print(f"trace {args.trace}: {len(rows)} rows, {args.rounds} round(s), best run of each side:\n"
          f"engine     {engine_s:6.1f} s  {len(rows) / engine_s:7.1f} req/s  hits {s['pages_hit']:,} pages "
          f"({s['token_hit_rate']:.2%} of tokens)\n"
          f"bare loop  {bare_s:6.1f} s  {n / bare_s:7.1f} req/s  hits {s['bare_loop_pages_hit']:,} pages\n"
          f"ratio engine/bare {paired:.2f}, median of the rounds ({', '.join(format(x['ratio'], '.2f') for x in rounds)}) "
          f"→ {_target(paired, 0.8)}; of the best runs {bare_s / engine_s:.2f}")
    if args.json:
        write_json_atomic(args.json, out)
    return 0 if mismatches == 0 else 1


UI_WARM_S = 1.5  # --ui: requests are counted from this long after a phase starts (the monitor's start-up)


def _ui_bench(args, layout, store_bytes: int) -> int:
    """Requests/s of the same scenario without and with the monitor (headless, ``--refresh-hz``), counted over
    ``--seconds`` once ``UI_WARM_S`` have passed, alternated ``--rounds`` times; then the monitor process's
    CPU over 3 s with the workload paused. Every phase starts from an empty store."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import psutil

    from kvtui.live import LiveSession, synthetic_description
    from kvtui.tui.app import run_app
    from workload import SyntheticWorkload, WorkloadSpec

    if args.seconds <= 0:
        raise KvtuiError("--seconds must be positive")
    if args.rounds < 1:
        raise KvtuiError("--rounds must be at least 1")
    check_refresh_hz(args.refresh_hz)
    spec = WorkloadSpec(scenario="shared-system-prompt", overlap=0.75, pool=8, prompt_tokens=8 * layout.page_tokens,
                        page_tokens=layout.page_tokens, seed=0)
    desc = synthetic_description(spec)
    _say(f"starting embedded cluster and workers ({layout.describe()})…")
    engine = _engine(layout, args, store_bytes)
    me = psutil.Process()
    # Sessions are started from one thread made now: threads inherit the nice value of the thread that
    # starts them, and run_app leaves this thread nicer when it may not lower it again (no CAP_SYS_NICE),
    # so later rounds' feeder and collector would otherwise run nicer than kvtui watch's.
    launcher = ThreadPoolExecutor(1, thread_name_prefix="kvtui-bench-launcher")
    launcher.submit(lambda: None).result()
    try:
        runs: dict[str, list[float]] = {"headless": [], "monitor": []}
        for r in range(args.rounds):
            for phase in ("headless", "monitor")[:: 1 if r % 2 == 0 else -1]:  # ABBA: warm-up favours neither
                engine.clear_store()
                session = LiveSession(engine, SyntheticWorkload(spec), desc, layout_text=layout.describe(),
                                      owns_engine=False)
                _say(f"round {r + 1}/{args.rounds}, {phase}: {args.seconds:g} s of {spec.scenario} after "
                     f"{UI_WARM_S:g} s of start-up…")
                counts: list[tuple[float, int]] = []

                def mark(session=session, counts=counts):
                    counts.append((time.monotonic(), session.agg.totals()["requests"]))

                timers = [threading.Timer(t, mark) for t in (UI_WARM_S, UI_WARM_S + args.seconds)]
                try:
                    launcher.submit(session.start).result()
                    for timer in timers:
                        timer.start()
                    if phase == "headless":
                        timers[1].join()
                    else:
                        run_app(session, None, headless=True, duration_s=UI_WARM_S + args.seconds + 0.3,
                                refresh_hz=args.refresh_hz)
                        timers[1].join()
                    (t0, n0), (t1, n1) = counts
                    runs[phase].append((n1 - n0) / (t1 - t0))
                    _say(f"round {r + 1}/{args.rounds}, {phase}: {runs[phase][-1]:.1f} req/s")
                finally:
                    for timer in timers:
                        timer.cancel()
                    session.stop()
        rates = {phase: max(v) for phase, v in runs.items()}
        if min(runs["headless"]) <= 0:
            raise KvtuiError("a round without the monitor completed no request: no ratio to report "
                             "(the per-round rates are above)")
        paired = statistics.median(m / h for m, h in zip(runs["monitor"], runs["headless"]))
        session = LiveSession(engine, SyntheticWorkload(spec), desc, layout_text=layout.describe(), owns_engine=False)
        try:
            launcher.submit(session.start).result()
            time.sleep(1.0)
            session.pause()
            session.driver.done.wait(0.5)
            _say("monitor idle with the workload paused: CPU over 3 s, after 1.5 s of start-up…")
            marks: list[float] = []
            idle = [threading.Timer(t, lambda: marks.append(sum(me.cpu_times()[:2]))) for t in (1.5, 4.5)]
            for timer in idle:
                timer.start()
            run_app(session, None, headless=True, duration_s=5.0, refresh_hz=args.refresh_hz)
            idle_cpu = (marks[1] - marks[0]) / 3.0 * 100
        finally:
            session.stop()
    finally:
        launcher.shutdown()
        engine.stop()
    out = {"layout": layout.as_dict(), "seconds": args.seconds, "warm_up_seconds": UI_WARM_S, "rounds": runs,
           "refresh_hz": args.refresh_hz,
           "headless_rps": rates["headless"], "monitor_rps": rates["monitor"],
           "ratios": {"monitor_vs_headless": paired, "monitor_vs_headless_best_of": rates["monitor"] / rates["headless"]},
           "idle_paused_cpu_percent": idle_cpu}
    per_round = ", ".join(f"{m / h:.2f}" for m, h in zip(runs["monitor"], runs["headless"]))
    print(f"{args.rounds} round(s), requests counted over {args.seconds:g} s after {UI_WARM_S:g} s; "
          f"monitor at {args.refresh_hz:g} Hz; best run of each side:\n"
          f"workload rate headless   {rates['headless']:8.1f} req/s\n"
          f"with the monitor         {rates['monitor']:8.1f} req/s\n"
          f"ratio monitor/headless   {paired:8.2f}, median of the rounds ({per_round}) → {_target(paired, 0.95)}; "
          f"of the best runs {out['ratios']['monitor_vs_headless_best_of']:.2f}\n"
          f"monitor CPU, paused      {idle_cpu:8.1f} % of one core (target: near zero)")
    if args.json:
        write_json_atomic(args.json, out)
    return 0
