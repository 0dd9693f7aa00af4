"""What the commands write and read besides their flags: output files (checked before any work, written
atomically), the run summary (its human table and the context fields ``run``, ``watch`` and ``report`` add
to it) and recorded session files. Shared by several commands, so no command imports another."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from kvtui.core.errors import KvtuiError, OutputError
from kvtui.core.files import write_atomic
from kvtui.core.topology import DEFAULT_ROUTE


def path_arg(text: str) -> str:
    """argparse ``type`` of every file or folder flag (``--json``, ``--record``, ``--svg``, ``--log-dir``…):
    the text as given, or ``argparse.ArgumentTypeError`` (a one-line usage error, exit 2) when it is empty
    or only spaces, which would otherwise mean "no file" and silently write nothing."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a path, got an empty one")
    return text


OUTPUT_ARGS = ("json", "svg", "png", "series", "record", "requests_log", "cast", "gif", "svg_anim", "screenshot")
"""The ``args`` attributes of the file outputs a command may write (``--json``, ``--svg``… ``--requests-log``)."""

INPUT_ARGS = ("file", "files", "trace")
"""The ``args`` attributes naming the files a command reads (a session, results, a trace file)."""


def check_distinct_paths(args: argparse.Namespace) -> None:
    """``KvtuiError`` before any work when two outputs of a command name the same file, or an output names a
    file the command reads (``report S.kvtui --json S.kvtui`` would replace the recording): each output needs
    its own file, and a device or a pipe (``--json /dev/null``) is refused, since the rename of an atomic write
    would replace it. ``-`` (standard output) and inputs that are not files (a shipped trace's name) are left
    out."""
    def same(a: str, b: str) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:
            return os.path.realpath(a) == os.path.realpath(b)

    outputs = [(f"--{name.replace('_', '-')}", path) for name in OUTPUT_ARGS
               if isinstance(path := getattr(args, name, None), str) and path.strip() and path != "-"]
    inputs = []
    for name in INPUT_ARGS:
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value]:
            if isinstance(path, str) and os.path.isfile(path):
                inputs.append(path)
    for i, (flag, path) in enumerate(outputs):
        if os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path):
            raise KvtuiError(f"{flag}: {path} is not a regular file (a device or a pipe): kvtui writes its outputs "
                             "through a rename, which would replace it; leave the flag out, or use - for "
                             "standard output where the flag takes it")
        for src in inputs:
            if same(path, src):
                raise KvtuiError(f"{flag}: {path} is a file this command reads; kvtui never writes over its input")
        for other, other_path in outputs[i + 1:]:
            if same(path, other_path):
                raise KvtuiError(f"{flag} and {other} name the same file {path}; give each output its own")


STDOUT_FLAGS = ("--json",)
"""The output flags that take ``-`` for standard output (the others write files: SVG, PNG, GIF, casts…)."""


def check_outputs(pairs) -> None:
    """:func:`check_writable` for each ``(path, flag)`` given (None or "" = the flag left out); ``-`` is left to
    the flags of :data:`STDOUT_FLAGS`."""
    for path, flag in pairs:
        if path and not (path == "-" and flag in STDOUT_FLAGS):
            check_writable(path, flag)


def check_writable(path: str, flag: str) -> None:
    """``KvtuiError`` now, before any work, if ``path`` cannot be written later (tries to open it for
    appending, and removes it again if that created it), is ``-`` (standard output: only
    :data:`STDOUT_FLAGS` take it, and their callers do not check it here), or is a recorded kvtui session,
    which no output replaces (``--json s1.kvtui`` for ``s1.json`` would lose the recording)."""
    from kvtui.session import is_session_file

    if path == "-":
        raise KvtuiError(f"{flag}: - (standard output) is taken by {', '.join(STDOUT_FLAGS)} only; give a file's path")
    target = Path(path)
    if is_session_file(target):
        raise KvtuiError(f"{flag}: {path} is a recorded kvtui session; kvtui never writes over one (choose "
                         "another name)")
    parent = target.resolve().parent
    if target.is_dir() or path.endswith(os.sep):
        raise KvtuiError(f"{flag}: {path} is a folder; give a file's path")
    if parent.exists() and not parent.is_dir():
        raise KvtuiError(f"{flag}: {parent} is a file, not a folder")
    if not parent.is_dir():
        raise KvtuiError(f"{flag}: folder {parent} does not exist")
    existed = target.exists()
    try:
        with open(target, "ab"):
            pass
    except OSError as exc:
        raise KvtuiError(f"{flag}: {path} is not writable ({exc.strerror})") from None
    if not existed:
        target.unlink()


