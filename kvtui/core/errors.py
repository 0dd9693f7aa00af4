"""Errors that end a command with one clear line and exit code 2 (bad input, unusable environment)."""


class KvtuiError(Exception):
    """A problem the user can fix; the CLI prints ``kvtui: error: <message>`` and exits with code 2."""

    exit_code = 2
