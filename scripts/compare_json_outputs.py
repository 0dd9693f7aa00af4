"""Show that this tree writes the same JSON as another kvtui tree (``BASE``, e.g. main's): runs short
``kvtui run``, ``report`` and ``bench`` commands with both and compares their ``--json`` files, then prints every
file through both trees' formatters (the summary's and each bench's table) and compares the text.

    git archive main | tar -x -C /tmp/kvtui-main
    .venv/bin/python scripts/compare_json_outputs.py /tmp/kvtui-main [--out DIR] [--only run_tiny,bench_ui]

BASE runs each command twice, this tree once. A value equal in BASE's two runs is deterministic (hits, pages,
keys, counts, names) and must be equal in this tree's run; a value that differs between them is a timing (ms,
MB/s, CPU) and must have the same JSON type. The key sets must be the same. ``bench --link`` needs root (tc,
network namespaces); ``report_seed`` reads ``run_seed``'s recording. Takes about 15 minutes on 2 cores; exits 1
when anything differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"]
CASES: dict[str, list[str]] = {  # name → the command (OUT: the run's folder)
    "run_tiny": ["run", "--layout", "tiny", "--requests", "200", "--seed", "1", "--quiet", "--json",
                 "OUT/run_tiny.json"],
    "run_seed": ["run", "--requests", "100", "--seed", "2", "--store-size", "8GiB", "--quiet", "--json",
                 "OUT/run_seed.json", "--record", "OUT/run_seed.kvtui"],
    "report_seed": ["report", "OUT/run_seed.kvtui", "--json", "OUT/report_seed.json"],
    "run_trace": ["run", "--trace", "conversation-head", "--requests", "150", *SMALL, "--store-size", "16MiB",
                  "--quiet", "--json", "OUT/run_trace.json"],
    "bench_reuse": ["bench", "--layout", "tiny", "--iterations", "3", "--max-streams", "2", "--json",
                    "OUT/bench_reuse.json"],
    "bench_reuse_est": ["bench", "--layout", "qwen2.5-7b", "--prompt-tokens", "512", "--shared-tokens", "256",
                        "--iterations", "2", "--max-streams", "1", "--gpu", "h100", "--json",
                        "OUT/bench_reuse_est.json"],
    "bench_tcp": ["bench", "--tcp-sweep", "--layout", "tiny", "--iterations", "2", "--rounds", "1", "--json",
                  "OUT/bench_tcp.json"],
    "bench_trace": ["bench", "--trace", "conversation-head", "--rounds", "1", *SMALL, "--json",
                    "OUT/bench_trace.json"],
    "bench_ui": ["bench", "--ui", "--layout", "tiny", "--seconds", "1", "--rounds", "1", "--json", "OUT/bench_ui.json"],
    "bench_link": ["bench", "--link", "1gbit", "--layout", "tiny", "--iterations", "2", "--json",
                   "OUT/bench_link.json"],
    "bench_agg": ["bench", "--link", "1gbit", "--decode-workers", "1,2", "--layout", "tiny", "--iterations", "2",
                  "--json", "OUT/bench_agg.json"],
}
FORMATTERS = {  # name prefix → the formatter of its JSON, module:function
    "run_": "kvtui.commands.output:format_summary", "report_": "kvtui.commands.output:format_summary",
    "bench_reuse": "kvtui.commands.bench:format_bench", "bench_trace": "kvtui.bench.trace:format_trace",
    "bench_ui": "kvtui.commands.bench:format_ui", "bench_tcp": "kvtui.bench.tcp_sweep:format_tcp_sweep",
    "bench_link": "kvtui.bench.link:format_link", "bench_agg": "kvtui.bench.aggregate:format_aggregate",
}
RENDER = """import importlib, json, sys
mod, fn = sys.argv[1].split(":")
print(getattr(importlib.import_module(mod), fn)(json.load(open(sys.argv[2]))), end="")"""


def run_case(tree: Path, name: str, out: Path) -> bool:
    """Run case ``name`` with the kvtui of ``tree`` into ``out``; whether it exited 0."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [a.replace("OUT", str(out)) for a in CASES[name]]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with open(out / f"{name}.log", "w") as log:
        rc = subprocess.run(["nice", "-n", "5", sys.executable, "-m", "kvtui", *cmd], cwd=tree, env=env, stdout=log,
                            stderr=subprocess.STDOUT).returncode
    return rc == 0


def flat(v: object, p: str = "$") -> dict[str, object]:
    """Every path of JSON value ``v`` with its value (a dict or list: its shape)."""
    if isinstance(v, dict):
        return {p: "{}", **{k: x for key, val in v.items() for k, x in flat(val, f"{p}.{key}").items()}}
    if isinstance(v, list):
        return {p: f"[{len(v)}]", **{k: x for i, val in enumerate(v) for k, x in flat(val, f"{p}[{i}]").items()}}
    return {p: v}


def kind(x: object) -> str:
    return "number" if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__


def compare(name: str, base: Path, base2: Path, this: Path) -> list[str]:
    """What differs between this tree's JSON of ``name`` and the base's (see the module)."""
    a, a2, b = (flat(json.loads((d / f"{name}.json").read_text())) for d in (base, base2, this))
    problems = []
    if set(a) == set(a2) and set(b) != set(a):
        problems.append(f"keys: only the base's {sorted(set(a) - set(b))[:8]}, only this tree's "
                        f"{sorted(set(b) - set(a))[:8]}")
    for p in sorted(set(a) & set(a2) & set(b)):
        if a[p] == a2[p] and b[p] != a[p]:
            problems.append(f"{p}: the base's {a[p]!r}, this tree's {b[p]!r}")
        elif a[p] != a2[p] and kind(b[p]) != kind(a[p]):
            problems.append(f"{p}: the base's {kind(a[p])}, this tree's {kind(b[p])}")
    return problems


def render(tree: Path, name: str, path: Path) -> str:
    """``path`` (a JSON of case ``name``) printed by the formatter of the kvtui of ``tree``."""
    target = next(f for prefix, f in FORMATTERS.items() if name.startswith(prefix))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, "-c", RENDER, target, str(path)], cwd=tree, env=env, capture_output=True,
                          text=True, check=True).stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", type=Path, help="the other kvtui tree (its root: kvtui/ and workload/ inside)")
    p.add_argument("--out", type=Path, default=Path("/tmp/kvtui-json-compare"), help="where the runs write")
    p.add_argument("--only", default="", help="these cases, comma-separated (default: all)")
    args = p.parse_args()
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    runs = {"base": args.base.resolve(), "base2": args.base.resolve(), "this": ROOT}
    failed = 0
    for name in names:
        ok = all(run_case(tree, name, args.out / tag) for tag, tree in runs.items())
        if not ok:
            print(f"{name}: a run failed (logs in {args.out}/*/{name}.log)")
            failed += 1
            continue
        problems = compare(name, args.out / "base", args.out / "base2", args.out / "this")
        for tag in ("base", "this"):  # each JSON's text must not depend on the tree that prints it
            path = args.out / tag / f"{name}.json"
            if render(runs["base"], name, path) != render(ROOT, name, path):
                problems.append(f"the two trees' formatters print {path} differently")
        paths = len(flat(json.loads((args.out / "this" / f"{name}.json").read_text())))
        print(f"{name}: {'OK' if not problems else 'DIFFERS'} ({paths} JSON paths)")
        for line in problems[:20]:
            print(f"    {line}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
