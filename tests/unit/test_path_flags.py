"""Every file or folder flag refuses an empty path with a one-line usage error (exit 2), instead of taking
it as "no file" and silently writing nothing."""

from __future__ import annotations

import argparse
import json
import os

import pytest

from kvtui.cli import build_parser, main
from kvtui.config.paths import path_arg

FILE_FLAGS = ("--json", "--svg", "--png", "--series", "--record", "--requests-log", "--cast", "--gif",
              "--svg-anim", "--screenshot", "--screenshot-dir", "--log-dir")


def _path_flags():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        for action in parser._actions:
            for flag in action.option_strings:
                if flag in FILE_FLAGS and action.nargs != 0:
                    yield name, flag, action


def test_every_file_flag_takes_a_checked_path():
    flags = list(_path_flags())
    assert len(flags) >= 20  # run, watch, soak, bench, report, compare, sweep, export, traces…
    assert [(n, f) for n, f, a in flags if a.type is not path_arg] == []


@pytest.mark.parametrize("command,flag", sorted({(n, f) for n, f, _ in _path_flags()}))
def test_an_empty_path_is_a_one_line_error(command, flag, capsys):
    args = [command, flag, ""]
    if command in ("report", "replay", "export"):
        args.insert(1, "session.kvtui")
    if command == "compare":
        args[1:1] = ["a.json", "b.json"]
    try:
        rc = main(args)
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"argument {flag}: needs a path, got an empty one" in err[0]


def test_an_output_never_replaces_an_input_or_another_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text("{}\n")
    (tmp_path / "b.json").write_text("{}\n")
    cases = [(["compare", "a.json", "b.json", "--json", "a.json"], "--json: a.json is a file this command reads"),
             (["compare", "a.json", "b.json", "--json", "./b.json"], "--json: ./b.json is a file this command reads"),
             (["report", "a.json", "--svg", str(tmp_path / "a.json")], "is a file this command reads"),
             (["run", "--json", "x.json", "--record", "./x.json"], "--json and --record name the same file x.json"),
             (["soak", "--series", "s.csv", "--record", "s.csv"], "--series and --record name the same file"),
             (["trace-stats", "a.json", "--json", "a.json"], "is a file this command reads")]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (argv, err)
    assert (tmp_path / "a.json").read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]
    assert main(["traces", "--json", "-"]) == 0  # standard output is never "the same file"
    capsys.readouterr()


