"""Errors that end a command with one clear line: exit code 2 (bad input, unusable environment) or 3 (an
output that could not be written)."""


class KvtuiError(Exception):
    """A problem the user can fix; the CLI prints ``kvtui: error: <message>`` and exits with code 2."""

    exit_code = 2


class OutputError(KvtuiError):
    """An output file could not be written once the work was done (disk full, folder removed): the CLI prints
    one line naming the file and exits with code 3; what the command printed on screen stands."""

    exit_code = 3


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
