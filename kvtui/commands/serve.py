"""``kvtui serve``: the live monitor in a browser, with ``textual-serve``.

textual-serve (github.com/Textualize/textual-serve) is a small aiohttp server: its page runs xterm.js and,
for each browser connection to its ``/ws`` websocket, it starts one process of a command with Textual's web
driver (``TEXTUAL_DRIVER=textual.drivers.web_driver:WebDriver``) and relays that process's stdin/stdout
packets to the browser. Here the command is ``kvtui watch`` with the options given to ``serve``, so **each
browser tab gets its own monitor, workers and (embedded) store**, torn down when the tab closes.

Processes are cleaned up three ways: a closed tab sends the app textual-serve's ``quit`` and, if it has not
ended 5 s later, SIGTERM (``kvtui watch`` tears down as on Ctrl-C), then SIGKILL; stopping ``serve``
(Ctrl-C, SIGTERM) does that for every tab at once; and each ``kvtui watch`` is started through this module
(``python -m kvtui.commands.serve …``), which asks the kernel to send it SIGTERM when ``serve`` dies
(``PR_SET_PDEATHSIG``) before it becomes ``kvtui watch``, so even a SIGKILLed ``serve`` leaves nothing.

textual-serve has no authentication: the server binds 127.0.0.1 unless ``--host`` says otherwise, and then
says once that anyone who can reach the port gets the monitor and its controls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from kvtui.config.cluster import add_cluster_arguments, store_size
from kvtui.config.estimate import add_estimate_arguments
from kvtui.config.layout import add_page_arguments
from kvtui.config.paths import path_arg
from kvtui.config.plan import plan_from_args
from kvtui.config.screen import check_refresh_hz
from kvtui.config.workload import add_workload_arguments
from kvtui.core.defaults import DEFAULT_HZ, MAX_HZ, WATCH_LAYOUT
from kvtui.core.errors import KvtuiError, bad_value

SERVE_DESTS = ("host", "port", "public_url", "max_sessions")
"""The options of ``serve`` itself; every other option is passed on to each ``kvtui watch``."""
QUIT_WAIT_S = 5.0  # after textual-serve's quit, before SIGTERM
TERM_WAIT_S = 5.0  # after SIGTERM, before SIGKILL


def register(subparsers) -> None:
    """Add the ``serve`` subcommand."""
    p = subparsers.add_parser(
        "serve", help="serve the live monitor to a browser (textual-serve; one monitor and store per tab)",
        description="Serve `kvtui watch` to web browsers with textual-serve: open the printed address and the page "
                    "runs the monitor; each browser tab starts its own `kvtui watch` with the options given here "
                    "(workers, workload and, unless --master/--metadata attach to a cluster, its own embedded "
                    "store), stopped when the tab closes. textual-serve has no authentication: the server listens "
                    "on 127.0.0.1 only unless --host is given.")
    add_workload_arguments(p)
    g = p.add_argument_group("monitor (as kvtui watch)")
    g.add_argument("--concurrency", type=int, default=1, metavar="N", help="requests in flight (default 1)")
    g.add_argument("--refresh-hz", type=float, default=DEFAULT_HZ, metavar="HZ",
                   help=f"screen updates per second, ≤ {MAX_HZ:g} (default {DEFAULT_HZ:g}); each is sent to the "
                        "browser")
    g.add_argument("--screenshot-dir", type=path_arg, default=None, metavar="DIR",
                   help="where the screenshot key S saves SVGs, on the server (default: the current folder)")
    g.add_argument("--observe", action="store_true", help="each tab watches an existing cluster only (needs "
                   "--metrics-url): its master's metrics over time, no workload, no workers (as kvtui watch --observe)")
    s = p.add_argument_group("web server")
    s.add_argument("--host", default="127.0.0.1", metavar="HOST",
                   help="address to listen on (default 127.0.0.1: this machine only). Any other value is reachable "
                        "by others, and textual-serve has no authentication")
    s.add_argument("--port", type=int, default=8000, metavar="PORT", help="TCP port to listen on (default 8000)")
    s.add_argument("--public-url", metavar="URL", help="the address browsers reach the server at, used in the page "
                   "for its websocket (default http://HOST:PORT)")
    s.add_argument("--max-sessions", type=int, default=2, metavar="N",
                   help="browser tabs served at once (default 2): each runs its own workers and embedded store "
                        "(the store alone 1 GiB by default); a tab beyond that is refused with a message")
    add_page_arguments(p, WATCH_LAYOUT)  # (each tab is a kvtui watch: the same default layout)
    add_estimate_arguments(p)
    add_cluster_arguments(p)
    p.set_defaults(func=run, prompt_tokens=None, serve_parser=p)


def watch_argv(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The ``kvtui watch`` options equal to ``args`` (parsed by ``parser``, serve's own): every option whose
    value is not its default, in the parser's order, without :data:`SERVE_DESTS`."""
    out: list[str] = []
    for action in parser._actions:  # argparse keeps a parser's actions here; its public API has no iterator
        if not action.option_strings or action.dest in SERVE_DESTS or action.dest == "help":
            continue
        value = vars(args).get(action.dest)
        if value is None or value == action.default:
            continue
        flag = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
        if action.nargs == 0:  # store_true and the like
            out.append(flag)
        elif isinstance(value, list):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def child_command(argv: list[str]) -> str:
    """The shell command textual-serve runs per browser tab: this module as a launcher of ``kvtui watch
    ARGV`` (``exec``: no shell left in between)."""
    import shlex

    return "exec " + shlex.join([sys.executable, "-m", "kvtui.commands.serve", *argv])


