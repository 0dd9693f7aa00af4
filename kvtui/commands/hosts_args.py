"""The emulated-host flags shared by the commands that start an engine (``--hosts``, ``--link``;
:mod:`kvtui.engine.hosts`)."""

from __future__ import annotations

import argparse

from kvtui.core.errors import KvtuiError


def add_host_arguments(g) -> None:
    """Add ``--hosts`` and ``--link`` to the argument group ``g``."""
    g.add_argument("--hosts", choices=("off", "auto"), default="off",
                   help="embedded mode: auto puts the master (with the metadata server), the store node and each "
                        "worker on an emulated host of its own: a network namespace with its own address "
                        "(10.77.0.x) on a private bridge inside kvtui's namespace, so store traffic crosses real "
                        "kernel TCP between hosts (needs root; default off)")
    g.add_argument("--link", metavar="RATE[,DELAY]", default=None,
                   help="with --hosts auto: shape every host's link in both directions with tc, rate in bit/s "
                        "with tc's units (25gbit, 1gbit, 500mbit) and an optional one-way delay (200us, 1ms; "
                        "needs the kernel's netem). Default: unshaped veth links")


def link_option(text: str):
    """``--link``'s :class:`~kvtui.engine.hosts.LinkSpec`; ``KvtuiError`` (one line) when malformed."""
    from kvtui.engine.hosts import parse_link

    try:
        return parse_link(text)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None


def host_options(args: argparse.Namespace) -> tuple[bool, object]:
    """``(hosts, link)`` of the flags: whether to run emulated hosts, and the
    :class:`~kvtui.engine.hosts.LinkSpec` or None. ``KvtuiError`` (one line) for ``--link`` without
    ``--hosts auto`` or malformed, and for ``--hosts auto`` with ``--master``/``--metadata`` (checked before
    attaching), with ``--isolate-network off`` or with an explicit listener port. (``KVTUI_ISOLATE``
    overrides ``--isolate-network auto`` only: emulated hosts always run isolated.)"""
    hosts = getattr(args, "hosts", "off") == "auto"
    link = None
    if getattr(args, "link", None) is not None:
        if not hosts:
            raise KvtuiError("--link shapes the links of emulated hosts: add --hosts auto")
        link = link_option(args.link)
    if not hosts:
        return hosts, link
    if getattr(args, "master", None) or getattr(args, "metadata", None):
        raise KvtuiError("--hosts auto runs the embedded cluster on emulated hosts; it cannot attach (--master)")
    if args.isolate_network == "off":
        raise KvtuiError("--hosts auto lives inside kvtui's private network namespace: drop --isolate-network off")
    for flag in ("master_port", "metrics_port", "metadata_port"):
        if getattr(args, flag, 0):
            raise KvtuiError(f"--{flag.replace('_', '-')}: with --hosts auto the cluster listens on its emulated "
                             "host's address, which this host cannot reach; drop the port")
    return hosts, link
