"""``kvtui compare A B [C…]``: what changed between runs. Each input is a ``kvtui run --json``, ``kvtui report
--json`` or ``kvtui bench --json`` file, or a recorded session (``.kvtui``, summarised as ``kvtui report``
does: the span it recorded). Prints the inputs that differ (kind, layout, workload, store size and
placement, versions, …), then every figure the inputs share, side by side, with each one's absolute and
relative delta against the first input (A); ``--json`` writes the same, ``--svg`` overlays the sessions' hit
rate and reuse throughput over time. No store is needed.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvtui.commands.output import full_setup, open_session, store_counts, write_json_atomic
from kvtui.config.paths import check_outputs, path_arg
from kvtui.config.plan import CONTEXT_KEYS
from kvtui.core.errors import KvtuiError

if TYPE_CHECKING:
    from kvtui.metrics.figures import Figure

# top-level fields that say what ran, not what it measured (compared as inputs, never as figures)
INPUT_KEYS = ("layout", "page_bytes", "workload", "bad_rows_skipped", "concurrency", "store_mode", "setup", "trace",
              "synthesis", "ttft_estimate", "iterations", "rows", "seconds", "warm_up_seconds", "refresh_hz",
              "reload_read_streams", "best_read_streams", "layout_at_end",
              "block_tokens", "format", "sizing", "store", "versions",  # these five: kvtui sweep --json
              "round_count", "trace_sha256",  # kvtui bench --trace / --ui / --tcp-sweep
              "tiers",  # kvtui bench --disk: the store it made (DRAM, disk tier, where)
              "verify",  # kvtui bench --verify (a run's is in its setup)
              "interrupted", "stopped_by")  # a run or sweep cut short: its figures cover what finished
SKIP_KEYS = ("session", "span", "rounds", "file", "problems", "tiny")
PROGRESS = ("done", "complete", "position_s", "length_s")  # a workload's progress, not an input
SCENARIOS = "scenarios_seen"  # a session's document: the scenarios its frames ran, in order
HEADLINE = ("requests", "elapsed_s", "token_hit_rate", "page_hit_rate", "tokens_hit", "tokens_input", "pages_hit",
            "pages_total", "pages_published", "pages_failed", "mismatches")


def register(subparsers) -> None:
    """Add the ``compare`` subcommand."""
    p = subparsers.add_parser(
        "compare", help="compare runs: the inputs that differ and every shared figure with its deltas",
        description="Compare two or more results of kvtui (run --json, report --json, bench --json or sweep --json "
                    "files, or recorded .kvtui sessions): the inputs that differ (layout, workload, store size and "
                    "placement, kvtui and Mooncake versions), then every figure they share side by side, with the "
                    "absolute and relative change of each against the first file. Hit rates are shown in % and "
                    "their changes in percentage points (pp); MB/s are 10^6 bytes per second. No store is needed.")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="two or more results: JSON files of run/report/bench/sweep, or session files (.kvtui); "
                        "the first is the baseline of the deltas")
    p.add_argument("--json", type=path_arg, metavar="PATH",
                   help="write the comparison as JSON to PATH ('-' = stdout, instead of the table)")
    p.add_argument("--svg", type=path_arg, metavar="PATH",
                   help="write a plot of the sessions' page hit rate (%%, last 2 s) and reuse read (wall, MB/s) "
                        "over the seconds since each recording began, one line per session (needs at least one "
                        "session among the files)")
    p.set_defaults(func=run)


# --- reading the inputs ---------------------------------------------------------------------------------


def _kind(doc: dict) -> str:
    """What a JSON document is, from its fields."""
    if isinstance(doc.get("session"), dict):
        return "report"
    if "engine" in doc and "bare_loop" in doc:
        return "bench --trace"
    if "headless_rps" in doc:
        return "bench --ui"
    if "disk_reload_vs_raw_read" in (doc.get("ratios") or {}):
        return "bench --disk"
    if "reuse_read_MBps_p50" in doc or "baselines" in doc:
        return "bench"
    if "points" in doc and "sizing" in doc:
        return "sweep"
    if "requests" in doc and "throughput" in doc:
        return "run"
    return "JSON"


def _session(path: str, reader) -> dict:
    """A session's document: the summary of its recorded span (:func:`kvtui.metrics.aggregate.span_summary`,
    as ``kvtui report``), its header's context and the session's facts; ``series`` its figures over time."""
    from kvtui.metrics import figures as fig
    from kvtui.metrics.aggregate import span_summary
    from kvtui.session.codec import FrameDecoder, decode_record

    warning = reader.warning("comparing")
    if warning:
        print(f"kvtui: {warning}", file=sys.stderr)
    first, final = reader.frame_at(0), reader.final_frame()
    doc: dict[str, Any] = dict(span_summary(final, first))  # (and the comparison's own keys)
    doc.update({k: v for k, v in reader.header.items() if k in INPUT_KEYS})
    if final.workload:
        doc["workload"] = dict(final.workload)
    doc["setup"] = full_setup(doc.get("setup"), final.store, reader.meta)  # as its report and run --json say it
    doc["store_at_end"] = store_counts(final.store)
    doc["context"] = {k: reader.header.get(k) for k in CONTEXT_KEYS if k in reader.header}
    # every frame once, in order (a FrameDecoder over the records; at most ~4,000 points per curve)
    step = max(1, len(reader.records) // 4000)
    dec, t, hit, reuse = FrameDecoder(), [], [], []
    scenarios: list[str] = []  # each scenario the recording ran, in order (a switch mid-way adds one)
    for i, blob in enumerate(reader.records):
        frame = dec.apply(decode_record(blob))
        scenario = (frame.workload or {}).get("scenario")
        if scenario and (not scenarios or scenarios[-1] != scenario):
            scenarios.append(str(scenario))
        if i % step == 0 or i == len(reader.records) - 1:
            t.append(frame.t - first.t)
            hit.append(100 * float(frame.rates.get(fig.HIT_RATE_WALL.key, 0.0)))
            reuse.append(float(frame.rates.get(fig.REUSE_WALL.key, 0.0)))
    doc["series"] = {"t": t, "hit": hit, "reuse": reuse}
    doc[SCENARIOS] = scenarios  # (a list of names: neither an input nor a figure of the comparison)
    return doc


def load(path: str) -> tuple[str, dict]:
    """``(kind, document)`` of one input; ``KvtuiError`` (one line naming the file) when it is missing,
    unreadable, neither JSON nor a session, or JSON that is not an object."""
    import json

    p = Path(path)
    if p.is_dir():
        raise KvtuiError(f"{path} is a folder, not a result file")
    try:
        with open(p, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        raise KvtuiError(f"{path}: no such file") from None
    except OSError as exc:
        raise KvtuiError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if head == b"SQLite format 3\x00":
        return "session", _session(path, open_session(path))
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        why = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise KvtuiError(f"{path} is neither a kvtui session nor a JSON result ({why})") from None
    except OSError as exc:
        raise KvtuiError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not isinstance(doc, dict):
        raise KvtuiError(f"{path} is JSON but not a kvtui result (a {type(doc).__name__}, not an object)")
    return _kind(doc), doc


# --- figures and inputs ---------------------------------------------------------------------------------


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _flatten(d: dict, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of nested dicts by dotted path (strings, None and booleans left out). Lists are left
    out too, but for a sweep's points (dicts with a ``capacity_tokens``), keyed by it: ``points[1000000].…``, and
    a DRAM × disk sweep's by both: ``points[1000000+4000000].…``."""
    out: dict[str, float] = {}
    for k, v in d.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, path + "."))
        elif _number(v):
            out[path] = v
        elif isinstance(v, list) and v and all(isinstance(x, dict) and _number(x.get("capacity_tokens")) for x in v):
            for x in v:
                key = f"{x['capacity_tokens']}" + (f"+{x['disk_tokens']}" if x.get("disk_tokens") else "")
                out.update(_flatten({kk: vv for kk, vv in x.items() if kk not in ("capacity_tokens", "disk_tokens")},
                                    f"{path}[{key}]."))
    return out


