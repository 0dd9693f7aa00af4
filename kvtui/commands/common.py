"""Options shared by the commands that move pages (``run``, ``watch``, ``bench``): cluster, layout, workload,
and the screen flags of the commands that show the monitor (``watch``, ``replay``).

Every parser here only collects strings and numbers; :func:`engine_options` and :func:`make_workload` turn
them into objects and raise :class:`~kvtui.core.errors.KvtuiError` (one line, exit 2) on bad values.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from kvtui.commands.hosts_args import add_host_arguments, host_options
from kvtui.commands.listen_args import listen_options
from kvtui.commands.topology_args import add_topology_arguments, check_segment_share, topology_options, worker_client
from kvtui.commands.checks import store_size
from kvtui.commands.output import check_writable, path_arg
from kvtui.commands.trace_args import (add_synthesis_arguments, parse_speed, synthesis_description, synthesize_rows,
                                       trace_synthesis)
from kvtui.core.defaults import (DEFAULT_MODEL, DEFAULT_PROMPT_PAGES, DEFAULT_STORE_BYTES, DEFAULT_STORE_SIZE_TEXT,
                                  MAX_HZ, MIN_SEGMENT_BYTES)
from kvtui.core.errors import KvtuiError
from kvtui.core.units import MAX_SIZE, duration_arg, parse_size
from kvtui.core.topology import REMOTE_SLOTS
from kvtui.core.layout import FIELDS, PRESETS, PageLayout


def add_layout_arguments(parser: argparse.ArgumentParser, default_preset: str = "seed") -> None:
    """Add ``--layout PRESET`` or ``--model-config NAME|PATH``, ``--kv-dtype``, the per-field overrides and
    ``--model`` to a command's parser."""
    from kvtui.core.layout import MODEL_PAGE_TOKENS, MODEL_PRESETS
    from kvtui.core.models import KV_DTYPES

    g = parser.add_argument_group("KV page layout")
    which = g.add_mutually_exclusive_group()
    which.add_argument("--layout", choices=list(PRESETS), default=default_preset,
                       help=f"layout preset (default {default_preset}): seed = 28 layers × 4 KV heads × 128 head-dim, "
                            "256 tokens/page, fp16 (14 MiB/page, Qwen2.5-7B's shape); tiny = 4 × 2 × 16, 8 tokens/page, "
                            "fp16 (4 KiB/page); or a model preset's layout at 256 tokens/page (`kvtui layout NAME`)")
    which.add_argument("--model-config", metavar="NAME|PATH",
                       help=f"the KV layout of a model: a preset ({', '.join(MODEL_PRESETS)}) or a Hugging Face "
                            f"config.json; {MODEL_PAGE_TOKENS} tokens/page unless --page-tokens, and its name is hashed "
                            "into the page keys unless --model")
    g.add_argument("--kv-dtype", choices=list(KV_DTYPES), metavar="|".join(KV_DTYPES),
                   help="KV cache element type (fp8 = 1 byte, fp16/bf16 = 2, fp32 = 4); default: the config's "
                        "torch_dtype, or the preset's")
    g.add_argument("--layers", type=int, metavar="N", help="override: transformer layers per page (default: the --layout or --model-config one's)")
    g.add_argument("--kv-heads", type=int, metavar="N", help="override: KV heads per layer (default: the layout's)")
    g.add_argument("--head-dim", type=int, metavar="N", help="override: elements per head (default: the layout's)")
    g.add_argument("--page-tokens", type=int, metavar="TOKENS", help="override: tokens per KV page (default: the layout's)")
    g.add_argument("--elem-bytes", type=int, metavar="BYTES", help="override: bytes per element (2 = fp16; default: the layout's)")
    g.add_argument("--model", default=None, help=f"model name hashed into every page key (default: the "
                   f"--model-config name, else {DEFAULT_MODEL})")


