"""Checks of the workload flags and the size of the embedded store for the workload's working set, shared by
``run`` and ``watch`` through :func:`kvtui.commands.common.make_workload` and
:func:`~kvtui.commands.common.engine_options`.

Every refusal is a :class:`~kvtui.core.errors.KvtuiError` (one line, exit 2) that names flags, never the
workload's internal field names; every other finding is one line on stderr before the run starts.
"""

from __future__ import annotations

import argparse
import re
import sys

from kvtui.core.errors import KvtuiError

FLAG_OF_FIELD = {"prompt_tokens": "--prompt-tokens", "page_tokens": "--page-tokens", "seed": "--seed",
                 "overlap": "--overlap", "pool": "--pool", "rate": "--rate", "scenario": "--scenario"}
"""The flag that sets each ``workload.WorkloadSpec`` field a user can reach."""

TRACE_ONLY = (("speed", "--speed"), ("strict", "--strict"), ("trace_block_tokens", "--trace-block-tokens"))


def flag_message(text: str) -> str:
    """A ``workload`` or layout ``ValueError`` text with the field it starts with named by its flag:
    ``prompt_tokens must be …`` → ``--prompt-tokens must be …``, ``layout field page-tokens must …`` →
    ``--page-tokens must …``, ``unknown scenario …`` → ``unknown --scenario …``."""
    text = re.sub(r"^layout field ([a-z][a-z-]*)", r"--\1", text)
    m = re.match(r"^(unknown )?([a-z_]+)\b", text)
    if m and m.group(2) in FLAG_OF_FIELD:
        return text[: m.start(2)] + FLAG_OF_FIELD[m.group(2)] + text[m.end(2):]
    return text


def check_workload_flags(args: argparse.Namespace, layout) -> None:
    """``KvtuiError`` for flags that would change nothing: ``--speed``, ``--strict`` or
    ``--trace-block-tokens`` without ``--trace``, ``--prompt-tokens`` with it; and for ``--trace-block-tokens``
    below 1 and ``--prompt-tokens`` below one KV page of ``layout`` (such a request has no page to reuse or
    publish)."""
    if not getattr(args, "trace", None):
        for field, flag in TRACE_ONLY:
            if getattr(args, field, None) not in (None, False):
                raise KvtuiError(f"{flag} applies to --trace replays only")
        prompt = getattr(args, "prompt_tokens", None)
        if prompt is not None and 0 < prompt < layout.page_tokens:
            raise KvtuiError(f"--prompt-tokens {prompt} is less than one KV page (--page-tokens "
                             f"{layout.page_tokens}): its requests would have no page to reuse or publish")
        return
    if getattr(args, "prompt_tokens", None) is not None:
        raise KvtuiError("--prompt-tokens applies to synthetic scenarios only (each trace row gives its prompt's "
                         "length)")
    if getattr(args, "trace_block_tokens", None) is not None and args.trace_block_tokens < 1:
        raise KvtuiError(f"--trace-block-tokens must be at least 1, got {args.trace_block_tokens}")


def _say(line: str, quiet: bool) -> None:
    if line and (not quiet or line.startswith("warning")):
        print(f"kvtui: {line}", file=sys.stderr, flush=True)


def size_store(args: argparse.Namespace, layout, given_bytes: int | None, endpoints, watermark: float,
               default_bytes: int) -> int:
    """The embedded segment's bytes for ``args.working_set`` (a :class:`workload.working_set.WorkingSet`
    set by ``make_workload``; without one: ``given_bytes`` or ``default_bytes``), after saying in one line
    on stderr what was chosen and why, or that the store is too small (:func:`kvtui.core.capacity.plan_store`,
    ``--quiet`` keeps only warnings). Attach mode (``endpoints``): sizes nothing, warns when the cluster's
    scraped capacity is too small. ``KvtuiError`` when the segment, or this machine's free memory, cannot
    hold one prompt."""
    from kvtui.core.capacity import attached_plan_line, plan_store

    ws = getattr(args, "working_set", None)
    quiet = bool(getattr(args, "quiet", False))
    if endpoints is not None:
        if ws is not None and endpoints.metrics_url:
            from kvtui.engine.samplers import StoreSampler

            capacity = StoreSampler(endpoints.metrics_url).sample().get("capacity_bytes")
            if capacity:
                _say(attached_plan_line(ws, layout.page_bytes, capacity, watermark), quiet)
        return given_bytes if given_bytes is not None else default_bytes
    if ws is None:
        return given_bytes if given_bytes is not None else default_bytes
    import psutil

    try:
        plan = plan_store(ws, layout.page_bytes, watermark, given_bytes=given_bytes, given_text=args.store_size,
                          available_bytes=psutil.virtual_memory().available, default_bytes=default_bytes,
                          page_tokens=layout.page_tokens)
    except ValueError as exc:
        raise KvtuiError(str(exc)) from None
    _say(plan.line, quiet)
    return plan.segment_bytes


def store_size(text: str) -> int:
    """``--store-size`` in bytes; ``KvtuiError`` if it is not a size, is below Mooncake's smallest segment
    (``MIN_SEGMENT_BYTES``) or is more than this machine's memory."""
    import psutil

    from kvtui.core.defaults import MIN_SEGMENT_BYTES
    from kvtui.core.units import parse_bytes

    try:
        store_bytes = parse_bytes(text)
    except ValueError as exc:
        raise KvtuiError(f"--store-size: {exc}") from None
    if store_bytes < MIN_SEGMENT_BYTES:
        raise KvtuiError(f"--store-size must be at least {MIN_SEGMENT_BYTES >> 20} MiB (Mooncake's smallest segment), "
                         f"got {store_bytes} bytes")
    total = psutil.virtual_memory().total
    if store_bytes > total:
        raise KvtuiError(f"--store-size {text} is more than this machine's memory ({total >> 20} MiB)")
    return store_bytes