def test_an_output_that_fails_late_is_one_line_exit_3_and_leaves_no_temporary_file(tmp_path, capsys, monkeypatch):
    import json

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(json, "dump", full)
    assert main(["traces", "--json", str(tmp_path / "t.json")]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kvtui: error: could not write {tmp_path / 't.json'}: No space left on device"]
    assert list(tmp_path.iterdir()) == []


def test_any_other_os_error_of_a_command_is_one_line_not_a_traceback(capsys, monkeypatch):
    import kvtui.commands.traces as traces

    def gone():
        raise FileNotFoundError(2, "No such file or directory", "/gone/trace.jsonl")

    monkeypatch.setattr(traces, "shipped_trace_rows", gone)
    assert main(["traces"]) == 3
    assert capsys.readouterr().err.strip().splitlines() == [
        "kvtui: error: /gone/trace.jsonl: No such file or directory"]


def test_run_and_watch_durations_take_units_as_soak_does(capsys):
    parser = build_parser()
    assert parser.parse_args(["run", "--duration", "5s"]).duration == 5.0
    assert parser.parse_args(["run", "--duration", "1.5"]).duration == 1.5
    assert parser.parse_args(["watch", "--duration", "2m"]).duration == 120.0
    assert main(["run", "--duration", "five"]) == 2
    assert "argument --duration: must be a duration such as 90s" in capsys.readouterr().err


def test_a_device_is_never_an_output(capsys):
    assert main(["traces", "--json", "/dev/null"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--json: /dev/null is not a regular file" in err[0]
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_ctrl_c_while_kvtui_is_imported_is_one_line(monkeypatch, capsys):
    """The console script's entry (kvtui/__main__.py) imports the CLI itself, so a Ctrl-C during that import
    (the first ~0.3 s of every command) is one line and exit 130, not a traceback."""
    import builtins

    import kvtui.__main__ as entry

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "kvtui.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert entry.main() == 130
    assert capsys.readouterr().err == "kvtui: interrupted\n"


@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_or_sighup_while_kvtui_is_imported_is_one_line(monkeypatch, capsys, sig, code):
    """SIGTERM or SIGHUP while the console script's entry imports the CLI (a real signal, sent to this
    process from inside that import): one line and 128 + the signal, not a silent death; the default
    handlers are back afterwards, for kvtui.cli to install its own (a SIGHUP ignored under nohup stays so)."""
    import builtins
    import os
    import signal

    import kvtui.__main__ as entry

    signum = getattr(signal, sig)
    monkeypatch.setattr(signal, "getsignal", lambda s: signal.SIG_DFL)  # (as in a fresh process)
    real_import = builtins.__import__
    saved = {s: signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP)}

    def signalled(name, *args, **kwargs):
        if name == "kvtui.cli":
            os.kill(os.getpid(), signum)  # (the handler runs here, in the main thread)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", signalled)
    try:
        assert entry.main() == code
        assert capsys.readouterr().err == f"kvtui: terminated ({sig})\n"
        monkeypatch.undo()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL == signal.getsignal(signal.SIGHUP)
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def test_sigterm_while_the_parser_is_built_is_one_line(monkeypatch, capsys):
    """kvtui.cli installs its SIGTERM handler before it builds the parser (which imports every command):
    a SIGTERM then ends with 143 and one line, not 130."""
    import signal

    import kvtui.cli as cli

    def terminated():
        raise cli.Terminated(signal.SIGTERM)

    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setattr(cli, "build_parser", terminated)
    try:
        assert cli.main(["traces"]) == 143
        assert capsys.readouterr().err == "kvtui: terminated (SIGTERM)\n"
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def test_json_through_a_symbolic_link_writes_the_file_it_points_at(tmp_path, capsys):
    """An atomic write renames a temporary file over the target: through a link it replaces the file the link
    names and keeps the link (before, the link itself was replaced by a file)."""
    from kvtui.cli import main

    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("{}")
    link.symlink_to(real)
    assert main(["trace-stats", "synthetic", "--json", str(link)]) == 0
    assert link.is_symlink() and json.loads(real.read_text())["rows"] > 0


def test_a_path_ending_in_a_slash_is_a_folder(tmp_path, capsys):
    from kvtui.cli import main

    assert main(["trace-stats", "synthetic", "--json", f"{tmp_path}/new/"]) == 2
    assert capsys.readouterr().err == f"kvtui: error: --json: {tmp_path}/new/ is a folder; give a file's path\n"


def test_a_flag_is_taken_only_whole():
    """argparse would take ``--screenshot`` for ``serve``'s ``--screenshot-dir`` (a prefix of it): refused."""
    from kvtui.cli import main

    assert main(["serve", "--screenshot", "x.svg"]) == 2
    assert main(["run", "--requ", "5"]) == 2


def test_ctrl_c_that_leaves_a_string_exec_still_exits_130_under_python_m(tmp_path):
    """A Ctrl-C that lands inside a string ``exec`` (``dataclasses`` builds methods with one during a lazy
    import) and that kvtui catches: ``python -m kvtui`` exits 130 with one line, not killed by SIGINT (-2)
    as CPython's ``Py_RunMain`` would end it."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "sitecustomize.py").write_text(  # (patched before the CLI runs, in the real entry)
        "import kvtui.cli\n"
        "def _interrupted(args):\n"
        "    exec('raise KeyboardInterrupt', {})\n"
        "kvtui.cli.check_distinct_paths = _interrupted\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{root}")
    done = subprocess.run([sys.executable, "-m", "kvtui", "traces"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stderr) == (130, "kvtui: interrupted\n")
