"""Run every example of kvtui's output that the documentation shows, for real, and write what it printed.

    .venv/bin/python scripts/gen_examples.py                   # every example (make examples): a few minutes
    .venv/bin/python scripts/gen_examples.py NAME…             # only these (see --list)
    .venv/bin/python scripts/gen_examples.py --render          # rewrite the snippets from the kept transcripts

:data:`EXAMPLES` is the one definition of each example: the command lines a page shows and which of their
output lines it shows. Each example runs in a fresh folder (``kvtui`` there links to the package, so
``kvtui/data/…`` paths work; ``TMPDIR`` is its ``tmp/``) through bash, every ``kvtui`` of it as
``scripts/example_capture.py``, which runs the console script's own entry and keeps what each renderer (the
functions that turn figures into text) was given. Two files per example land in ``docs/examples/``:

- ``NAME.txt``: the ``$ command`` lines and the output the page shows, included by the page with
  ``--8<-- "docs/examples/NAME.txt"`` inside a ``console`` block (pymdownx.snippets);
- ``NAME.json``: the transcript: each step's command, exit code, whole output and the renderers' calls (their
  arguments as JSON and the text they returned).

Paths are shown as a user would see them: the example's folder as ``.``-relative, its ``tmp/`` as ``/tmp``,
the repository as ``…``. ``tests/unit/test_doc_examples.py`` calls each renderer again on the kept arguments and
fails when the text differs from the documented one (a label or a line of the tool changed: run this again),
checks each snippet against its transcript and this table, and checks that the words of every other line
(the ``kvtui:`` notes) are still in kvtui's source.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "examples"
CAPTURE = ROOT / "scripts" / "example_capture.py"
ELLIPSIS = "…"
ATTEMPTS = 3  # an example whose output misses its `expect` (a signal that came too early) runs again
STEP_TIMEOUT_S = 300
INCLUDE = '--8<-- "docs/examples/{name}.txt"'


@dataclass(frozen=True)
class Section:
    """Output lines from the first that matches ``start`` up to, not including, the next that matches ``stop``
    (regular expressions, searched; ``stop`` empty: to the end)."""

    start: str
    stop: str = ""


@dataclass(frozen=True)
class Step:
    """One command line of an example.

    ``lines``: the command as the page shows it, one item per shown line (they run joined by spaces; the page
    joins them with `` \\`` and indents the rest under the first flag). ``keep``: the output lines shown:
    ``None`` all, ``()`` none (one ``…`` when there was output), else regular expressions (a line that one
    matches is kept, with the indented lines right under it: its value wrapped, its sub-rows) and
    :class:`Section` s; each run of left-out lines is one ``…``. ``note``: a comment shown
    after the command. ``hidden``: run, not shown (an input an earlier block of the page made). ``background``:
    shown with `` &``, the next step starts ``settle`` seconds after ``until`` is in its output, and it is sent
    SIGTERM when the example ends; the page shows its output up to then. ``send``: ``(signal, when)``: the
    signal is sent to kvtui (not the shell), ``when`` seconds after the step started, or ``settle`` seconds after
    its output matches the regular expression ``when``, or (``"start-up"``) as soon as the embedded cluster's
    log folder exists. ``rc``: the exit codes that count as the example working;
    ``expect``: a regular expression its output must hold (else the example runs again, at most
    :data:`ATTEMPTS` times)."""

    lines: tuple[str, ...]
    keep: tuple[str | Section, ...] | None = None
    note: str = ""
    hidden: bool = False
    background: bool = False
    until: str = ""
    settle: float = 0.0
    send: tuple[int, float | str] | None = None
    rc: tuple[int, ...] = (0,)
    expect: str = ""

    @property
    def command(self) -> str:
        """The command line that runs."""
        return " ".join(self.lines)

    def shown(self) -> list[str]:
        """The ``$`` lines the page shows."""
        first = self.lines[0]
        flag = first.find(" -")
        indent = " " * (2 + (flag + 1 if flag >= 0 else 4))
        out = [f"$ {first}"] + [indent + more for more in self.lines[1:]]
        for i in range(len(out) - 1):
            out[i] += " \\"
        if self.background:
            out[-1] += " &"
        if self.note:
            out[-1] += f"     # {self.note}"
        return out


@dataclass(frozen=True)
class Example:
    """A documented example: ``name`` (its files ``docs/examples/NAME.*``), the page under ``docs/`` that
    includes it, its steps (run in order, in one folder)."""

    name: str
    page: str
    steps: tuple[Step, ...]


def cmd(*lines: str, **kw: Any) -> Step:
    """A :class:`Step` of the shown lines ``lines``."""
    return Step(tuple(lines), **kw)


TRACE_600 = "head -600 kvtui/data/traces/synthetic_trace.jsonl > head600.jsonl"
TRACE_PAGES = "--speed max --layers 1 --kv-heads 2 --head-dim 1 --elem-bytes 2"
SAVE_TRACE_RUN = "kvtui run --scenario multi-turn --pool 3 --requests 12 --layout tiny --prompt-tokens 100"
HITS = (r"^prefill skipped", r"^KV page hits", r"^misses")
LLAMA = "kvtui run --model-config llama-3.1-8b --page-tokens 16 --requests 20"
KEYS = "kvtui keys --model demo-model --page-tokens 4 --tokens"
HOT_RUN = "kvtui run --layout tiny --requests 4000 --segment-on decode --decode-workers 2"

EXAMPLES: tuple[Example, ...] = (
    Example("doctor", "getting-started.md", (cmd("kvtui doctor"),)),
    Example("first-run", "getting-started.md",
            (cmd("kvtui run --layout tiny --requests 200 --overlap 50 --json run.json"),)),
    Example("run-summary", "guide/run.md",
            (cmd("kvtui run --layout tiny --requests 2000 --prefill-tokens-per-s 20000"),)),
    Example("run-misses", "guide/run.md", (
        cmd(TRACE_600),
        cmd(f"kvtui run --trace head600.jsonl {TRACE_PAGES}", "--page-tokens 512 --store-size 128MiB", keep=HITS),
        cmd(f"kvtui run --trace head600.jsonl {TRACE_PAGES}", "--page-tokens 512 --store-size 16MiB", keep=HITS,
            expect=r"· evicted \d"),
    )),
    Example("run-in-flight", "guide/run.md", (
        cmd("kvtui run --layout tiny --requests 400 --concurrency 8 --pool 16",
            keep=(r"^KV page hits", r"^misses", r"^published"), expect=r"in flight \d"),
    )),
    Example("run-aiperf", "guide/run.md", (
        cmd(TRACE_600, hidden=True),
        cmd(f"kvtui run --trace head600.jsonl {TRACE_PAGES}", "--page-tokens 512 --store-size 16MiB",
            keep=(r"^\s+ideal hit rate",)),
        cmd("kvtui trace-stats head600.jsonl | grep aiperf"),
    )),
    Example("layout", "guide/run.md", (cmd("kvtui layout deepseek-v3 --kv-dtype fp8 --prompt-tokens 1792"),)),
    Example("run-ttft-gpu", "guide/run.md", (
        cmd(LLAMA, "--store-size 256MiB", keep=(r"^TTFT saved",)),
        cmd(LLAMA, "--store-size 256MiB --gpu a100", keep=(r"^TTFT saved",)),
    )),
    Example("run-interrupted", "guide/run.md", (
        cmd("kvtui run --layout tiny --duration 60 --json int.json", note="SIGTERM 3 s into the run",
            send=(signal.SIGTERM, r"kvtui: network"), settle=3.0, rc=(143,), keep=(r"^kvtui: ", r"^requests "),
            expect=r"interrupted: the summary covers"),
    )),
    Example("run-interrupted-start-up", "guide/run.md", (
        cmd("kvtui run --layout tiny --requests 100 --json start.json", note="SIGTERM while the store starts",
            send=(signal.SIGTERM, "start-up"), rc=(143,), expect=r"interrupted during start-up"),
    )),
    Example("verify-sampled", "guide/store.md", (cmd("kvtui run --verify sampled --requests 100 --quiet"),)),
    Example("few-shot", "guide/workloads.md", (
        cmd("kvtui run --layout tiny --scenario few-shot --requests 300 --quiet",
            keep=(r"^requests ", r"^KV page hits")),
    )),
    Example("traces", "guide/workloads.md", (cmd("kvtui traces"),)),
    Example("trace-stats", "guide/workloads.md", (cmd("kvtui trace-stats conversation-head --capacity 1M,10M"),)),
    Example("trace-stats-capacity", "guide/workloads.md", (
        cmd("kvtui trace-stats synthetic --capacity 1M,3M,10M", keep=(Section(r"^ideal hit rate"),)),
    )),
    Example("trace-stats-synthesis", "guide/workloads.md", (
        cmd("kvtui trace-stats synthetic --prefix-scale 2 --trace-speedup 4",
            keep=(r"^(trace|synthesis|duration|arrival rate|shared prefixes|ideal hit rate) ",)),
    )),
    Example("save-trace", "guide/workloads.md", (
        cmd(f"{SAVE_TRACE_RUN} --save-trace ran.jsonl",
            keep=(r"^kvtui: ", r"^requests ", r"^prefill skipped", r"^KV page hits")),
        cmd("head -2 ran.jsonl"),
        cmd("kvtui run --trace ran.jsonl --trace-block-tokens 8 --speed max --layout tiny --quiet",
            keep=(r"^requests ", *HITS[:2])),
    )),
    Example("save-trace-refused", "guide/workloads.md", (
        cmd(f"{SAVE_TRACE_RUN} --save-trace ran.jsonl --quiet", hidden=True),
        cmd("kvtui run --trace ran.jsonl --speed max --layout tiny --quiet", rc=(2,)),
    )),
    Example("watch-save-trace", "guide/workloads.md", (
        cmd("kvtui watch --headless --duration 3 --save-trace watched.jsonl"),
        cmd("head -1 watched.jsonl"),
        cmd("kvtui trace-stats watched.jsonl --block-tokens 8", keep=(r"^(trace|rows|duration|ideal hit rate) ",)),
    )),
    Example("keys", "guide/workloads.md", (cmd(f"{KEYS} 1,2,3,4,5,6,7,8,9"),)),
    Example("keys-ten-tokens", "explanation/keys.md", (cmd(f"{KEYS} 0,1,2,3,4,5,6,7,8,9"),)),
    Example("layout-bytes", "explanation/keys.md", (
        cmd("kvtui layout deepseek-v3 --kv-dtype fp8 --prompt-tokens 1792", keep=(r"^(bytes per token|page|prompt) ",)),
    )),
    Example("export-film", "guide/recordings.md", (
        cmd("kvtui run --layout tiny --rate 100 --requests 800 --record demo.kvtui", hidden=True),
        cmd("kvtui export demo.kvtui --cast demo.cast --gif demo.gif",
            "--svg-anim demo-anim.svg --speed 2 --from 1s --to 7s --annotate"),
    )),
    Example("export-trace", "guide/recordings.md", (
        cmd(f"{SAVE_TRACE_RUN} --record ran.kvtui", keep=()),
        cmd("kvtui export ran.kvtui --trace exported.jsonl"),
    )),
    Example("sweep", "guide/sweeps.md", (
        cmd("kvtui sweep --trace conversation-head --capacity 1M,3M", "--json sweep.json --svg sweep.svg"),
    )),
    Example("sweep-lease", "guide/sweeps.md", (
        cmd("kvtui sweep --trace conversation-head --capacity 1M,3M", "--lease-ttl 0.1 --quiet",
            keep=(Section(r"^capacity "),)),
    )),
    Example("compare", "guide/sweeps.md", (
        cmd("kvtui run --layout tiny --duration 6 --overlap 75 --quiet --record a.kvtui", keep=()),
        cmd("kvtui run --layout tiny --duration 6 --overlap 25 --quiet --record b.kvtui", keep=()),
        cmd("kvtui compare a.kvtui b.kvtui --svg compare.svg --json compare.json",
            keep=(Section(r"^A ", r"^prefill tokens skipped +tokens"),)),
    )),
    Example("soak", "guide/soak.md", (
        cmd("kvtui soak --duration 60s --chaos 3 --layout tiny", "--json soak.json --series soak.csv",
            keep=(r"^kvtui: ", Section(r"^soak  "),), expect=r"recovered in"),
    )),
    Example("soak-disk", "guide/soak.md", (
        cmd("kvtui soak --duration 50s --chaos 3.2 --seed 1 --faults store-kill,disk-full --layout tiny",
            "--store-size 16MiB --disk-size 16MiB --client-ttl 3 --quiet", rc=(0, 1),
            keep=(r"^(faults|  store-kill|  disk-full|pages lost|targets) ", r"^kvtui: error"),
            expect=r"acknowledged pages checked"),
    )),
    Example("prometheus", "guide/prometheus.md", (
        cmd("kvtui run --layout tiny --duration 60 --prometheus 9400", background=True,
            until=r"Prometheus metrics on", settle=3.0),
        cmd("curl -s 127.0.0.1:9400/metrics | grep kvtui_requests_total"),
    )),
    Example("request-log", "guide/prometheus.md", (
        cmd("kvtui run --layout tiny --requests 200 --requests-log requests.csv --quiet", keep=()),
        cmd("head -3 requests.csv"),
    )),
    Example("tiers-disk", "guide/tiers.md", (
        cmd("kvtui run --layout tiny --requests 600 --store-size 16MiB --disk-size 64MiB",
            "--pool 128 --prompt-tokens 512 --overlap 90 --prefill-tokens-per-s 20000",
            keep=(r"^kvtui: tiers", r"^requests ", r"^prefill skipped", r"^KV page hits", r"^reload latency",
                  r"^└ ", r"^disk tier", r"^TTFT saved"), expect=r"KV page hits by tier: .* disk [1-9]"),
    )),
    Example("tiers-refused", "guide/tiers.md", (
        cmd("kvtui run --layout tiny --store-size 64MiB --disk-size 32MiB", rc=(2,)),
        cmd("kvtui run --layout tiny --store-size 64MiB --disk-size 1GiB --disk-path /mnt/ssd0", rc=(2,)),
        cmd("kvtui run --layout tiny --replicate-hot", rc=(2,)),
        cmd("kvtui run --layout tiny --replicate-hot --master 10.0.0.7:50051",
            "--metadata http://10.0.0.7:8080/metadata", rc=(2,)),
    )),
    Example("tiers-store-full", "guide/tiers.md", (
        cmd("kvtui run --layout tiny --requests 400 --store-size 16MiB --disk-size 256MiB",
            "--pool 512 --prompt-tokens 512 --overlap 25 --concurrency 8",
            keep=(r"^kvtui: store full", r"^store errors", r"^disk tier"),
            expect=r"store full: .* while the disk tier takes its evictions"),
    )),
    Example("tiers-hot", "guide/tiers.md", (
        cmd(f"{HOT_RUN} --replicate-hot --json hot.json",
            keep=(r"^requests ", r"^KV page hits", r"^store \(master\)", r"^hot copies"),
            expect=r"hot copies \(master\) +[1-9]"),
        cmd(f"{HOT_RUN} --json cold.json --quiet", keep=()),
        cmd("jq -r '.workers[] | select(.role == \"decode\")",
            "| \"\\(input_filename) \\(.name) local \\(.local_share * 100 | round) %\"' hot.json cold.json"),
    )),
    Example("bench-verify", "benchmarks.md", (
        cmd("kvtui bench", keep=(Section(r"^Request rate", r"^$"), r"^  (request rate|full: rate|sampled: rate) ÷")),
    )),
    Example("bench-disk", "benchmarks.md", (
        cmd("kvtui bench --disk", keep=(Section(r"^kvtui bench --disk", r"^Legend"),)),
    )),
)
"""Every documented example, in the order ``make examples`` runs them."""


# -- running ---------------------------------------------------------------------------------------------------
class ExampleFailed(Exception):
    """An example whose command did not end as its step says (exit code, expected output)."""


def _redactions(folder: Path) -> list[tuple[str, str]]:
    """What a path in the output is replaced with: the example's ``tmp/`` by ``/tmp``, its folder by nothing,
    the repository by ``…``."""
    return [(str(folder / "tmp"), "/tmp"), (f"{folder}/", ""), (str(folder), "."), (str(ROOT), ELLIPSIS)]


def _redact(text: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "tmp").mkdir(parents=True)
    (folder / "records").mkdir()
    (folder / "kvtui").symlink_to(ROOT / "kvtui")
    return folder


_SHELL = 'kvtui() {{ "{py}" "{capture}" "{folder}/records/$(date +%s%N).json" "$@"; }}\n'


def _start(step: Step, folder: Path, n: int) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Start ``step`` in bash in ``folder``; its output file and its kvtui's pid file."""
    out, pid = folder / f"step-{n}.out", folder / f"step-{n}.pid"
    script = _SHELL.format(py=sys.executable, capture=CAPTURE, folder=folder) + step.command
    env = dict(os.environ, TMPDIR=str(folder / "tmp"), KVTUI_EXAMPLE_PID=str(pid), COLUMNS="100", LC_ALL="C.UTF-8")
    with open(out, "wb") as f:
        proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-c", script], cwd=folder, env=env, stdout=f,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, out, pid


