"""``kvtui worker --role decode|prefill --join HOST:PORT --token T``: a worker on this machine for a
``kvtui run|watch --listen HOST:PORT --token T`` running on another (:mod:`kvtui.engine.remote`).

The coordinator sends everything the worker runs with (page layout, model, keys, the attached cluster's
endpoints); ``--master`` / ``--metadata`` override the cluster's addresses when this machine reaches the
same cluster by other ones. The process serves until the coordinator stops (or hangs up), then exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys

from kvtui.config.cluster import TOKEN_ENV
from kvtui.config.paths import path_arg
from kvtui.core.errors import KvtuiError


def register(subparsers) -> None:
    """Add the ``worker`` subcommand."""
    p = subparsers.add_parser(
        "worker", help="join a running kvtui run/watch --listen as a remote decode or prefill worker",
        description="Attach a decode or prefill worker on this machine to a kvtui run or watch started elsewhere with "
                    "--listen HOST:PORT --token T. Both use the same attached Mooncake cluster; the coordinator "
                    "routes requests to this worker like to its own and shows it in its Workers panel. The "
                    "worker serves until the coordinator stops.")
    p.add_argument("--role", choices=("decode", "prefill"), default="decode",
                   help="the worker's role (default decode): a decode worker reloads, a prefill worker publishes")
    p.add_argument("--join", required=True, metavar="HOST:PORT", help="the coordinator's --listen address")
    p.add_argument("--token", default=None, metavar="T",
                   help=f"the coordinator's --token (default: the {TOKEN_ENV} environment variable)")
    p.add_argument("--master", metavar="HOST:PORT|etcd://HOST:PORT",
                   help="the master's RPC address as this machine reaches it, or an HA cluster's etcd, "
                        "etcd://HOST:PORT[;HOST:PORT…] (default: the coordinator's)")
    p.add_argument("--metadata", metavar="URL", help="the metadata server's URL as this machine reaches it "
                   "(default: the coordinator's; with an etcd:// --master, the same etcd)")
    p.add_argument("--log-dir", type=path_arg, metavar="DIR",
                   help="where the worker's native (Mooncake) log goes, kept (default: a new /tmp/kvtui-logs-* "
                        "folder, removed when the worker leaves without trouble, kept and named when it fails)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Join, then serve as the worker (never returns on success); ``KvtuiError`` (one line, exit 2) when the
    address is malformed, nothing listens there, or the coordinator refuses the token or the worker."""
    from dataclasses import replace

    from kvtui.engine.remote import NotACoordinator, join
    from kvtui.engine.worker import at_leave, worker_main
    from kvtui.mooncake.client import split_hostport
    from kvtui.runtime.logs import LogFolder

    try:
        host, port = split_hostport(args.join)
    except ValueError as exc:
        raise KvtuiError(f"--join: {exc}") from None
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    if not token:
        raise KvtuiError(f"--join needs the coordinator's --token (or {TOKEN_ENV})")
    from kvtui.mooncake.net import is_etcd, parse_etcd

    metadata = args.metadata
    if is_etcd(args.master):
        try:
            parse_etcd(args.master)
        except ValueError as exc:
            raise KvtuiError(f"--master {exc}") from None
        metadata = metadata or args.master
    if bool(args.master) != bool(metadata):
        raise KvtuiError("--master and --metadata go together (--metadata may be left out with an etcd:// --master)")
    try:
        conn, welcome, chains, results = join((host, port), token, args.role)
    except ConnectionRefusedError:
        raise KvtuiError(f"--join: nothing listens at {host}:{port}") from None
    except NotACoordinator as exc:
        raise KvtuiError(f"--join {host}:{port}: {exc} (is it a kvtui run or watch with --listen?)") from None
    except PermissionError as exc:
        raise KvtuiError(f"--join {host}:{port}: {exc}") from None
    except (OSError, EOFError) as exc:
        reason = getattr(exc, "strerror", None) or exc or "connection lost"
        raise KvtuiError(f"--join {host}:{port}: {reason}") from None
    spec = welcome.spec
    if args.master:
        spec = replace(spec, endpoints={**spec.endpoints, "master": args.master, "metadata_url": metadata})
    logs = LogFolder(args.log_dir)
    at_leave(lambda code: logs.close(code != 0, f"this {spec.label} worker"))
    spec = replace(spec, log_path=str(logs.path / f"{spec.label}.log"))  # (Mooncake's native log, not the terminal)
    print(f"kvtui worker: joined {host}:{port} as {spec.label} (slot {welcome.slot}); serving until the "
          f"coordinator stops; native log {spec.log_path}" + (" (removed when it leaves without trouble)"
                                                              if logs.temporary else ""), file=sys.stderr, flush=True)
    worker_main(conn, spec, chains, results)  # (leaves the process itself, closing the log folder)
    return 0