def _launch_watch(argv: list[str]) -> None:
    """In the process textual-serve started: get SIGTERM when ``serve`` dies, then become ``kvtui watch``."""
    from kvtui.runtime.procs import parent_death_signal

    parent_death_signal(signal.SIGTERM)  # survives the exec; kvtui watch tears down on SIGTERM
    if os.getppid() == 1:  # serve died before the line above: nobody will read this monitor
        sys.exit(143)
    os.execv(sys.executable, [sys.executable, "-m", "kvtui.cli", "watch", *argv])


def _check(args: argparse.Namespace) -> None:
    """Refuse now, once, what every ``kvtui watch`` would refuse (one line, exit 2); starts nothing."""
    if not 1 <= args.port <= 65535:
        raise KvtuiError(f"--port must be within 1-65535, got {args.port}")
    if args.max_sessions < 1:
        raise bad_value("--max-sessions", "at least 1", args.max_sessions)
    if args.concurrency < 1:
        raise bad_value("--concurrency", "at least 1", args.concurrency)
    check_refresh_hz(args.refresh_hz)
    if args.store_size is not None:
        store_size(args.store_size)
    shots = args.screenshot_dir
    if shots is not None and os.path.exists(shots) and not os.path.isdir(shots):
        raise KvtuiError(f"--screenshot-dir: {args.screenshot_dir} exists and is not a folder")
    if args.observe:  # the flags it refuses, --metrics-url answering as a Mooncake master
        from kvtui.commands.observe_mode import check_observe_args

        check_observe_args(args)
        return
    # the layout, workload (a trace file and its synthesis), TTFT estimate and cluster flags (store size, tiers,
    # workers, hosts, HA) as each tab's watch makes its plan; an attached cluster must answer
    plan_from_args(args, follow_layout=True, knobs=True)