def check_new_file(path: str, flag: str) -> None:
    """``KvtuiError`` if ``path`` exists (a recording never overwrites anything) or cannot be created."""
    if Path(path).is_dir():
        raise KvtuiError(f"{flag}: {path} is a folder; give a new file's path (kvtui never overwrites a file)")
    if Path(path).exists():
        raise KvtuiError(f"{flag}: {path} exists already; choose another name (kvtui never overwrites a file)")
    check_writable(path, flag)


def write_json_atomic(path: str, data: dict) -> None:
    """Write ``data`` as JSON whole or not at all (:func:`kvtui.core.files.write_atomic`: a temporary file and a
    rename, the umask's permissions, through a link to the file it names); ``-`` writes to standard output.
    ``OutputError`` (one line, exit 3) when it cannot be written."""
    if path == "-":
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return

    def dump(f) -> None:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")

    try:
        write_atomic(path, dump)
    except OSError as exc:
        raise OutputError(f"could not write {path}: {exc.strerror or exc}") from None


def open_session(path: str):
    """A :class:`~kvtui.session.reader.SessionReader`, or ``KvtuiError`` with the reader's one-line reason."""
    from kvtui.session import SessionError
    from kvtui.session.reader import SessionReader

    try:
        return SessionReader(path)
    except SessionError as exc:
        raise KvtuiError(str(exc)) from None


def run_context(args, layout, desc: dict, endpoints, bad_rows: int) -> dict:
    """What a summary says about the run besides its figures (also kept in a recorded session's header):
    layout, ``page_bytes`` (bytes), workload description, ``bad_rows_skipped``, concurrency, store mode, and
    ``setup``: the embedded segment's ``store_bytes`` (None when attached), ``segment_on``, ``protocol``,
    ``read_streams``, ``hosts`` (``off``/``auto``) and ``link`` (``RATE[,DELAY]`` normalised by ``engine_options``, ``1Gbit`` → ``1gbit``, so runs on
    the same link compare equal; None: unshaped), ``prefill_workers``, ``decode_workers``, ``route`` and ``store_nodes``, ``listen`` (remote workers' address, None), ``worker_client`` (``real``/``dummy``, resolved)
    (:mod:`kvtui.core.topology`) and the kvtui and Mooncake versions (what ``kvtui compare`` lists when runs differ)."""
    from kvtui import __version__
    from kvtui.session.writer import mooncake_version

    setup = {"store_bytes": getattr(args, "store_bytes", None), "segment_on": getattr(args, "segment_on", None),
             "protocol": getattr(args, "protocol", None), "read_streams": getattr(args, "read_streams", None),
             "kvtui_version": __version__, "mooncake_version": mooncake_version(),
             "hosts": getattr(args, "hosts", "off"), "link": getattr(args, "link", None),
             "prefill_workers": getattr(args, "prefill_workers", 1), "decode_workers": getattr(args, "decode_workers", 1),
             "route": getattr(args, "route", DEFAULT_ROUTE), "store_nodes": getattr(args, "store_nodes", 1),
             "listen": getattr(args, "listen", None), "worker_client": getattr(args, "worker_client", None)}
    return {"layout": layout.as_dict(), "page_bytes": layout.page_bytes, "workload": desc,
            "bad_rows_skipped": bad_rows, "concurrency": args.concurrency,
            "store_mode": "attached" if endpoints else "embedded", "setup": setup}


def full_setup(setup: dict | None, store: dict | None, meta: dict | None = None) -> dict:
    """A run's ``setup`` (:func:`run_context`) as its ``--json``, its report and its recording all state it:
    the kvtui and Mooncake versions from a recording's ``meta`` where its header predates them, and, attached
    to a cluster (no ``store_bytes`` of its own), ``store_capacity_bytes``: the store's capacity the last frame
    scraped from the master (``store``: the frame's store block; bytes)."""
    out = dict(setup or {})
    for key in ("kvtui_version", "mooncake_version"):
        if meta and key not in out:
            out[key] = meta.get(key)
    if out.get("store_bytes") is None and (store or {}).get("capacity_bytes"):
        out["store_capacity_bytes"] = int(store["capacity_bytes"])
    return out


CONTEXT_KEYS = ("seed", "model", "scheme", "command", "duration_s", "max_requests")
"""What a run was asked besides its setup: the workload's seed, the model and key scheme its keys are named
after, the command, and its bounds (``--duration`` in seconds, ``--requests``; None: unbounded). A session
keeps them in its header; ``run --json`` and ``report --json`` as ``context``; ``kvtui compare`` lists them
when runs differ (a 6 s run against a 10 s one is not a regression of 40 % of the requests)."""


def run_inputs(args) -> dict:
    """The :data:`CONTEXT_KEYS` of a run from its ``args`` (None where the command has no such flag)."""
    return {"seed": getattr(args, "seed", None), "model": getattr(args, "model", None),
            "scheme": getattr(args, "scheme", None), "command": getattr(args, "command", None),
            "duration_s": _seconds(getattr(args, "duration", None)), "max_requests": getattr(args, "requests", None)}


