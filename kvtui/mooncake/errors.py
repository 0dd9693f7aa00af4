"""Errors of the Mooncake backend. They carry the values a caller needs to phrase them; the words of kvtui's
command line (flag names) are added by the config and command layers, never here."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message is one line plus an optional log tail.
    ``retry``: False when starting again cannot help (the kernel or permissions refuse, a setting conflicts)."""

    retry = True


class BadAddress(ClusterError):
    """An address of an attached cluster is malformed or missing: ``what`` (``master``, ``metadata``,
    ``metrics_url``, ``protocol``), the ``value`` given (None: missing) and ``why`` in a few words."""

    retry = False

    def __init__(self, what: str, value: str | None, why: str):
        self.what, self.value, self.why = what, value, why
        super().__init__(f"{what}: {why}")


class Unreachable(ClusterError):
    """Nothing answers at ``address`` (``what``: ``master``, ``metadata``, ``etcd``, ``leader``); ``why``:
    what was tried."""

    def __init__(self, what: str, address: str, why: str):
        self.what, self.address, self.why = what, address, why
        super().__init__(f"no {what} answers at {address} ({why})")


class Conflict(ClusterError):
    """Two settings of the embedded cluster cannot go together: ``setting`` conflicts with ``other``
    (``ClusterOptions`` field names), ``why`` in a few words."""

    retry = False

    def __init__(self, setting: str, other: str, why: str):
        self.setting, self.other, self.why = setting, other, why
        super().__init__(f"{setting} conflicts with {other}: {why}")


class MissingTool(ClusterError):
    """A program the cluster needs is not installed: ``tool`` (``etcd``, ``mooncake_master``…), ``remedy``."""

    retry = False

    def __init__(self, tool: str, remedy: str):
        self.tool, self.remedy = tool, remedy
        super().__init__(f"{tool} is not installed here ({remedy})")
