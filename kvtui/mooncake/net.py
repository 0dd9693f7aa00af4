"""Network helpers of the Mooncake backend, importing nothing of kvtui: TCP probes and ports, ``HOST:PORT``
and ``etcd://`` addresses, plain HTTP GETs of a master's admin endpoints, and its Prometheus ``/metrics`` text
read with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

import math
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

ETCD_SCHEME = "etcd://"
_HOST = re.compile(r"[A-Za-z0-9._:-]+")  # a name, an IPv4 or an IPv6 address (its brackets removed)


def split_hostport(text: str) -> tuple[str, int]:
    """``'127.0.0.1:50051'`` → ``('127.0.0.1', 50051)``; ``ValueError`` when malformed."""
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not (0 < int(port) < 65536):
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def is_etcd(address: str | None) -> bool:
    """True for the master address of an HA cluster (``etcd://…``): its clients find the leader through etcd."""
    return bool(address) and str(address).startswith(ETCD_SCHEME)


def parse_etcd(text: str) -> tuple[tuple[str, int], ...]:
    """``etcd://HOST:PORT[;HOST:PORT…]`` → its endpoints; ``ValueError`` (one line, which the caller prefixes
    with what it was) when it is not one: another scheme, no endpoint, an empty one, a bad port."""
    if not is_etcd(text):
        raise ValueError(f"must be etcd://HOST:PORT[;HOST:PORT…], got {text!r}")
    rest = str(text)[len(ETCD_SCHEME):].rstrip("/")
    if not rest:
        raise ValueError(f"{text!r} names no etcd endpoint; use etcd://HOST:PORT[;HOST:PORT…]")
    out = []
    for part in rest.split(";"):
        try:
            host, port = split_hostport(part.strip())
            if not _HOST.fullmatch(host):
                raise ValueError(host)
            out.append((host, port))
        except ValueError:
            raise ValueError(f"{text!r}: {part.strip()!r} is not HOST:PORT with a port within 1-65535 "
                             "(endpoints are separated by ';')") from None
    return tuple(out)


def etcd_url(endpoints: Sequence[tuple[str, int]]) -> str:
    """The ``etcd://`` address of ``endpoints``."""
    return ETCD_SCHEME + ";".join(f"{h}:{p}" for h, p in endpoints)


def probe_targets(master: str) -> tuple[tuple[str, int], ...]:
    """Where to check that ``master`` answers: its RPC ``HOST:PORT``, or each endpoint of an ``etcd://``
    address; ``ValueError`` (one line) when malformed."""
    return parse_etcd(master) if is_etcd(master) else (split_hostport(master),)


def probe_tcp(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True if a TCP connection to ``host:port`` succeeds within ``timeout_s`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if ``host:port`` can be bound now."""
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def route_address(peer_host: str) -> str:
    """The address of this host's interface that reaches ``peer_host`` (a UDP "connect" sends nothing):
    ``127.0.0.1`` for a loopback peer, or when it cannot be told."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((peer_host, 9))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def http_get(url: str, timeout_s: float = 1.0) -> tuple[int, str]:
    """GET ``url``: ``(status, body)``; ``(0, reason)`` when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        return 0, str(exc)


Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Metrics:
    """One Prometheus text exposition (a master's ``/metrics``), parsed by ``prometheus_client``: every
    sample by name and sorted label pairs. A sample's own timestamp is never taken for its value."""

    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)

    def __contains__(self, name: str) -> bool:
        return name in self.samples

    def value(self, name: str, **labels: str) -> float | None:
        """The sample ``name`` with exactly ``labels`` (none: the unlabelled one); None when absent."""
        return self.samples.get(name, {}).get(tuple(sorted(labels.items())))

    def total(self, name: str) -> float | None:
        """The sum of every sample called ``name`` whatever its labels; None when there is none."""
        found = self.samples.get(name)
        return math.fsum(found.values()) if found else None

    def unlabelled(self) -> dict[str, float]:
        """``{name: value}`` of every sample without labels."""
        return {name: v[()] for name, v in self.samples.items() if () in v}

    def by_label(self, name: str, label: str) -> dict[str, float]:
        """``{value of label: sample}`` of the samples called ``name`` that carry ``label``."""
        return {dict(k)[label]: v for k, v in self.samples.get(name, {}).items() if label in dict(k)}


def parse_metrics(text: str) -> Metrics:
    """``/metrics`` text → :class:`Metrics`, every sample under the name the exposition gave it. (The parser
    renames a counter's sample ``x`` to ``x_total``, as OpenMetrics would; Mooncake declares counters such as
    ``master_evicted_key_count`` without the suffix, so their names are restored.) A line the parser refuses
    (Mooncake's text is not always strict) is skipped alone, not the whole scrape. (The parser is imported with
    the module: imported here, on a sampling thread that holds a lock, an import lock left held by a Ctrl-C on
    another thread hung the session's stop.)"""
    samples: dict[str, dict[Labels, float]] = {}
    bare_counters = {parts[2] for line in text.splitlines() if line.startswith("# TYPE ")
                     and len(parts := line.split()) >= 4 and parts[3] == "counter" and not parts[2].endswith("_total")}

    def take(chunk: str) -> None:
        for family in text_string_to_metric_families(chunk):
            for s in family.samples:
                name = s.name
                if family.type == "counter" and name.endswith("_total") and name[:-6] in bare_counters:
                    name = name[:-6]
                samples.setdefault(name, {})[tuple(sorted(s.labels.items()))] = float(s.value)

    try:
        take(text)
    except ValueError:
        for line in text.splitlines():
            if line and not line.startswith("#"):
                try:
                    take(line + "\n")
                except ValueError:
                    continue
    return Metrics(samples)