def _seconds(duration) -> float | None:
    """``--duration`` in seconds: a number as parsed (run, watch), a text as soak takes it (``2h``), None."""
    if duration is None or isinstance(duration, (int, float)):
        return duration
    from kvtui.core.units import parse_duration

    try:
        return parse_duration(duration, "--duration")
    except KvtuiError:  # (soak refuses it itself, first)
        return None


def session_header(args, layout, desc: dict, endpoints) -> dict:
    """The header of a recorded session: layout, workload spec and seed, cluster mode, model, keys."""
    return {**run_context(args, layout, desc, endpoints, 0), **run_inputs(args),
            "trace": getattr(args, "trace", None), "layout_text": layout.describe()}


def _percentiles(d: dict) -> str:
    """One latency line from a summary's ``{count, p50, p90, p99, max}`` (ms, HdrHistogram figures)."""
    if not d.get("count"):
        return "n/a (no samples)"
    return f"p50 {d['p50']:.2f} ms · p90 {d['p90']:.2f} · p99 {d['p99']:.2f} · max {d['max']:.2f} ({d['count']:,} samples)"


def format_summary(s: dict) -> str:
    """The human summary table of a run (``s``: :meth:`kvtui.metrics.aggregate.Aggregator.summary` fields);
    figures are named as in :mod:`kvtui.metrics.figures`."""
    from kvtui.metrics import figures as fig

    thr = s["throughput"]
    rel, pub = s["reload_ms"], s["publish_ms"]
    errors = ", ".join(f"{k} ×{v}" for k, v in s["errors"].items()) or "none"
    lines = [
        f"requests              {s['requests']:,} in {s['elapsed_s']:.1f} s ({thr['requests_per_s']:.1f} req/s)",
        f"prefill skipped       {s['tokens_hit']:,} of {s['tokens_input']:,} tokens ({s['token_hit_rate']:.2%})",
        f"KV page hits          {s['pages_hit']:,} of {s['pages_total']:,} full pages ({s['page_hit_rate']:.2%})",
        f"published             {s['pages_published']:,} pages; already present {s['pages_already_present']:,}; "
        f"failed {s['pages_failed']:,}",
        f"verified              {s['verified_pages']:,} pages byte-exact; mismatches {s['mismatches']:,}",
        f"{fig.RELOAD_LATENCY.name:<22}{_percentiles(rel)}",
        f"{'':<22}{fig.PROBE_ONLY.name} {s.get(fig.PROBE_ONLY.key, 0):,}; "
        f"{fig.UNUSABLE.name} {s.get(fig.UNUSABLE.key, 0):,} (no reload latency)",
        f"{fig.PUBLISH_LATENCY.name:<22}{_percentiles(pub)}",
        f"{'throughput':<22}{fig.REUSE_BUSY.name} {thr[fig.REUSE_BUSY.key]:.0f} {fig.REUSE_BUSY.unit} · "
        f"{fig.PUBLISH_BUSY.name} {thr[fig.PUBLISH_BUSY.key]:.0f} {fig.PUBLISH_BUSY.unit} · "
        f"{thr[fig.SKIPPED_RUN.key]:,.0f} {fig.SKIPPED_RUN.label}",
        f"store errors          {errors}",
        *ttft_lines(s),
    ]
    return "\n".join(lines)


def ttft_lines(s: dict) -> list[str]:
    """The summary's TTFT lines (estimates, with their basis; :func:`kvtui.metrics.ttft_saved.summary_fields`),
    the break-even marked when the reloads were slower than recomputing."""
    from kvtui.metrics import figures as fig

    est, t = s.get("ttft_estimate") or {}, s.get("ttft_saved_ms")
    if t is None:
        return [f"{'TTFT saved':<22}{est.get('off', 'no estimate')}"] if est else []
    ratio, slower = s.get("reload_vs_recompute"), s.get("reloads_slower_than_recompute") or 0
    mark = ""
    if ratio is not None:
        mark = f" · {fig.RELOAD_VS_RECOMPUTE.label} {ratio:.2f}×" + (
            f" — RELOAD SLOWER THAN RECOMPUTE ({slower:,} of {t['count']:,} requests)" if ratio > 1 else
            (f" ({slower:,} of {t['count']:,} requests slower)" if slower else ""))
    return [f"{fig.TTFT_SAVED.name:<22}p50 {t['p50']:.1f} ms · p99 {t['p99']:.1f} · total {t['total'] / 1e3:.2f} s over "
            f"{t['count']:,} reloads · {fig.GPU_SAVED_RUN.label} {s['prefill_gpu_s_saved']:.2f} s{mark}",
            f"{'':<22}estimate: {est.get('basis', '?')}"]