def figures_of(doc: dict) -> dict[str, float]:
    """The figures of a document: every numeric leaf outside :data:`INPUT_KEYS` and :data:`SKIP_KEYS`."""
    return _flatten({k: v for k, v in doc.items() if k not in INPUT_KEYS + SKIP_KEYS + ("series", "context")})


def inputs_of(kind: str, doc: dict) -> dict[str, object]:
    """What ran, flat: the kind, layout (described), page bytes, workload fields, store and topology, versions."""
    from kvtui.core.layout import PageLayout

    out: dict[str, object] = {"kind": kind}
    for key in ("layout", "layout_at_end"):
        lay = doc.get(key)
        if isinstance(lay, dict):
            try:
                out[key] = PageLayout(**lay).describe()
            except (TypeError, ValueError):
                out[key] = str(lay)
    for key, value in doc.items():
        if key in ("layout", "layout_at_end") or key not in INPUT_KEYS + ("context",):
            continue
        if key == "interrupted" and value is not True:  # a run that ran its course, like a recording or report
            continue  # (which carry no such field): only a run cut short is marked
        if isinstance(value, dict):
            for k, v in value.items():
                if not (key == "workload" and k in PROGRESS) and not isinstance(v, (dict, list)):
                    out[f"{key}.{k}"] = v
        elif not isinstance(value, list):
            out[key] = value
    return out


