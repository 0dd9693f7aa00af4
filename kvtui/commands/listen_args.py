"""The coordinator flags of ``run`` and ``watch`` (``--listen``, ``--token``): remote decode and prefill workers may join
(``kvtui worker --join``, :mod:`kvtui.engine.remote`)."""

from __future__ import annotations

import argparse
import os

from kvtui.core.errors import KvtuiError
from kvtui.core.topology import REMOTE_SLOTS

TOKEN_ENV = "KVTUI_TOKEN"


def add_listen_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``--listen`` and ``--token`` to a command's parser."""
    g = p.add_argument_group("remote workers (attach mode: --master/--metadata)")
    g.add_argument("--listen", metavar="[HOST:]PORT", default=None,
                   help=f"accept up to {REMOTE_SLOTS} decode and {REMOTE_SLOTS} prefill workers from other machines (kvtui worker --join) on "
                        "this address; a bare PORT listens on loopback only (default: no listener)")
    g.add_argument("--token", default=None, metavar="T",
                   help=f"the shared secret a joining worker must present (required with --listen; default: the "
                        f"{TOKEN_ENV} environment variable); checked by HMAC challenge, a wrong one is refused "
                        "and logged")


def listen_options(args: argparse.Namespace) -> tuple[tuple[str, int], str] | None:
    """``((host, port), token)`` of the flags, None without ``--listen``; ``KvtuiError`` (one line) for a
    malformed address, a missing token, or ``--listen`` without an attached cluster."""
    text = getattr(args, "listen", None)
    if text is None:
        if getattr(args, "token", None):
            raise KvtuiError("--token is the secret of --listen: add --listen [HOST:]PORT")
        return None
    host, sep, port = str(text).rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536 or (sep and not host):
        raise KvtuiError(f"--listen must be [HOST:]PORT with a port within 1-65535, got {text!r}")
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    if not token:
        raise KvtuiError(f"--listen needs --token T (or {TOKEN_ENV}): remote workers must present it")
    if not getattr(args, "master", None):
        raise KvtuiError("--listen: remote workers join an attached cluster; add --master HOST:PORT and "
                         "--metadata URL (both sides use the same one)")
    return (host, int(port)), token


def bind_listener(args: argparse.Namespace):
    """The listener of ``--listen`` bound now (before the engine starts), None without it; ``KvtuiError``
    (one line) when the flags are bad or the address cannot be listened on."""
    opts = listen_options(args)
    if opts is None:
        return None
    from kvtui.engine.remote import open_listener

    (host, port), token = opts
    try:
        return open_listener((host, port), token)
    except OSError as exc:
        raise KvtuiError(f"--listen {host}:{port}: cannot listen there ({exc.strerror or exc})") from None
