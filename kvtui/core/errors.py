"""Errors that end a command with one clear line: exit code 2 (bad input, unusable environment) or 3 (an
output that could not be written)."""


class KvtuiError(Exception):
    """A problem the user can fix; the CLI prints ``kvtui: error: <message>`` and exits with code 2."""

    exit_code = 2


class OutputError(KvtuiError):
    """An output file could not be written once the work was done (disk full, folder removed): the CLI prints
    one line naming the file and exits with code 3; what the command printed on screen stands."""

    exit_code = 3


EXIT_CODES: tuple[tuple[str, str], ...] = (
    ("0", "the command did its work: a run reached its bounds or its trace's end, the monitor was quit with `q`"),
    ("1", "a loaded page failed verification (`run`, `bench`, `sweep`, `soak`; `--verify`); an HA failover lost "
          "acknowledged pages (`run`, `soak`: stderr says how many, where and by which code), or a soak's "
          "store-kill or disk-full did (beyond those only a killed node's DRAM held and those the disk tier "
          "evicted); a soak that stopped early (a worker that could not be replaced)"),
    ("2", "bad input, in one line naming the flag: a value out of range, an output naming an input, another "
          "output's file, a recorded session or a device (`--json -` is standard output, the only output that "
          "takes `-`); also a process that died while nothing would restart it (a worker of `run` or `watch`, a "
          "process of `run`'s embedded cluster), in one line naming it and its exit code, after the summary of "
          "what finished"),
    ("3", "an output that could not be written once the work was done (disk full, its folder removed), an "
          "export or a screenshot included: one line naming the file; no temporary file is left, and a file it "
          "would have replaced is as it was. Also a `--record` the disk cut short: the run goes on to its "
          "summary, one line says after how many frames the recording stopped, and those frames stay readable"),
    ("130", "Ctrl-C (SIGINT), in the monitor and during start-up too, after the same teardown as `q`"),
    ("143", "SIGTERM, with the same teardown as Ctrl-C and one line on stderr (the monitor restores the "
            "terminal first)"),
    ("129", "SIGHUP (a closed terminal), as SIGTERM; a SIGHUP that was ignored, as under `nohup`, stays ignored"),
)
"""Every exit code of ``kvtui``, with when it is returned (the docs' exit-code reference is this table)."""


def exit_codes_table() -> str:
    """The Markdown table of :data:`EXIT_CODES`."""
    return "\n".join(["| exit code | when |", "|---|---|"] + [f"| {c} | {w} |" for c, w in EXIT_CODES])


def bad_value(flag: str, must: str, got: object) -> KvtuiError:
    """The error of a flag's value out of its range, in the shape every such error has: ``FLAG must be
    CONDITION, got VALUE``, e.g. ``--requests must be at least 1, got -3`` (``must``: the condition with its
    unit; ``got``: the value given, a number as the user reads it (``0``, ``2.5``), text quoted)."""
    if isinstance(got, float) and got.is_integer() and abs(got) < 1e15:
        shown = str(int(got))
    elif isinstance(got, float):
        shown = f"{got:g}"
    elif isinstance(got, str):
        shown = repr(got)
    else:
        shown = str(got)
    return KvtuiError(f"{flag} must be {must}, got {shown}")
