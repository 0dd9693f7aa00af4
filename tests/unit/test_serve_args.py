"""`kvtui serve` without a browser: the options it passes on to each tab's `kvtui watch`, its one-line refusals,
and the warning for a --host other than loopback (the browser itself: tests/integration/test_serve_browser.py)."""

from __future__ import annotations

import shlex
import socket
import sys

import pytest

from kvtui.cli import build_parser, main
from kvtui.commands.serve import SERVE_DESTS, child_command, watch_argv


def _serve_args(argv):
    return build_parser().parse_args(["serve", *argv])


def test_watch_gets_every_option_given_but_the_servers_own():
    argv = ["--trace", "synthetic", "--speed", "4", "--prefix-scale", "2", "--strict", "--concurrency", "2",
            "--port", "9000", "--host", "0.0.0.0", "--max-sessions", "3", "--layout", "seed", "--page-tokens", "16",
            "--store-size", "512MiB", "--segment-on", "decode"]
    args = _serve_args(argv)
    out = watch_argv(args.serve_parser, args)
    assert out == ["--trace", "synthetic", "--speed", "4", "--prefix-scale", "2", "--strict", "--concurrency", "2",
                   "--layout", "seed", "--page-tokens", "16", "--store-size", "512MiB", "--segment-on", "decode"]
    # kvtui watch parses them back to the same values
    watch = build_parser().parse_args(["watch", *out])
    for action in args.serve_parser._actions:
        if action.option_strings and action.dest not in (*SERVE_DESTS, "help", "screenshot_dir"):
            assert getattr(watch, action.dest) == getattr(args, action.dest), action.dest
    assert watch_argv(_serve_args([]).serve_parser, _serve_args([])) == []  # defaults: nothing to pass on


def test_the_tab_command_launches_watch_through_this_module():
    cmd = child_command(["--trace", "my trace.jsonl"])
    assert cmd.startswith("exec ") and shlex.split(cmd[5:]) == [sys.executable, "-m", "kvtui.commands.serve",
                                                                 "--trace", "my trace.jsonl"]


@pytest.mark.parametrize("argv, message", [
    (["--port", "0"], "--port must be within 1-65535, got 0"),
    (["--max-sessions", "0"], "--max-sessions must be at least 1"),
    (["--refresh-hz", "0"], "--refresh-hz must be within"),
    (["--overlap", "120"], "--overlap must be within 0-100 %, got 120"),
    (["--prefix-scale", "2"], "--prefix-scale applies to --trace replays only"),
    (["--trace", "no-such-trace"], "--trace no-such-trace: no such trace file"),
    (["--disk-size", "-1GiB"], "--disk-size must be a positive size"),
    (["--replicate-hot"], "--replicate-hot needs two segments or more"),
    (["--disk-size", "2GiB", "--disk-path", "/no/such/folder"], "--disk-path /no/such/folder: not an existing"),
    (["--disk-size", "1GiB", "--segment-on", "prefill"], "--disk-size cannot go with --segment-on prefill"),
    (["--read-streams", "0"], "--read-streams must be at least 1"),
    (["--ha", "1"], "--ha must be within"),
])
def test_bad_options_are_refused_once_before_serving(capsys, argv, message):
    assert main(["serve", "--layout", "tiny", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kvtui: error: ") and message in err and err.count("\n") == 1


def test_a_public_host_is_warned_about_and_a_busy_port_is_one_line(capsys):
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--layout", "tiny", "--host", "0.0.0.0", "--port", str(port)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("kvtui: warning: --host 0.0.0.0: the monitor is reachable from other machines, and "
                               "textual-serve has no authentication")
    assert lines[1].startswith(f"kvtui: error: cannot listen on 0.0.0.0:{port} (") and len(lines) == 2
