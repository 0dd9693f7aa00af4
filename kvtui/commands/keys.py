"""``kvtui keys``: print the store keys of a prompt's KV pages, one per line (find them in a shared store)."""

from __future__ import annotations

import argparse
import json
import re
import sys

from kvtui.core.errors import KvtuiError


def register(subparsers) -> None:
    """Add the ``keys`` subcommand."""
    p = subparsers.add_parser(
        "keys", help="print the page keys of a token sequence",
        description="Print one Mooncake store key per full KV page of the given token ids, exactly as the Go "
                    "paged-KV connector computes them (SHA-256 hash chain seeded with the model name). A "
                    "trailing partial page has no key.")
    p.add_argument("--model", required=True, help="model name hashed into every key")
    p.add_argument("--page-tokens", type=int, required=True, metavar="TOKENS", help="tokens per KV page")
    p.add_argument("--scheme", choices=("ollama", "pagedkv"), default="ollama", help="key scheme (default ollama)")
    p.add_argument("--key-prefix", default=None, metavar="NAMESPACE",
                   help="key namespace (default mc/ollama or mc/pagedkv by scheme)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokens", metavar="1,2,3", help="comma-separated token ids (uint32)")
    src.add_argument("--tokens-file", metavar="FILE",
                     help="token ids separated by whitespace or commas, or a JSON array ('-' = stdin)")
    p.set_defaults(func=run)


def parse_token_text(text: str, source: str) -> list[int]:
    """Token ids from ``text`` (JSON array, or whitespace/comma separated ints); ``KvtuiError`` if bad."""
    s = text.strip()
    if s.startswith("["):
        try:
            values = json.loads(s)
        except json.JSONDecodeError as exc:
            raise KvtuiError(f"{source}: not a JSON array of integers ({exc.msg})") from None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise KvtuiError(f"{source}: the JSON array must hold integers only")
        tokens = values
    else:
        parts = [x for x in re.split(r"[\s,]+", s) if x]
        bad = next((x for x in parts if not re.fullmatch(r"\d+", x)), None)
        if bad is not None:
            raise KvtuiError(f"{source}: {bad!r} is not a non-negative integer token id")
        tokens = [int(x) for x in parts]
    big = next((t for t in tokens if t < 0 or t > 0xFFFFFFFF), None)
    if big is not None:
        raise KvtuiError(f"{source}: token id {big} does not fit in uint32")
    return tokens


def run(args: argparse.Namespace) -> int:
    """Print the keys; exit 0 (also when the tokens are shorter than one page: no keys)."""
    from kvtui.engine.keys import PageKeyer

    if args.page_tokens <= 0:
        raise KvtuiError(f"--page-tokens must be positive, got {args.page_tokens}")
    if not args.model:
        raise KvtuiError("--model must not be empty (it is hashed into every key and names the key path)")
    if args.tokens is not None:
        tokens = parse_token_text(args.tokens, "--tokens")
    else:
        try:
            text = sys.stdin.read() if args.tokens_file == "-" else open(args.tokens_file, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as exc:
            raise KvtuiError(f"--tokens-file: cannot read {args.tokens_file}: {getattr(exc, 'strerror', None) or exc}") from None
        tokens = parse_token_text(text, args.tokens_file)
    keyer = PageKeyer(args.model, args.page_tokens, args.scheme, args.key_prefix)
    keys = keyer.keys(tokens)
    for key in keys:
        print(key)
    if not keys:
        print(f"kvtui: no keys: {len(tokens)} tokens make no full page of {args.page_tokens} tokens",
              file=sys.stderr)
    return 0
