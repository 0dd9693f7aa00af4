"""``kvtui keys``: print the store keys of a prompt's KV pages, one per line (find them in a shared store)."""

from __future__ import annotations

import argparse
import json
import re
import sys

from kvtui.core.errors import KvtuiError
from kvtui.core.text import plural

_INT = re.compile(r"[-+]?\d+")
_LIST_OF_IDS = re.compile(r"^-\d+(?:[\s,]+[-+]?\d+)*[\s,]*$")  # "--tokens -1,2,3" is a value, not a flag


def register(subparsers) -> None:
    """Add the ``keys`` subcommand."""
    p = subparsers.add_parser(
        "keys", help="print the page keys of a token sequence",
        description="Print one Mooncake store key per full KV page of the given token ids, exactly as the Go "
                    "paged-KV connector computes them (SHA-256 hash chain seeded with the model name). A "
                    "trailing partial page has no key. Token ids are int32 as in the Go code "
                    "(-2147483648..2147483647); a negative id is hashed as its two's-complement uint32.")
    if hasattr(p, "_negative_number_matcher"):  # argparse's own test only knows a single number such as -1
        p._negative_number_matcher = _LIST_OF_IDS
    p.add_argument("--model", required=True,
                   help="model name hashed into every key; any string, the empty one included (the key path then "
                        "has an empty segment: mc/ollama//<hex>)")
    p.add_argument("--page-tokens", type=int, required=True, metavar="TOKENS", help="tokens per KV page")
    p.add_argument("--scheme", choices=("ollama", "pagedkv"), default="ollama", help="key scheme (default ollama)")
    p.add_argument("--key-prefix", default=None, metavar="NAMESPACE",
                   help="key namespace (default mc/ollama or mc/pagedkv by scheme)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokens", metavar="1,2,3", help="comma-separated token ids (int32, as in the Go connector)")
    src.add_argument("--tokens-file", metavar="FILE",
                     help="token ids separated by whitespace or commas, or a JSON array ('-' = stdin)")
    p.set_defaults(func=run)


def parse_token_text(text: str, source: str) -> list[int]:
    """Token ids from ``text`` (a JSON array, or ints separated by whitespace or commas), each checked to be
    an ``int32`` as the Go connector's token ids are. ``source`` names the flag in messages (``--tokens`` or
    ``--tokens-file FILE``). Raises ``KvtuiError`` naming the source and, for a file, the line."""
    from kvtui.engine.keys import TOKEN_MAX, TOKEN_MIN

    s = text.strip()
    if s.startswith("["):
        try:
            values = json.loads(s)
        except json.JSONDecodeError as exc:
            raise KvtuiError(f"{source}: not a JSON array of integers ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise KvtuiError(f"{source}: the JSON array must hold integers only")
        for i, v in enumerate(values):
            if not TOKEN_MIN <= v <= TOKEN_MAX:
                raise KvtuiError(f"{source}: token id {v} (item {i}) is outside int32 ({TOKEN_MIN}..{TOKEN_MAX})")
        return values
    tokens: list[int] = []
    lines = text.splitlines()
    for line_no, line in enumerate(lines, start=1):
        where = f"{source} line {line_no}" if len(lines) > 1 else source
        if re.search(r",\s*,", line) or re.match(r"^\s*,", line):
            raise KvtuiError(f"{where}: an empty item between commas (a token id is missing)")
        for part in (x for x in re.split(r"[\s,]+", line) if x):
            if not _INT.fullmatch(part):
                raise KvtuiError(f"{where}: {part!r} is not an integer token id")
            v = int(part)
            if not TOKEN_MIN <= v <= TOKEN_MAX:
                raise KvtuiError(f"{where}: token id {v} is outside int32 ({TOKEN_MIN}..{TOKEN_MAX})")
            tokens.append(v)
    return tokens


def run(args: argparse.Namespace, started_at: float | None = None) -> int:
    """Print the keys; exit 0 (also when the tokens are shorter than one page: no keys)."""
    from kvtui.engine.keys import PageKeyer

    if args.page_tokens <= 0:
        raise KvtuiError(f"--page-tokens must be positive, got {args.page_tokens}")
    if args.tokens is not None:
        tokens = parse_token_text(args.tokens, "--tokens")
    else:
        try:
            text = sys.stdin.read() if args.tokens_file == "-" else open(args.tokens_file, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise KvtuiError(f"--tokens-file: cannot read {args.tokens_file}: {reason}") from None
        tokens = parse_token_text(text, f"--tokens-file {args.tokens_file}")
    keyer = PageKeyer(args.model, args.page_tokens, args.scheme, args.key_prefix)
    keys = keyer.keys(tokens)
    for key in keys:
        print(key)
    if not keys:
        print(f"kvtui: no keys: {plural(len(tokens), 'token')} make no full page of "
              f"{plural(args.page_tokens, 'token')}", file=sys.stderr)
    return 0
