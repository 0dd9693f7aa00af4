"""The FAST'25 sample traces shipped inside the package: ``--trace NAME`` everywhere, ``kvtui traces``, and the
files really in a built wheel. Nothing here reads ``../shared`` except the byte-for-byte comparison."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kvtui.cli import build_parser, main
from kvtui.config.layout import layout_from_args
from kvtui.config.workload import workload_from_args
from kvtui.core.errors import KvtuiError
from kvtui.core.traces import SHIPPED_TRACES, resolve_trace

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data" / "traces"
SMALL = ["--layers", "1", "--kv-heads", "1", "--head-dim", "1", "--elem-bytes", "1", "--page-tokens", "512"]
# ground truth of the trace release (rows, input tokens, full-block hits, hit tokens, token hit rate %)
TRUTH = {"synthetic": (3993, 61_194_628, 77_740, 39_802_880, 65.04),
         "conversation-head": (1000, 13_732_944, 5_780, 2_959_360, 21.55)}


def test_every_name_has_its_file_inside_the_package():
    assert set(SHIPPED_TRACES) == set(TRUTH)
    for name, t in SHIPPED_TRACES.items():
        assert t.path.is_file() and ROOT / "kvtui" / "data" / "traces" in t.path.parents
        assert resolve_trace(name) == str(t.path)
    assert (ROOT / "kvtui" / "data" / "traces" / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_shipped_files_are_the_release_rows():
    if not SHARED.is_dir():
        pytest.skip("../shared/data/traces is not present")
    assert SHIPPED_TRACES["synthetic"].path.read_bytes() == (SHARED / "synthetic_trace.jsonl").read_bytes()
    head = (SHARED / "conversation_head1000.jsonl").read_bytes().splitlines(keepends=True)[:1000]
    assert SHIPPED_TRACES["conversation-head"].path.read_bytes() == b"".join(head)


def test_traces_command_table_and_json(capsys, tmp_path):
    assert main(["traces"]) == 0
    out = capsys.readouterr().out
    for name, (rows, *_, rate) in TRUTH.items():
        line = next(x for x in out.splitlines() if x.startswith(name + " "))
        assert f"{rows:,}" in line and f"{rate:.2f}%" in line and " s " in line
    assert main(["traces", "--json"]) == 0  # no PATH: stdout
    doc = json.loads(capsys.readouterr().out)
    assert main(["traces", "--json", str(tmp_path / "t.json")]) == 0
    assert json.loads((tmp_path / "t.json").read_text()) == doc
    got = {t["name"]: t for t in doc["traces"]}
    assert set(got) == set(TRUTH)
    for name, (rows, input_tokens, _, hit_tokens, _) in TRUTH.items():
        t = got[name]
        assert (t["rows"], t["input_tokens"], t["block_tokens"]) == (rows, input_tokens, 512)
        assert t["ideal_token_hit_rate"] == hit_tokens / input_tokens and t["duration_s"] > 0
        assert Path(t["file"]) == SHIPPED_TRACES[name].path


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_trace_stats_by_name(capsys, name):
    rows, _, hits, _, rate = TRUTH[name]
    assert main(["trace-stats", name]) == 0
    out = capsys.readouterr().out
    assert f"{rows:,}" in out and f"{rate:.2f} %" in out and f"{hits:,} block hits" in out


def _workload(argv: list[str]):
    args = build_parser().parse_args(argv)
    plan = workload_from_args(args, layout_from_args(args).layout)
    return plan.build(), plan.description, list(plan.problems)


@pytest.mark.parametrize("command", ["run", "watch"])
def test_run_and_watch_replay_a_shipped_trace_by_name(command):
    wl, desc, problems = _workload([command, "--trace", "conversation-head", "--speed", "max", *SMALL])
    assert (desc["kind"], desc["name"], desc["total"], problems) == ("trace", "conversation-head", 1000, [])
    assert wl.rows_total == 1000 and wl.name == "conversation-head"


def test_a_path_still_works_and_wins_only_when_no_name_matches(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "synthetic").write_text('{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}\n')
    wl, desc, _ = _workload(["run", "--trace", "./synthetic", *SMALL])
    assert wl.rows_total == 1 and desc["name"] == "synthetic"
    wl, _, _ = _workload(["run", "--trace", "synthetic", *SMALL])  # the name is looked up first
    assert wl.rows_total == 3993


@pytest.mark.parametrize("argv, needle", [
    (["run", "--trace", "nope", "--layout", "tiny"], "--trace nope: no such trace file"),
    (["watch", "--trace", "nope", "--headless", "--duration", "1", "--layout", "tiny"], "--trace nope:"),
    (["bench", "--trace", "nope", *SMALL], "--trace nope:"),
    (["trace-stats", "nope"], "trace-stats nope:"),
    (["run", "--trace", "conversation_head", "--layout", "tiny"], "--trace conversation_head:"),
])
def test_an_unknown_name_is_one_line_listing_the_names(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kvtui: error: ") and needle in err, err
    assert "names: synthetic, conversation-head" in err


def test_a_missing_shipped_file_says_so(monkeypatch, tmp_path):
    import kvtui.core.traces as traces

    monkeypatch.setattr(traces, "TRACES_DIR", tmp_path)
    with pytest.raises(KvtuiError, match="missing from this installation"):
        resolve_trace("synthetic")


def test_a_built_wheel_carries_the_traces(tmp_path):
    """pyproject's package-data must reach the subfolder (``data/*`` alone ships no file of data/traces/)."""
    src = tmp_path / "src"
    for part in ("kvtui", "workload"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path / "dist")], cwd=src, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "No module named" in r.stderr:
        pytest.skip(f"cannot build a wheel here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("kvtui-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for t in SHIPPED_TRACES.values():
        assert f"kvtui/data/traces/{t.file}" in names
    assert {"kvtui/data/traces/LICENSE", "kvtui/data/traces/README.md"} <= names
