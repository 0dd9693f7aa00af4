"""Errors that end a command with one clear line: exit code 2 (bad input, unusable environment) or 3 (an
output that could not be written)."""


class KvtuiError(Exception):
    """A problem the user can fix; the CLI prints ``kvtui: error: <message>`` and exits with code 2."""

    exit_code = 2


class OutputError(KvtuiError):
    """An output file could not be written once the work was done (disk full, folder removed): the CLI prints
    one line naming the file and exits with code 3; what the command printed on screen stands."""

    exit_code = 3
