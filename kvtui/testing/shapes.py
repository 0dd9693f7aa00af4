"""Whether JSON data has the shape its ``TypedDict`` declares: the tests hold a real ``--json`` output (a run's
summary, a bench's figures) against the type the code says it writes, so the two cannot drift apart."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict


def shape_errors(value: object, tp: Any, where: str = "$") -> list[str]:
    """Where ``value`` (JSON data: dicts, lists, numbers, strings, None) differs from type ``tp``, one line each
    (``$.reload_ms.p50: str, not float``); none when it has the shape. ``tp``: a ``TypedDict`` (every required key
    present, no key it does not declare, each value of its key's type), ``dict[str, X]``, ``list[X]``,
    ``tuple[X, ...]``, ``X | None``, ``Any``, ``int``, ``float`` (an int is a float too), ``bool`` or ``str``."""
    if tp is Any or tp is object:
        return []
    if is_typeddict(tp):
        if not isinstance(value, Mapping):
            return [f"{where}: {type(value).__name__}, not {tp.__name__}"]
        hints = get_type_hints(tp)
        errors = [f"{where}: {tp.__name__} needs {key!r}" for key in sorted(tp.__required_keys__ - value.keys())]
        for key, v in value.items():
            if key not in hints:
                errors.append(f"{where}: {tp.__name__} has no key {key!r}")
            else:
                errors += shape_errors(v, hints[key], f"{where}.{key}")
        return errors
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        tried = [shape_errors(value, arg, where) for arg in args]
        return [] if any(not e for e in tried) else min(tried, key=len)
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {value!r}, not one of {args}"]
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            return [f"{where}: {type(value).__name__}, not a dict"]
        return [e for k, v in value.items() for e in shape_errors(v, args[1], f"{where}.{k}")]
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return [f"{where}: {type(value).__name__}, not a list"]
        return [e for i, v in enumerate(value) for e in shape_errors(v, args[0], f"{where}[{i}]")]
    if tp is type(None):
        return [] if value is None else [f"{where}: {value!r}, not None"]
    kinds: dict[Any, tuple[type, ...]] = {float: (int, float), int: (int,), bool: (bool,), str: (str,)}
    if tp not in kinds:
        raise TypeError(f"{where}: shape_errors does not check {tp!r}")
    wrong = not isinstance(value, kinds[tp]) or (tp is not bool and isinstance(value, bool))
    return [f"{where}: {type(value).__name__}, not {tp.__name__}"] if wrong else []
