"""Every file or folder flag refuses an empty path with a one-line usage error (exit 2), instead of taking
it as "no file" and silently writing nothing."""

from __future__ import annotations

import argparse

import pytest

from kvtui.cli import build_parser, main
from kvtui.commands.output import path_arg

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