def _figure_names() -> dict[str, tuple[str, str]]:
    """JSON field path → (figure name, unit) from :mod:`kvtui.metrics.figures`."""
    from kvtui.metrics import figures as fig

    names: dict[str, tuple[str, str]] = {}
    for f in fig.FIGURES:
        for field in f.field.split(","):
            names.setdefault(field.strip(), (f.name, f.unit))
    return names


def describe_field(path: str, names: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """``(name, unit)`` of a figure's path: the figure of :mod:`kvtui.metrics.figures` whose field it is
    (a latency's ``reload_ms.p50`` is "reload latency p50", ms), else the path with a unit from its name."""
    if path in names:
        return names[path]
    head, _, leaf = path.rpartition(".")
    if head in names and names[head][1] == "ms":
        return (f"{names[head][0]} {leaf}", "samples" if leaf == "count" else "ms")
    last = path.rsplit(".", 1)[-1]
    if path.startswith("ratios.") or "ratio" in last or "_vs_" in last:
        unit = "×"
    elif last.endswith("rate"):  # token_hit_rate, page_hit_rate, hit_rate: fractions 0..1
        unit = "%"
    elif path.startswith("errors."):
        unit = "calls"
    elif any(part.endswith("_ms") or "_ms_" in part for part in path.split(".")):
        unit = "ms"  # (a group's name says it too: reload_ms.p50, cpu_ms_per_request.engine.parent, x.read_ms.p50)
    elif "MBps" in last:
        unit = "MB/s"
    elif last.endswith("_per_s"):  # requests_per_s: a rate, not seconds
        unit = "/s"
    elif last.endswith("_s") or last == "seconds":
        unit = "s"
    elif last.startswith("bytes") or last.endswith("_bytes"):
        unit = "bytes"
    elif last.startswith("tokens"):
        unit = "tokens"
    elif last.startswith("pages") or last.endswith("_pages"):
        unit = "pages"
    elif last == "requests":
        unit = "requests"
    else:
        unit = ""
    return path, unit


def compare(docs: list[tuple[str, str, dict]]) -> dict:
    """The comparison of ``docs`` (``(file, kind, document)``, the first the baseline): ``inputs`` (file and
    kind of each), ``inputs_differ`` (``{"input", "values"}`` per input field whose values differ; None where
    a file has none), ``inputs_same`` (how many agree), ``figures`` (per shared figure: ``field``, ``name``,
    ``unit``, ``values``, ``delta`` = value − A and ``relative`` = delta ÷ |A| (None for A itself, or when A
    is 0)) and ``not_shared`` (figures missing from some file)."""
    names = _figure_names()
    figs = [figures_of(d) for _f, _k, d in docs]
    if all("errors" in d for _f, _k, d in docs):  # a code none of them saw counts 0, one they all lack is absent
        codes = sorted({k for d in docs for k in d[2].get("errors", {})})
        for f in figs:
            for c in codes:
                f.setdefault(f"errors.{c}", 0)
    shared = [k for k in figs[0] if all(k in f for f in figs[1:])]
    order = {k: i for i, k in enumerate(HEADLINE)}
    known = {k: i for i, k in enumerate(names)}
    stats = {k: i for i, k in enumerate(("count", "min", "p50", "p90", "p99", "mean", "max"))}

    def rank(k: str) -> tuple:
        """Headline counters, then the figures of kvtui.metrics.figures (a latency's statistics in their
        usual order), then the rest by name."""
        head, _, leaf = k.rpartition(".")
        if k in order:
            return (0, order[k], 0, "")
        if k in known:
            return (1, known[k], 0, "")
        if head in known:
            return (1, known[head], 1 + stats.get(leaf, len(stats)), ())
        return (2, 0, 0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", k) if p))

    shared.sort(key=rank)
    rows = []
    for k in shared:
        name, unit = describe_field(k, names)
        values = [f[k] for f in figs]
        base = values[0]
        rows.append({"field": k, "name": name, "unit": unit, "values": values,
                     "delta": [None] + [v - base for v in values[1:]],
                     "relative": [None] + [(v - base) / abs(base) if base else None for v in values[1:]]})
    every = set().union(*figs)
    ins = [inputs_of(k, d) for _f, k, d in docs]
    keys = list(dict.fromkeys(k for i in ins for k in i))
    differ = [{"input": k, "values": [i.get(k) for i in ins]} for k in keys if len({repr(i.get(k)) for i in ins}) > 1]
    return {"inputs": [{"file": f, "kind": k} for f, k, _d in docs], "inputs_differ": differ,
            "inputs_same": len(keys) - len(differ), "figures": rows, "not_shared": len(every) - len(shared)}


# --- output ---------------------------------------------------------------------------------------------

_CONTAINERS = ("throughput", "totals", "ratios", "content")  # groups whose name tells a figure from nothing
_STATS = ("count", "min", "p50", "p90", "p99", "mean", "max", "total")
_UNIT_TAIL = re.compile(r"_?(MBps|ms)?(_p50)?$")


def _text_figures() -> dict[str, Figure]:
    """Field pattern (``read_streams.N.MBps_p50``) → the figure of :mod:`kvtui.metrics.figures` the table names
    it by: every figure, the summary's counts and the benches' ratios included (a ratio's own figure first: a
    figure of what it divides may list it too). The table's labels only; ``--json`` keeps :func:`describe_field`."""
    from kvtui.metrics import figures as fig

    out: dict[str, Figure] = {}
    for f in fig.RATIOS + fig.COUNTS + fig.FIGURES + fig.BENCH + (fig.RELOAD_HIT_RATE, fig.VERIFY_MS):
        for field in f.field.split(","):
            out.setdefault(field.strip(), f)
    return out


def _words(part: str) -> str:
    """A JSON key as words: ``store_bound_rps`` → ``store bound rps``, ``fill_vs_memcpy`` → ``fill ÷ memcpy``."""
    return part.replace("_vs_", " ÷ ").replace("MBps", "MB/s").replace("_", " ").strip()


def _groups(parts: list[str]) -> list[str]:
    """Groups of a path as words, a number joined to the group before it (``read streams 2``)."""
    out: list[str] = []
    for p in parts:
        if p in _CONTAINERS:
            continue
        if p.isdigit() and out:
            out[-1] += f" {p}"
        else:
            out.append(_words(p))
    return out


def figure_label(path: str, figures: dict[str, Figure]) -> tuple[str, Figure | None]:
    """The table's label of a figure's ``path`` and the figure it is (None: no figure names it, and the label is
    the path in words): the figure's name, the statistic (``reload latency p50``), and what tells this field from
    the figure's others (``reload throughput (p50 per reload) · tcp path``, ``reload latency p50 · best``)."""
    parts = path.split(".")
    pattern = ["N" if p.isdigit() else p for p in parts]
    stat = parts[-1] if len(parts) > 1 and parts[-1] in _STATS else ""

    def named(f: Figure, what: list[str], stat: str) -> str:
        return f.name + (f" {stat}" if stat else "") + "".join(f" · {w}" for w in what if w)

    f = figures.get(".".join(pattern))  # the path is a field of a figure
    if f is not None:
        what = [p for p in parts if p.isdigit()]  # (ratios.aggregate_vs_links.4: the 4)
        if "," in f.field:  # one of the figure's fields: what tells it from the others
            leaf = parts[-1]
            what = _groups([p for p in parts[:-1] if p != f.key])
            if leaf in _STATS:
                return named(f, what, leaf), f
            if leaf != f.key:
                own = leaf[: -len(f.key) - 1] if leaf.endswith("_" + f.key) else _UNIT_TAIL.sub("", leaf)
                what.append(_words(own) if len(parts) > 1 or leaf.endswith("_" + f.key) else "")
        return named(f, what, ""), f
    head = parts[:-1] if stat else parts
    for i in range(len(head)):  # else a figure's field within groups of its own (tcp_path.reload_ms.p50)
        tail = ".".join(pattern[i: len(head)])
        f, own = figures.get(tail), ""
        if f is None and i == len(head) - 1:  # or a field with a prefix of its own (best_reload_ms)
            key = next((k for k in figures if "." not in k and head[i].endswith("_" + k)), None)
            f, own = (figures[key], head[i][: -len(key) - 1]) if key else (None, "")
        if f is not None:
            return named(f, _groups(head[:i]) + ([_words(own)] if own else []), stat), f
    return " · ".join(_words(p) for p in parts), None


def _decimals(values: list, f: Figure | None, unit: str) -> int | None:
    """The decimals of a row: its figure's (a latency's count: none), else its unit's; a row that has neither (a
    field no figure names, with no unit) gets the same for every value, by the largest: 0 from 1,000, 2 from 1,
    three significant digits below (None: whole numbers, written as they are)."""
    from kvtui.metrics.figures import UNIT_DECIMALS, decimals_of

    if unit == "samples":
        return 0
    if f is not None and f.unit == unit:
        return decimals_of(f)
    if unit in UNIT_DECIMALS:
        return UNIT_DECIMALS[unit]
    if all(isinstance(v, int) for v in values if v is not None):
        return None
    top = max((abs(v) for v in values if v is not None), default=0.0)
    return 0 if top >= 1000 else 2 if top >= 1 or top == 0 else max(2, 2 - math.floor(math.log10(top)))


def _fmt(v, unit: str, places: int | None = None) -> str:
    from kvtui.metrics.figures import number

    return "—" if v is None else number(v, unit, places)


def _fmt_delta(d, rel, unit: str, places: int | None = None) -> str:
    from kvtui.metrics.figures import number

    if d is None:
        return ""
    if d == 0:
        return "="
    return number(d, unit, places, sign=True) + (f" ({rel * 100:+,.1f} %)" if rel is not None and unit != "%" else "")


def _input_text(v, width: int = 60) -> str:
    if v is None:
        return "—"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    text = str(v)
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(head: list[str], body: list[list[str]], width: int | None = None) -> list[str]:
    """Columns as wide as their widest cell: the first left-aligned, the others right-aligned. ``width``: the
    widest line; a first cell too long for it is wrapped, its last line beside the row's other cells."""
    from kvtui.core.text import wrap

    widths = [max(len(r[j]) for r in [head, *body]) for j in range(len(head))]
    if width is not None:
        widths[0] = max(len(head[0]), min(widths[0], width - sum(widths[1:]) - 2 * (len(widths) - 1)))

    def fmt(r: list[str]) -> list[str]:
        first = wrap(r[0], widths[0], rest="  ") if len(r[0]) > widths[0] else [r[0]]
        cells = [first[-1].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(r[1:], widths[1:])]
        return first[:-1] + ["  ".join(cells).rstrip()]

    return [*fmt(head), "  ".join("-" * w for w in widths), *(x for r in body for x in fmt(r))]


def _scenario_text(seen: list[str]) -> str:
    """``shared-system-prompt → few-shot``: the scenarios a recording ran, in order."""
    return " → ".join(seen)


def format_comparison(c: dict, scenarios: list[list[str]] | None = None) -> str:
    """The human tables, at most :data:`~kvtui.core.text.WIDTH` columns for two files: the files, the inputs that
    differ, then every shared figure with its deltas, each named as in :mod:`kvtui.metrics.figures` and written
    with its decimals and thousands separators. ``scenarios``: per file, the scenarios it ran in order (a
    recording that switched mid-way has several: it is said, not only the last one)."""
    from kvtui.core.text import WIDTH, wrap

    letters = [chr(ord("A") + i) if i < 26 else f"#{i + 1}" for i in range(len(c["inputs"]))]
    seen = scenarios or [[] for _ in c["inputs"]]
    lines = [f"{x}  {i['file']}  ({i['kind']}"
             + (f"; scenario switched: {_scenario_text(s)}" if len(s) > 1 else "") + ")"
             for x, i, s in zip(letters, c["inputs"], seen)]

    differ = [dict(d) for d in c["inputs_differ"]]
    if any(len(s) > 1 for s in seen):  # a switched recording: its scenarios in order, whatever its last one
        scen = next((d for d in differ if d["input"] == "workload.scenario"), None)
        if scen is None:
            scen = {"input": "workload.scenario", "values": [s[-1] if s else None for s in seen]}
            differ.append(scen)
        scen["values"] = [_scenario_text(s) if len(s) > 1 else v for s, v in zip(seen, scen["values"])]
    same = c["inputs_same"] - (len(differ) - len(c["inputs_differ"]))
    lines.append("")
    if differ:
        lines.append(f"inputs that differ ({len(differ)}; {same} the same):")
        table = _table(["input", *letters], [[d["input"], *(_input_text(v) for v in d["values"])] for d in differ])
        if max(map(len, table)) <= WIDTH:
            lines += table
        else:  # too wide side by side: each input with its values under it
            for d in differ:
                lines.append(d["input"])
                for x, v in zip(letters, d["values"]):
                    lines += wrap(_input_text(v, 200), first=f"  {x}  ", rest=" " * (4 + len(x)))
    else:
        lines.append(f"inputs: the same ({c['inputs_same']} fields)")
    lines.append("")
    if not c["figures"]:
        lines.append("no figure is in every file")
        return "\n".join(lines)
    head = ["figure", "unit", letters[0]]
    for x in letters[1:]:
        head += [x, f"Δ {x}−{letters[0]}"]
    figures = _text_figures()
    body = []
    for r in c["figures"]:
        label, f = figure_label(r["field"], figures)
        unit = f.unit if f is not None and r["unit"] != "samples" else r["unit"]
        places = _decimals(r["values"], f, unit)
        row = [label, unit, _fmt(r["values"][0], unit, places)]
        for v, d, rel in zip(r["values"][1:], r["delta"][1:], r["relative"][1:]):
            row += [_fmt(v, unit, places), _fmt_delta(d, rel, unit, places)]
        body.append(row)
    lines += wrap(f"figures ({len(c['figures'])} in every file"
                  + (f"; {c['not_shared']} in some only, not compared" if c["not_shared"] else "")
                  + "; Δ: change against A, relative in brackets; hit rates in %, their Δ in percentage points; "
                  "MB/s = 10^6 bytes/s):")
    lines += _table(head, body, WIDTH)
    return "\n".join(lines)


def write_svg(path: str, sessions: list[tuple[str, dict]]) -> None:
    """Two stacked axes over the seconds since each recording began: the page hit rate (%, last 2 s) and
    reuse read (wall, MB/s), one line per session (``(label, series)``; matplotlib, Agg backend); written
    atomically."""
    import io
    import os

    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    from kvtui.metrics import figures as fig

    figure = Figure(figsize=(9, 6), layout="constrained")
    hit_ax, reuse_ax = figure.subplots(2, 1, sharex=True)
    for label, s in sessions:
        hit_ax.plot(s["t"], s["hit"], label=label, linewidth=1.2)
        reuse_ax.plot(s["t"], s["reuse"], label=label, linewidth=1.2)
    hit_ax.set_ylabel(f"{fig.HIT_RATE_WALL.name} (%)")
    hit_ax.set_ylim(0, 100)
    reuse_ax.set_ylabel(f"{fig.REUSE_WALL.name} ({fig.REUSE_WALL.unit})")
    reuse_ax.set_xlabel("seconds since the recording began")
    for ax in (hit_ax, reuse_ax):
        ax.grid(True, alpha=0.3)
    hit_ax.legend(loc="best", fontsize="small")
    hit_ax.set_title("kvtui compare: recorded sessions (MB/s = 10^6 bytes/s, rates over the last "
                     f"{fig.RATE_WINDOW_S:g} s)", fontsize="medium")
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text: searchable, and smaller
        figure.savefig(buf, format="svg")
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:  # the permissions a plain open gives, as every output of kvtui
            f.write(buf.getvalue())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def _scenarios(kind: str, doc: dict) -> list[str]:
    """The scenarios a file ran, in order: a session's frames say each one; a JSON result its last."""
    if kind == "session":
        return list(doc.get(SCENARIOS) or [])
    scenario = (doc.get("workload") or {}).get("scenario") if isinstance(doc.get("workload"), dict) else None
    return [str(scenario)] if scenario else []


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Read every file, print (and write) the comparison; exit 2 on bad input."""
    if len(args.files) < 2:
        raise KvtuiError(f"compare needs at least two files, got {len(args.files)}")
    check_outputs(((args.json, "--json"), (args.svg, "--svg")))
    docs = [(f, *load(f)) for f in args.files]
    sessions = [(f"{chr(ord('A') + i) if i < 26 else i + 1}: {Path(f).name}", d["series"])
                for i, (f, k, d) in enumerate(docs) if k == "session"]
    if args.svg and not sessions:
        raise KvtuiError("--svg plots recorded sessions over time, and none of the files is a session (.kvtui)")
    result = compare(docs)
    unknown = [f for f, k, _d in docs if k == "JSON"]
    if unknown and not result["figures"]:  # ({}, a package.json: not a result, and nothing was compared)
        raise KvtuiError(f"nothing to compare: {unknown[0]} is JSON with no fields of a kvtui result, and no figure "
                         "is in every file")
    for f, _k, d in docs:
        if d.get("interrupted") is True:
            why = f" ({d['stopped_by']})" if isinstance(d.get("stopped_by"), str) else ""
            print(f"kvtui: {f} is of an interrupted run{why}: its figures cover only what finished", file=sys.stderr)
    kinds = {k for _f, k, _d in docs}
    if len(kinds) > 1 and not kinds <= {"run", "report", "session"}:
        print(f"kvtui: the files are of different kinds ({', '.join(sorted(kinds))}): only the figures they share "
              "are compared", file=sys.stderr)
    if args.json != "-":
        print(format_comparison(result, [_scenarios(k, d) for _f, k, d in docs]))
    if args.json:
        write_json_atomic(args.json, result)
    if args.svg:
        write_svg(args.svg, sessions)
        if len(sessions) < len(docs):
            print(f"kvtui: --svg plots the {len(sessions)} session(s) only; JSON summaries have no time series",
                  file=sys.stderr)
    return 0