def _kvtui_pid(pid_file: Path, deadline: float) -> int:
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.02)
    raise ExampleFailed(f"no kvtui process started (no {pid_file.name})")


def _send(step: Step, folder: Path, out: Path, pid_file: Path, t0: float) -> None:
    """Send ``step.send``'s signal when its moment comes (``settle`` seconds after it)."""
    assert step.send is not None
    sig, when = step.send
    deadline = t0 + 120
    pid = _kvtui_pid(pid_file, deadline)
    if isinstance(when, str):
        def come() -> bool:
            if when == "start-up":
                return any((folder / "tmp").glob("kvtui-logs-*"))
            return bool(re.search(when, out.read_text(errors="replace")))

        while not come():
            if time.monotonic() > deadline:
                raise ExampleFailed(f"{step.command!r}: {when!r} never came: " + out.read_text(errors="replace"))
            time.sleep(0.005)
    else:
        time.sleep(max(0.0, t0 + when - time.monotonic()))
    time.sleep(step.settle)
    os.kill(pid, sig)


def _end(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the step's process group (bash and its kvtui: kvtui tears its cluster down), SIGKILL after 15 s."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise ExampleFailed(f"still running after {timeout_s:.0f} s") from None


def _records(folder: Path, seen: set[str], pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The capture records the step's kvtui commands wrote (oldest first), paths redacted, their chunks left
    out; each renderer call checked to give the same text again from its arguments as JSON."""
    out = []
    for path in sorted((folder / "records").glob("*.json")):
        if path.name in seen:
            continue
        seen.add(path.name)
        rec = json.loads(_redact(path.read_text(), pairs))
        for call in rec["calls"]:
            again = rerender(call)
            if again != call["out"]:
                raise ExampleFailed(f"{call['renderer']} gives another text from its arguments kept as JSON: "
                                    "make the renderer's input plain data (example_capture.encode)")
        out.append({"argv": rec["argv"], "rc": rec["rc"], "calls": rec["calls"]})
    return out


def run_example(ex: Example, root: Path) -> dict[str, Any]:
    """Run ``ex`` (up to :data:`ATTEMPTS` times) and return its transcript."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _run_once(ex, root)
        except ExampleFailed as exc:
            if attempt == ATTEMPTS:
                raise ExampleFailed(f"{ex.name}: {exc}") from None
            print(f"  {ex.name}: {exc}; again", file=sys.stderr)
    raise AssertionError("unreachable")


def _run_once(ex: Example, root: Path) -> dict[str, Any]:
    folder = _folder(root, ex.name)
    pairs = _redactions(folder)
    seen: set[str] = set()
    steps: list[dict[str, Any]] = []
    background: list[tuple[subprocess.Popen[bytes], Path]] = []
    started: list[subprocess.Popen[bytes]] = []
    try:
        for n, step in enumerate(ex.steps):
            t0 = time.monotonic()
            proc, out, pid = _start(step, folder, n)
            started.append(proc)
            if step.background:
                while not re.search(step.until, out.read_text(errors="replace")):
                    if proc.poll() is not None or time.monotonic() - t0 > 120:
                        raise ExampleFailed(f"{step.command!r} never printed {step.until!r}: "
                                            + out.read_text(errors="replace")[-2000:])
                    time.sleep(0.05)
                time.sleep(step.settle)
                background.append((proc, pid))
                steps.append({"command": step.command, "rc": None, "seconds": round(time.monotonic() - t0, 1),
                              "output": _redact(out.read_text(errors="replace"), pairs), "records": []})
                continue
            if step.send is not None:
                _send(step, folder, out, pid, t0)
            rc = _wait(proc, STEP_TIMEOUT_S)
            text = _redact(out.read_bytes().decode("utf-8", errors="replace"), pairs)
            if rc not in step.rc:
                raise ExampleFailed(f"{step.command!r} exited {rc}, not {step.rc}:\n{text[-3000:]}")
            if step.expect and not re.search(step.expect, text, re.M):
                raise ExampleFailed(f"{step.command!r}: no {step.expect!r} in its output:\n{text[-3000:]}")
            steps.append({"command": step.command, "rc": rc, "seconds": round(time.monotonic() - t0, 1),
                          "output": text, "records": _records(folder, seen, pairs)})
    finally:
        for proc, pid in background:
            if proc.poll() is None:
                try:
                    os.kill(_kvtui_pid(pid, time.monotonic() + 5), signal.SIGTERM)
                except (ExampleFailed, ProcessLookupError):
                    pass
                _wait(proc, 60)
        for proc in started:  # (a step cut short: this script failed or was interrupted)
            _end(proc)
    from kvtui import __version__

    return {"example": ex.name, "kvtui_version": __version__, "steps": steps}


# -- what the pages show ---------------------------------------------------------------------------------------
def select(lines: list[str], keep: tuple[str | Section, ...] | None) -> list[str]:
    """The lines of ``lines`` that ``keep`` shows (:class:`Step`), each run of the others as one ``…``."""
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    if keep is None:
        return lines
    shown = [False] * len(lines)
    for rule in keep:
        if isinstance(rule, Section):
            inside = False
            for i, line in enumerate(lines):
                if not inside and re.search(rule.start, line):
                    inside = True
                elif inside and rule.stop and re.search(rule.stop, line):
                    break
                shown[i] = shown[i] or inside
        else:
            under = False  # (the indented lines right under a kept line go with it)
            for i, line in enumerate(lines):
                under = bool(re.search(rule, line)) or (under and line.startswith(" "))
                shown[i] = shown[i] or under
    out: list[str] = []
    for line, show in zip(lines, shown):
        if show:
            out.append(line)
        elif not out or out[-1] != ELLIPSIS:
            out.append(ELLIPSIS)
    return out


def snippet(ex: Example, transcript: dict[str, Any]) -> str:
    """The text of ``docs/examples/NAME.txt``: each shown step's ``$`` lines and the output lines it shows."""
    lines: list[str] = []
    for step, got in zip(ex.steps, transcript["steps"]):
        if step.hidden:
            continue
        lines += step.shown()
        lines += select(got["output"].splitlines(), step.keep)
    return "\n".join(lines) + "\n"


def rerender(call: dict[str, Any]) -> str:
    """The text the renderer of a kept call gives today from its kept arguments."""
    from example_capture import decode, renderer

    return renderer(call["renderer"])(*decode(call["args"]), **decode(call["kwargs"]))


def transcript_path(name: str) -> Path:
    return OUT / f"{name}.json"


def snippet_path(name: str) -> Path:
    return OUT / f"{name}.txt"


def write(ex: Example, transcript: dict[str, Any]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    transcript_path(ex.name).write_text(json.dumps(transcript, indent=1, ensure_ascii=False) + "\n")
    snippet_path(ex.name).write_text(snippet(ex, transcript))


# -- the words of the other lines --------------------------------------------------------------------------------
_PLACE = object()


def _pieces(node: ast.AST) -> list[Any]:
    """A string literal as its literal texts and :data:`_PLACE` for each ``{…}`` of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    assert isinstance(node, ast.JoinedStr)
    return [v.value if isinstance(v, ast.Constant) else _PLACE for v in node.values]


class Literals:
    """What kvtui's source can print (:func:`source_patterns`): ``patterns``, every string literal as a pattern of
    one line (an f-string's ``{…}`` matches anything; a literal of several lines gives one per line) with its
    longest literal text; ``words``, the nouns :func:`plural` is given (and their plurals given); ``short``, the
    words of the literals of at most three words (``"ok "``, ``"FAIL"``: a choice inside an f-string; ``"the
    store node"``: a title put into a message)."""

    def __init__(self) -> None:
        self.patterns: list[tuple[re.Pattern[str], str]] = []
        self.words: set[str] = set()
        self.short: set[str] = set()


def _bare(word: str) -> str:
    return word.strip("()[]{},;:.'\"`«»!?")


def source_patterns(folders: tuple[str, ...] = ("kvtui", "workload")) -> Literals:
    """:class:`Literals` of every ``.py`` file under ``folders`` (docstrings left out: they are never printed)."""
    lit = Literals()
    patterns, words = lit.patterns, lit.words
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # (never printed)
            words.update(a.value for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "")
                         == "plural" for a in n.args[1:] if isinstance(a, ast.Constant) and isinstance(a.value, str))
            for node in ast.walk(tree):
                if not isinstance(node, (ast.JoinedStr, ast.Constant)) or (
                        isinstance(node, ast.Constant) and not isinstance(node.value, str)) or id(node) in docstrings:
                    continue
                pieces = _pieces(node)
                if isinstance(node, ast.Constant) and len(node.value.split()) <= 3:
                    lit.short.update(_bare(w) for w in node.value.split())
                line: list[Any] = []
                for piece in [*pieces, "\n"]:
                    parts = piece.split("\n") if isinstance(piece, str) else [piece]
                    for k, part in enumerate(parts):
                        if k:
                            _add_pattern(line, patterns)
                            line = []
                        if part is _PLACE or part:
                            line.append(part)
    return lit


def _add_pattern(line: list[Any], patterns: list[tuple[re.Pattern[str], str]]) -> None:
    texts = [p for p in line if p is not _PLACE]
    if sum(len(t) for t in texts) < 5 or not any(re.search(r"[A-Za-z]{2}", t) for t in texts):
        return
    regex = "".join(f"({re.escape(p)})" if p is not _PLACE else ".*?" for p in line)
    patterns.append((re.compile(regex), max(texts, key=len)))


UNITS = frozenset({"B", "KiB", "MiB", "GiB", "TiB"})


def unexplained_words(line: str, lit: Literals, given: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The words of ``line`` that no string literal of the code accounts for. A word of letters (a label, a word
    of a note) is accounted for when it lies inside the literal text of a literal that matches the line, or
    when it is a noun :func:`plural` is given (or that and an ``s``), a word of a literal of at most three words,
    or a unit of bytes (:data:`UNITS`, which ``format_bytes`` writes). A word with a
    digit or one of ``/ . _ : = @ %``, a flag (``--x``) and a word of ``given`` (the command's own arguments)
    are values."""
    covered = [False] * len(line)
    for regex, longest in lit.patterns:
        if longest not in line:
            continue
        m = regex.search(line)
        if m is None:
            continue
        for g in range(1, (m.lastindex or 0) + 1):
            for i in range(*m.span(g)):
                covered[i] = True
    out = []
    for m in re.finditer(r"\S+", line):
        word = m.group()
        bare = _bare(word)
        if (re.search(r"[\d/._:=@%]", bare) or bare.startswith("--") or word in given or bare in given
                or not re.search(r"[A-Za-z]", word)):
            continue
        if all(covered[i] for i in range(m.start(), m.end()) if line[i].isalpha()):
            continue
        if bare in lit.words or bare[:-1] in lit.words or bare in lit.short or bare in UNITS:
            continue
        out.append(word)
    return out


# -- the command ---------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("names", nargs="*", metavar="NAME", help="only these examples (default: all)")
    p.add_argument("--render", action="store_true", help="rewrite the snippets from the kept transcripts, run nothing")
    p.add_argument("--list", action="store_true", help="list the examples and the page of each")
    args = p.parse_args(argv)
    by_name = {ex.name: ex for ex in EXAMPLES}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        p.error(f"no example {', '.join(unknown)} (--list lists them)")
    chosen = [by_name[n] for n in args.names] or list(EXAMPLES)
    if args.list:
        for ex in chosen:
            print(f"{ex.name:26} docs/{ex.page}: " + " ; ".join(s.command for s in ex.steps if not s.hidden))
        return 0
    if args.render:
        for ex in chosen:
            write(ex, json.loads(transcript_path(ex.name).read_text()))
        return 0
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="kvtui-examples-"))
    failed: list[str] = []
    try:
        for ex in chosen:
            t0 = time.monotonic()
            try:
                transcript = run_example(ex, root)
            except ExampleFailed as exc:  # (its files stay as they were; the others go on)
                print(f"gen_examples: {exc}", file=sys.stderr, flush=True)
                failed.append(ex.name)
                continue
            write(ex, transcript)
            print(f"{ex.name:26} {time.monotonic() - t0:5.1f} s  docs/examples/{ex.name}.txt", flush=True)
    except KeyboardInterrupt:
        print("gen_examples: interrupted; the examples written so far are new, the others as they were",
              file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{len(chosen) - len(failed)} examples in {time.monotonic() - started:.0f} s"
          + (f"; failed, left as they were: {' '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