def read_model_config(text: str, flag: str = "--model-config"):
    """The :class:`~kvtui.core.models.ModelSpec` of ``text``: a model preset name (or alias, e.g. ``seed``), else
    a config.json path, or a model folder holding one (as a Hugging Face download or snapshot). ``KvtuiError`` (one line, after ``flag: `` when ``flag``, naming the file, and the field
    when one is missing or bad) if it is neither, cannot be read, is not JSON or does not describe a model."""
    import json

    from kvtui.core.layout import MODEL_PRESETS, resolve_model
    from kvtui.core.models import ModelConfigError, name_from_path, parse_model_config

    at = f"{flag}: " if flag else ""
    preset = resolve_model(text)
    if preset is not None:
        return preset
    path = Path(text)
    if path.is_dir() and (path / "config.json").is_file():  # a Hugging Face model folder: its config.json
        path = path / "config.json"
        text = str(path)
    if not path.is_file():
        if path.is_dir():
            raise KvtuiError(f"{at}{text} is a folder without a config.json; give a model's config.json")
        hint = f" (it is a layout preset: --layout {text})" if text in PRESETS and flag else ""
        raise KvtuiError(f"{at}{text} is neither a model preset ({', '.join(MODEL_PRESETS)}) nor a file{hint}")
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KvtuiError(f"{at}cannot read {text} ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise KvtuiError(f"{at}{text} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    try:
        return parse_model_config(data, name_from_path(os.path.abspath(path)), text)  # (`layout .`: the folder's name;
        # abspath, not resolve: a Hugging Face snapshot's config.json is a link into blobs/)
    except ModelConfigError as exc:
        raise KvtuiError(f"{at}{exc}") from None


def layout_from_args(args: argparse.Namespace) -> PageLayout:
    """Build the layout from ``--layout`` or ``--model-config`` (and ``--kv-dtype``) plus overrides; ``ValueError``
    on a non-positive field, ``KvtuiError`` on a config that cannot be used. Also sets ``args.model_spec`` (the
    :class:`~kvtui.core.models.ModelSpec` of ``--model-config``, else None) and fills ``args.model`` when
    ``--model`` was not given: the model's name, else ``DEFAULT_MODEL``."""
    from kvtui.core.layout import MODEL_PAGE_TOKENS, model_layout
    from kvtui.core.models import KV_DTYPES, ModelConfigError

    kv_dtype, model = getattr(args, "kv_dtype", None), None
    if kv_dtype and getattr(args, "elem_bytes", None) is not None:
        raise KvtuiError("--kv-dtype and --elem-bytes both set the element size; give one")
    if getattr(args, "model_config", None):
        model = read_model_config(args.model_config)
        try:
            # --page-tokens applies below; so does --elem-bytes (then any dtype gives the shape)
            shape_dtype = kv_dtype or ("fp16" if getattr(args, "elem_bytes", None) is not None else None)
            base = model_layout(model, MODEL_PAGE_TOKENS, shape_dtype)
        except ModelConfigError as exc:
            raise KvtuiError(f"--model-config: {exc}") from None
    else:
        base = PRESETS[args.layout]
        if kv_dtype:
            base = replace(base, elem_bytes=KV_DTYPES[kv_dtype])
    args.model_spec = model
    if getattr(args, "model", None) is None:
        args.model = model.name if model else DEFAULT_MODEL
    overrides = {f: getattr(args, f) for f in FIELDS if getattr(args, f, None) is not None}
    return replace(base, **overrides)


def add_cluster_arguments(p: argparse.ArgumentParser) -> None:
    """``--store-size``, ``--segment-on``, attach-mode flags, ``--lease-ttl``, ``--log-dir``, and the worker
    topology (``--prefill-workers``, ``--decode-workers``, ``--route``)."""
    add_topology_arguments(p)
    g = p.add_argument_group("store (embedded by default; --master/--metadata attach to an existing cluster)")
    g.add_argument("--store-size", default=None, metavar="BYTES",
                   help=f"embedded store segment size, bytes with units (1GiB, 512MiB; at least "
                        f"{MIN_SEGMENT_BYTES >> 20}MiB; default: {DEFAULT_STORE_SIZE_TEXT}, or what the workload's "
                        "working set needs below the 90%% eviction watermark, up to half the free memory, said in "
                        "one line)")
    g.add_argument("--segment-on", choices=("store", "prefill", "decode"), default="store",
                   help="where the embedded segment lives: a separate store node (default; decode reads go "
                        "through shared memory with --worker-client dummy, the default here, or cross TCP with "
                        "real) or co-located with the prefill or decode workers (with several, each contributes "
                        "an equal share of --store-size)")
    g.add_argument("--master", metavar="HOST:PORT", help="attach: the master's RPC address (starts nothing; default: an embedded master on loopback)")
    g.add_argument("--metadata", metavar="URL", help="attach: metadata server URL, e.g. http://HOST:8080/metadata (needed with --master; default: the embedded one)")
    g.add_argument("--metrics-url", metavar="URL", help="attach: master admin HTTP base for /metrics, e.g. http://HOST:9003 (default: none, store panel without master metrics)")
    g.add_argument("--protocol", choices=("tcp", "rdma"), default="tcp", help="transfer protocol (default tcp)")
    g.add_argument("--device", default="", metavar="NAME", help="RDMA device name (with --protocol rdma; default: Mooncake picks)")
    g.add_argument("--lease-ttl", type=float, default=10.0, metavar="SECONDS",
                   help="embedded master's read lease (default 10 s). Every probe and read grants one, and a "
                        "leased page cannot be evicted")
    g.add_argument("--log-dir", type=path_arg, metavar="DIR", help="where native logs of the cluster and workers go "
                   "(default: a new /tmp/kvtui-logs-* folder)")
    g.add_argument("--isolate-network", choices=("auto", "on", "off"), default="auto",
                   help="embedded mode: run the cluster and workers in a private network namespace so Mooncake's "
                        "all-interface transfer listeners are reachable only on loopback (auto: when permitted, "
                        "e.g. as root; on: fail if not possible; default auto; env KVTUI_ISOLATE overrides auto)")
    add_host_arguments(g)
    g.add_argument("--master-port", type=int, default=0, metavar="PORT", help="embedded: master RPC port (default: a free one)")
    g.add_argument("--metrics-port", type=int, default=0, metavar="PORT", help="embedded: master metrics/admin HTTP port (default: a free one)")
    g.add_argument("--metadata-port", type=int, default=0, metavar="PORT", help="embedded: metadata server port (default: a free one)")
    g.add_argument("--read-streams", type=int, default=1, metavar="N",
                   help="concurrent batch_get_into calls one reload of 8 MiB per stream or more is split across "
                        "(default 1: on 2 cores more streams were slower in `kvtui bench`)")


def add_workload_arguments(p: argparse.ArgumentParser, default_scenario: str | None = None) -> None:
    """Synthetic scenario knobs (:mod:`kvtui.core.knobs`: defaults, units and ranges; ``default_scenario``
    None: :data:`~kvtui.core.knobs.DEFAULT_SCENARIO`) and trace replay flags. Knob values stay in the user's
    unit (``--overlap`` in %); :func:`make_workload` checks them."""
    from kvtui.core.knobs import DEFAULT_SCENARIO, OVERLAP, POOL, RATE, SCENARIOS
    from kvtui.core.traces import trace_arg, trace_names

    default_scenario = default_scenario or DEFAULT_SCENARIO
    g = p.add_argument_group("workload (synthetic scenario, or --trace FILE)")
    g.add_argument("--scenario", default=default_scenario, choices=SCENARIOS,
                   help=f"synthetic scenario (default {default_scenario})")
    for knob in (OVERLAP, POOL, RATE):
        g.add_argument(knob.flag, type=int if knob.integer else float, default=knob.user(knob.default),
                       metavar=knob.metavar, help=knob.help_text().replace("%", "%%"))
    g.add_argument("--prompt-tokens", type=int, default=None, metavar="TOKENS",
                   help="mean prompt length in tokens (default 8 pages of the layout)")
    g.add_argument("--seed", type=int, default=0, metavar="N", help="workload random seed (default 0)")
    g.add_argument("--trace", type=trace_arg, metavar="NAME|FILE", help="replay a Mooncake FAST'25 JSONL trace instead of a scenario: a "
                   f"shipped one by name ({trace_names()}; `kvtui traces` lists them) or a file (default: none, the synthetic "
                   "--scenario)")
    g.add_argument("--trace-block-tokens", type=int, default=None, metavar="TOKENS",
                   help="with --trace: tokens per trace hash id (default 512, the FAST'25 release)")
    g.add_argument("--speed", default=None, metavar="X",
                   help="with --trace: time scale, 2 = twice as fast, max = as fast as possible (default 1)")
    add_synthesis_arguments(g, with_speed=True)
    g.add_argument("--strict", action="store_true", help="stop at the first bad trace row (default: skip and count)")


def layout_name(args: argparse.Namespace, layout: PageLayout) -> str:
    """The preset name of ``layout`` (``--layout``), the model's name (``--model-config``, whatever
    ``--page-tokens`` and ``--kv-dtype`` say), or ``custom`` when a field flag changed it."""
    model = getattr(args, "model_spec", None)
    if model is not None:
        from kvtui.core.layout import model_layout

        shape = model_layout(model, layout.page_tokens, "fp16")  # the element size is the user's to choose
        return model.name if replace(shape, elem_bytes=layout.elem_bytes) == layout else "custom"
    return args.layout if PRESETS.get(args.layout) == layout else "custom"


def add_page_arguments(p: argparse.ArgumentParser, default_layout: str = "seed") -> None:
    """Layout preset + overrides + model + key scheme."""
    add_layout_arguments(p, default_layout)
    p.add_argument("--scheme", choices=("ollama", "pagedkv"), default="ollama", help="page key scheme (default ollama)")
    p.add_argument("--key-prefix", default=None, metavar="NAMESPACE",
                   help="key namespace (default mc/ollama or mc/pagedkv by scheme)")


def layout_of(args: argparse.Namespace) -> PageLayout:
    """The page layout of ``args`` (``KvtuiError`` on a non-positive field)."""
    from kvtui.commands.checks import flag_message

    try:
        return layout_from_args(args)
    except ValueError as exc:
        raise KvtuiError(flag_message(str(exc))) from None


def engine_options(args: argparse.Namespace, layout: PageLayout):
    """Build :class:`~kvtui.engine.engine.EngineOptions` and the attach endpoints (or ``None``)."""
    from kvtui.commands.checks import size_store
    from kvtui.engine.cluster import ClusterError, ClusterOptions, attach
    from kvtui.engine.engine import EngineOptions

    given = store_size(args.store_size) if args.store_size is not None else None
    store_bytes = given if given is not None else DEFAULT_STORE_BYTES
    if args.read_streams < 1:
        raise KvtuiError("--read-streams must be at least 1")
    if not (args.lease_ttl > 0):
        raise KvtuiError("--lease-ttl must be positive seconds")
    n_prefill, n_decode, route, store_nodes = topology_options(args)
    remote = REMOTE_SLOTS if listen_options(args) is not None else 0  # (checks --listen/--token)
    hosts, link = host_options(args)  # (before attaching: --hosts auto with --master is refused as such)
    args.link = link.text() if link else None  # (normalised, for run_context)
    endpoints = None
    if args.master or args.metadata:
        if not (args.master and args.metadata):
            raise KvtuiError("attach mode needs both --master HOST:PORT and --metadata URL")
        try:
            endpoints = attach(args.master, args.metadata, args.protocol, args.device, args.metrics_url)
        except ClusterError as exc:
            raise KvtuiError(str(exc)) from None
    if endpoints is None and layout.page_bytes > store_bytes:
        raise KvtuiError(f"a page ({layout.page_bytes} bytes) is larger than the store segment "
                         f"({store_bytes} bytes); raise --store-size or shrink the layout")
    log_dir = args.log_dir
    if log_dir:
        try:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KvtuiError(f"--log-dir: cannot use {log_dir} as a folder ({exc.strerror})") from None
    ports = {}
    for flag in ("master_port", "metrics_port", "metadata_port"):
        port = getattr(args, flag)
        if port and not (1 <= port <= 65535):
            raise KvtuiError(f"--{flag.replace('_', '-')} must be within 1-65535, got {port}")
        if port and port in ports:
            raise KvtuiError(f"--{flag.replace('_', '-')} and --{ports[port].replace('_', '-')} are both {port}; "
                             "each listener needs its own port")
        if port:
            ports[port] = flag
    store_bytes = size_store(args, layout, given, endpoints, ClusterOptions.eviction_high_watermark,
                             DEFAULT_STORE_BYTES)  # after the checks: may say in one line the size chosen and why
    args.store_bytes = None if endpoints is not None else store_bytes  # the segment's size, for run_context
    if endpoints is None:
        check_segment_share(args.segment_on, store_bytes, layout.page_bytes, n_prefill, n_decode, store_nodes)
    args.worker_client = worker_client(args, endpoints is not None, n_prefill, store_nodes, hosts)  # (run_context)
    mode = args.isolate_network
    if ports and mode == "auto" and not hosts:
        mode = "off"  # explicit ports are meant to be reached (and checked) on this host's loopback
    if hosts:
        mode = "on"  # (the hosts' namespaces and bridge must not touch the machine's own network)
    if endpoints is not None:  # attach mode: native logs of the workers still go to a file, never the terminal
        import dataclasses
        import tempfile

        endpoints = dataclasses.replace(endpoints, log_dir=log_dir or tempfile.mkdtemp(prefix="kvtui-logs-"))
    copts = ClusterOptions(lease_ttl_ms=int(args.lease_ttl * 1000), log_dir=log_dir, rpc_port=args.master_port,
                           metrics_port=args.metrics_port, metadata_port=args.metadata_port,
                           isolation=None if endpoints else isolate(mode, explicit_ports=bool(ports), hosts=hosts)
                           + (f"; every host's link {link.text()} each way (tc tbf)" if link else ""),
                           hosts=hosts, link=link, store_nodes=store_nodes, worker_client=args.worker_client)
    return EngineOptions(layout=layout, model=args.model, scheme=args.scheme, namespace=args.key_prefix,
                         segment_on=args.segment_on, store_bytes=store_bytes, read_streams=args.read_streams,
                         concurrency=getattr(args, "concurrency", 1), cluster=copts, prefill_workers=n_prefill,
                         decode_workers=n_decode, route=route, remote_slots=remote,
                         replace_dead_workers=n_prefill > 1 or n_decode > 1 or remote > 0), endpoints


def isolate(mode: str, explicit_ports: bool = False, hosts: bool = False) -> str:
    """Apply ``--isolate-network``; returns a one-line description of the network isolation for the user
    (``hosts``: with emulated hosts, which need it: ``KvtuiError`` naming ``--hosts`` if not possible)."""
    import os

    from kvtui.engine.netns import isolate_network

    why = "--isolate-network off"
    if explicit_ports and mode == "off":
        why = "explicit ports requested"
    env = os.environ.get("KVTUI_ISOLATE", "").lower()
    if mode == "auto" and env in ("off", "0", "no"):
        mode, why = "off", f"KVTUI_ISOLATE={env}"
    if mode == "off":
        return f"not isolated ({why}): Mooncake's transfer listeners bind all interfaces"
    try:
        reason = isolate_network()
    except OSError as exc:  # (stuck in a namespace that reaches nothing: no run can work)
        raise KvtuiError(str(exc)) from None
    if reason is None:
        if hosts:
            return "isolated: private network namespace, emulated hosts on a private bridge (10.77.0.0/24)"
        return "isolated: private network namespace, loopback only"
    if hosts:
        raise KvtuiError(f"--hosts auto: {reason}")
    if mode == "on":
        raise KvtuiError(f"--isolate-network on: {reason}")
    return f"not isolated ({reason}): Mooncake's transfer listeners bind all interfaces"


def make_workload(args: argparse.Namespace, layout: PageLayout):
    """The request source of ``args``: ``(workload, description dict, problems)``.

    First refuses flags that would change nothing (:func:`kvtui.commands.checks.check_workload_flags`).
    Trace: checks the page size divides the block size and reports skipped rows; synthetic: checks each
    knob against its :mod:`kvtui.core.knobs` spec (``KvtuiError`` such as ``--overlap must be within 0-100 %,
    got 120``), then the whole spec (its errors name flags). Sets ``args.working_set``
    (:mod:`workload.working_set`), which :func:`engine_options` sizes the embedded store for.
    """
    from kvtui.commands.checks import check_workload_flags, flag_message
    from kvtui.core.knobs import OVERLAP, POOL, RATE
    from workload.working_set import synthetic_working_set, trace_working_set
    from workload import (
        DEFAULT_BLOCK_TOKENS,
        SyntheticWorkload,
        TraceError,
        TraceWorkload,
        WorkloadSpec,
        check_page_divides_block,
        read_trace,
    )

    if args.trace:
        from kvtui.core.traces import resolve_trace, trace_label

        check_workload_flags(args, layout)
        path = resolve_trace(args.trace)  # a shipped trace's name (--trace synthetic) or a file
        block = args.trace_block_tokens or DEFAULT_BLOCK_TOKENS
        try:
            check_page_divides_block(layout.page_tokens, block)
        except ValueError:
            raise KvtuiError(f"--page-tokens {layout.page_tokens} does not divide --trace-block-tokens {block}: "
                             "a KV page must not straddle two trace blocks") from None
        try:
            rows, problems = read_trace(path, block_tokens=block, strict=args.strict)
            rows = synthesize_rows(args, rows, block)  # --trace-speedup, --prefix-scale, … (trace_args)
            wl = TraceWorkload(rows, block_tokens=block, speed=parse_speed(args.speed or "1"),
                               name=trace_label(args.trace))
        except TraceError as exc:  # (the file is named in it: an empty, binary or all-bad trace)
            raise KvtuiError(f"--trace {exc}") from None
        except ValueError as exc:
            raise KvtuiError(str(exc)) from None
        args.working_set = trace_working_set(rows, block, layout.page_tokens)
        return wl, {"kind": "trace", "name": trace_label(args.trace), "done": 0, "total": wl.rows_total,
                    "complete": False, **synthesis_description(args)}, problems
    check_workload_flags(args, layout)
    trace_synthesis(args)  # refuses a synthesis flag without --trace
    knobs = {}
    for knob in (OVERLAP, POOL, RATE):
        try:
            knobs[knob.name] = knob.check(getattr(args, knob.name) / knob.scale)
        except ValueError as exc:
            raise KvtuiError(f"--{exc}") from None  # "overlap must be …" → "--overlap must be …"
    prompt = args.prompt_tokens if args.prompt_tokens is not None else DEFAULT_PROMPT_PAGES * layout.page_tokens
    try:
        spec = WorkloadSpec(scenario=args.scenario, **knobs, prompt_tokens=prompt, page_tokens=layout.page_tokens,
                            seed=args.seed)
        spec.validate()
        wl = SyntheticWorkload(spec)
    except ValueError as exc:
        raise KvtuiError(flag_message(str(exc))) from None
    per_worker = max(1, getattr(args, "decode_workers", 1))  # (a bad count is refused with the engine options)
    args.working_set = synthetic_working_set(spec, getattr(args, "concurrency", 1) * per_worker)
    from kvtui.live import synthetic_description

    return wl, synthetic_description(spec), []


def start_recording(session, path: str | None) -> None:
    """``--record``: start recording ``session`` into ``path`` (if given); ``KvtuiError`` if it cannot."""
    from kvtui.session import SessionError

    if path:
        try:
            session.start_recording(path)
        except SessionError as exc:
            raise KvtuiError(str(exc)) from None


def check_refresh_hz(hz: float) -> None:
    """``KvtuiError`` unless ``hz`` (screen updates per second) is within (0, ``MAX_HZ``]."""
    if not (0 < hz <= MAX_HZ):
        raise KvtuiError(f"--refresh-hz must be within (0, {MAX_HZ:g}]")


def add_screen_arguments(p) -> None:
    """``--headless``, ``--duration``, ``--screenshot`` and ``--size`` of the commands that show the monitor
    (``watch``, ``replay``) on a parser or argument group; :func:`screen_arguments` checks them."""
    p.add_argument("--headless", action="store_true", help="run without a terminal for --duration seconds (for CI and screenshots)")
    p.add_argument("--duration", type=duration_arg, metavar="SECONDS", help="quit after this many seconds (or 90s, 2m: with a unit; default: until q; required with --headless)")
    p.add_argument("--screenshot", type=path_arg, metavar="PATH", help="with --duration: save an SVG of the screen at the end")
    p.add_argument("--size", default="120x40", metavar="COLSxROWS",
                   help=f"headless screen size in cells (default 120x40, at most {MAX_SIZE[0]}x{MAX_SIZE[1]})")


def screen_arguments(args: argparse.Namespace, command: str) -> tuple[int, int]:
    """Check ``--duration``, ``--screenshot``, ``--size`` and that there is a terminal unless ``--headless``;
    returns the headless screen size ``(columns, rows)``. Shared by ``watch`` and ``replay``."""
    if args.duration is not None and not args.duration > 0:
        raise KvtuiError("--duration must be positive seconds")
    if args.screenshot:
        if args.duration is None:
            raise KvtuiError("--screenshot needs --duration (the screenshot is taken at the end)")
        check_writable(args.screenshot, "--screenshot")
    if args.headless and args.duration is None:
        raise KvtuiError("--headless needs --duration SECONDS (without a terminal there is no q to quit with)")
    size = parse_size(args.size)
    web = os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")  # kvtui serve: a browser is the terminal
    if not args.headless and not sys.stdout.isatty() and not web:
        raise KvtuiError(f"kvtui {command} needs a terminal; use --headless --duration S [--screenshot PATH] without one")
    return size


