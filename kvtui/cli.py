"""The ``kvtui`` command line: subcommands are registered from :mod:`kvtui.commands`.

Every :class:`~kvtui.core.errors.KvtuiError` (and ``KeyboardInterrupt``) becomes one line on stderr and a
non-zero exit code; no traceback reaches the user for bad input. Ctrl-C (SIGINT) exits 130, SIGTERM 143 and
SIGHUP 129 (128 + the signal, as a shell reports a process the signal ended), after the same teardown:
SIGTERM and SIGHUP (unless it was ignored, as under ``nohup``) raise :class:`Terminated`, a
``KeyboardInterrupt``, so every ``finally`` and ``except KeyboardInterrupt`` (an interrupted ``kvtui run``
still writes its summary) handles them alike.
"""

from __future__ import annotations

import argparse
import importlib
import re
import signal
import sys
import threading
import time
from typing import Any, NoReturn

from kvtui import __version__
from kvtui.commands import COMMANDS
from kvtui.config.paths import OUTPUT_ARGS, check_distinct_paths, output_flag
from kvtui.core.errors import KvtuiError, OutputError


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread like Ctrl-C's ``KeyboardInterrupt``; ``signum``: the signal."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = int(signum)


def on_sigterm(signum: int, _frame) -> None:
    """The SIGTERM (and SIGHUP) handler :func:`main` installs: raise :class:`Terminated` in the main thread."""
    raise Terminated(signum)


NEGATIVE_VALUE = re.compile(r"^-\.?\d")
"""A value that starts with a minus sign and a digit (``-1M``, ``-3``, ``-.5``, ``-50%``): no kvtui flag looks like
that, so it is a flag's value, never a flag."""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (``kvtui: error: ...``, exit 2), not the usage block,
    and which takes flags only whole (no abbreviations: a prefix of one flag may be another flag of the command).
    A value such as ``-1M`` is a value (:data:`NEGATIVE_VALUE`), so ``--capacity -1M`` is refused by the flag's own
    check, which says what it needs, not by argparse as a flag with no argument.
    ``commands`` / ``summaries``: each subcommand's parser and one line (filled by :func:`build_parser`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # `--screenshot` must not silently mean `--screenshot-dir`
        super().__init__(*args, **kwargs)
        # argparse takes only plain numbers (-3, -1.5) as values and any other word after a minus as a flag; its
        # parser reads this attribute to tell them apart (tests/unit/test_range_flags.py checks that it still does)
        self._negative_number_matcher = NEGATIVE_VALUE
        self.commands: dict[str, argparse.ArgumentParser] = {}
        self.summaries: dict[str, str] = {}  # each subcommand's one-line help

    def error(self, message: str) -> NoReturn:  # noqa: D102 - argparse API
        where = f"{self.prog.split(' ', 1)[1]}: " if " " in self.prog else ""
        self.exit(2, f"kvtui: error: {where}{message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):  # noqa: D102 - argparse API
        # as argparse's, but an unknown flag after a command is refused by that command's parser, so the line
        # points at its help (`kvtui bench --help`), not the top level's
        ns, extras = self.parse_known_args(args, namespace)
        chosen = self.commands.get(ns.command) if "command" in ns else None
        if extras:
            (chosen or self).error(f"unrecognized arguments: {' '.join(extras)}")
        tokens = [t.split("=", 1)[0] for t in (sys.argv[1:] if args is None else args) if t.startswith("--")]
        for flag in dict.fromkeys(output_flag(name) for name in OUTPUT_ARGS if name in ns):  # argparse keeps the last
            if tokens.count(flag) > 1:
                (chosen or self).error(f"{flag} given {tokens.count(flag)} times: an output goes to one file, and "
                                       "all but the last would be left unwritten; give it once")
        return ns


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every available subcommand registered."""
    parser = OneLineParser(
        prog="kvtui",
        description=(
            "Drive shared-prefix LLM workloads through a real Mooncake Store with a prefill and a decode "
            "worker, and show how KV pages are published and reused (prefix hits, TTFT savings, store health)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"kvtui {__version__}")
    sub = _Subcommands(parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser))
    for name in COMMANDS:
        importlib.import_module(f"kvtui.commands.{name}").register(sub)
    parser.commands, parser.summaries = sub.parsers, sub.summaries
    return parser


class _Subcommands:
    """What a command's ``register`` adds its parser to: argparse's subparsers, keeping each command's parser
    and one-line summary (its ``help``) by name, in the order they were added."""

    def __init__(self, subparsers: Any) -> None:
        self._subparsers = subparsers
        self.parsers: dict[str, argparse.ArgumentParser] = {}
        self.summaries: dict[str, str] = {}

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._subparsers.add_parser(name, **kwargs)
        self.parsers[name], self.summaries[name] = parser, str(kwargs.get("help", ""))
        return parser


def forget_caught_interrupt() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" flag after kvtui caught one. A Ctrl-C that leaves a
    string ``exec`` (``dataclasses`` builds methods with one during a lazy import) sets it even when caught,
    and under ``python -m`` the interpreter then ends by SIGINT (exit -2) instead of with 130. Every string
    ``exec`` resets the flag when it starts (CPython ``Python/pythonrun.c``, ``run_eval_code_obj``;
    ``Modules/main.c``, ``Py_RunMain``)."""
    exec("pass", {})


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code. Each command is called as
    ``func(args, started_at)``, ``started_at`` the moment ``main`` was called (``time.monotonic()`` seconds:
    ``kvtui run --duration`` bounds the whole command)."""
    started_at = time.monotonic()
    if threading.current_thread() is threading.main_thread():
        # SIGTERM tears down like Ctrl-C: context managers and finally blocks stop workers and the cluster.
        signal.signal(signal.SIGTERM, on_sigterm)
        if signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:  # (left ignored under nohup)
            signal.signal(signal.SIGHUP, on_sigterm)  # a closed terminal: the same teardown, exit 129
    try:
        parser = build_parser()  # (imports every command: a Ctrl-C or SIGTERM here is as any other)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed as one line
        return int(exc.code or 0)
    except Terminated as exc:
        forget_caught_interrupt()
        print(f"kvtui: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        forget_caught_interrupt()
        print("kvtui: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    if "func" not in args:
        parser.print_help()
        return 2
    try:
        check_distinct_paths(args)
        return int(args.func(args, started_at) or 0)
    except KvtuiError as exc:
        print(f"kvtui: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except Terminated as exc:
        forget_caught_interrupt()
        print(f"kvtui: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        forget_caught_interrupt()
        print("kvtui: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:  # e.g. `kvtui keys ... | head`
        return 0
    except OSError as exc:  # an output that failed late (disk full, folder gone): one line, never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"kvtui: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return OutputError.exit_code


if __name__ == "__main__":
    sys.exit(main())