def _server_class():
    """A textual-serve ``Server`` that tracks its app processes, limits them to ``max_sessions`` and ends
    them all (quit, SIGTERM, SIGKILL) when a tab closes or the server stops."""
    from aiohttp import WSCloseCode, web
    from textual_serve.app_service import AppService
    from textual_serve.server import Server, to_int

    class KvtuiServer(Server):
        def __init__(self, command: str, host: str, port: int, public_url: str | None, max_sessions: int):
            super().__init__(command, host=host, port=port, title="kvtui watch", public_url=public_url)
            self.max_sessions = max_sessions
            self.services: set = set()
            self.sockets: set = set()
            self.signum = 0

        def initialize_logging(self) -> None:  # textual-serve's own: warnings and errors only, on stderr
            import logging

            logging.basicConfig(level="WARNING", format="kvtui serve: %(message)s", stream=sys.stderr)

        async def on_startup(self, app) -> None:  # textual-serve prints its logo here; the line is kvtui's own
            pass

        async def on_shutdown(self, app) -> None:
            for ws in list(self.sockets):
                await ws.close(code=WSCloseCode.GOING_AWAY, message=b"kvtui serve stopped")
            await asyncio.gather(*(stop_service(s) for s in list(self.services)), return_exceptions=True)

        async def handle_websocket(self, request):
            websocket = web.WebSocketResponse(heartbeat=15)
            await websocket.prepare(request)
            if len(self.services) >= self.max_sessions:
                await websocket.send_bytes(f"\r\n  kvtui serve: {len(self.services)} browser sessions already run "
                                           f"(--max-sessions {self.max_sessions}); close one and reload.\r\n".encode())
                await websocket.close()
                return websocket
            service = AppService(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                 close=websocket.close, download_manager=self.download_manager, debug=self.debug)
            self.services.add(service)
            self.sockets.add(websocket)
            try:
                await service.start(to_int(request.query.get("width", "80"), 80),
                                    to_int(request.query.get("height", "24"), 24))
                await self._process_messages(websocket, service)
            except asyncio.CancelledError:
                pass
            except Exception as error:  # a broken socket: the process is stopped below all the same
                import logging

                logging.getLogger("textual-serve").warning("browser session ended: %s", error)
            finally:
                self.sockets.discard(websocket)
                await stop_service(service)
                self.services.discard(service)
                if not websocket.closed:
                    await websocket.close()
            return websocket

        @property
        def exit_code(self) -> int:
            """128 + the signal that stopped :meth:`serve`, 0 before one did."""
            return 128 + self.signum if self.signum else 0

        def serve(self, debug: bool = False) -> None:
            """Serve until Ctrl-C, SIGTERM or SIGHUP; returns once every tab's process has ended (the command's
            exit status is then :attr:`exit_code`). ``OSError`` when the address cannot be bound (nothing was
            said to be served then)."""
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            stop = asyncio.Event()
            signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

            def on_signal(signum: int) -> None:
                self.signum = signum
                stop.set()

            async def main() -> None:
                runner = web.AppRunner(await self._make_app(), handle_signals=False,
                                       shutdown_timeout=QUIT_WAIT_S + TERM_WAIT_S + 2)
                await runner.setup()
                try:
                    await web.TCPSite(runner, self.host, self.port).start()
                    print(f"kvtui: serving the monitor on {self.public_url} (each browser tab starts its own kvtui "
                          "watch; Ctrl-C stops them all)", file=sys.stderr, flush=True)
                    await stop.wait()
                finally:
                    await runner.cleanup()  # on_shutdown: every tab's process ends

            for sig in signals:
                loop.add_signal_handler(sig, on_signal, sig)
            try:
                loop.run_until_complete(main())
            finally:
                for sig in signals:
                    loop.remove_signal_handler(sig)
                loop.close()

    return KvtuiServer


async def stop_service(service) -> None:
    """End one tab's ``kvtui watch``: textual-serve's quit (the app exits as on ``q``), then SIGTERM after
    :data:`QUIT_WAIT_S` and SIGKILL after :data:`TERM_WAIT_S` more; returns once the process has ended."""
    proc = getattr(service, "_process", None)  # textual-serve's AppService keeps its asyncio Process here
    try:
        await asyncio.wait_for(service.stop(), QUIT_WAIT_S)
    except (asyncio.TimeoutError, Exception):
        pass
    if proc is None:
        return
    if proc.returncode is None:
        try:
            await asyncio.wait_for(proc.wait(), 0.5)
        except asyncio.TimeoutError:
            pass
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), TERM_WAIT_S)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Check the options, then serve until Ctrl-C / SIGTERM (exit 130 / 143 once every tab's process ended)."""
    argv = watch_argv(args.serve_parser, args)
    _check(args)
    try:
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise KvtuiError("kvtui serve needs the textual-serve package (pip install textual-serve)") from None
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"kvtui: warning: --host {args.host}: the monitor is reachable from other machines, and textual-serve "
              "has no authentication: anyone who can reach the port can watch and change the workload",
              file=sys.stderr, flush=True)
    host = f"[{args.host}]" if ":" in args.host else args.host
    public_url = args.public_url or f"http://{host}:{args.port}"
    server = _server_class()(child_command(argv), args.host, args.port, public_url, args.max_sessions)
    try:
        server.serve()
    except OSError as exc:
        raise KvtuiError(f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc})") from None
    return server.exit_code


if __name__ == "__main__":  # the launcher of one browser tab's kvtui watch (child_command)
    _launch_watch(sys.argv[1:])
