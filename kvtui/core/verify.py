"""How a reloaded page is checked: ``--verify full`` (every byte) or ``sampled`` (every chunk header and
:data:`SAMPLE_WORDS` random words per page). The engine's :mod:`kvtui.engine.contents` does the checking;
this module names the modes and says what each catches, for the flag's help, the summaries and the docs.

A page is ``page_bytes // 8`` words in chunks of :data:`CHUNK_WORDS`; each word's expected value follows from
the page's key, and word 0 of each chunk (its header) from the key and the chunk's index.

``sampled`` catches, with certainty (bar a 2^-64 coincidence): a page of another key (stale or swapped: every
word differs), a buffer shifted by any number of words (every word differs, headers included), and a page
torn or left partly unwritten at chunk granularity (a chunk that was not written, or was zeroed, has a wrong
header). A corruption covering a share ``f`` of the page's words (a write torn inside a chunk, a run of
overwritten bytes) escapes with probability ``(1 − f)^SAMPLE_WORDS``. What it can miss: a few flipped bytes
outside the sample; one corrupted word is caught with probability :func:`catch_probability`.
"""

from __future__ import annotations

VERIFY_MODES = ("full", "sampled")
"""``--verify``'s choices: ``full`` (the default) checks every byte of every loaded page, ``sampled`` checks
every chunk header and :data:`SAMPLE_WORDS` random words per page."""

DEFAULT_VERIFY = "full"

CHUNK_WORDS = 1 << 15
"""Words (8 bytes each) per chunk of the page-content formula (:mod:`kvtui.engine.contents`): 256 KiB, so a
chunk's expected values and the base they come from (512 KiB together) stay in a 1 MiB L2 cache while a
page streams past; one header per chunk."""

SAMPLE_WORDS = 1024
"""Random words ``sampled`` checks per page besides the chunk headers, drawn uniformly with replacement, anew
for every page loaded, from a random generator seeded per worker (so a run's sample is reproducible): 8 KiB
read per page, whatever its size."""


def page_words(page_bytes: int) -> int:
    """The whole 8-byte words of a page of ``page_bytes`` bytes (the ``page_bytes mod 8`` tail bytes are
    always checked in full)."""
    return int(page_bytes) // 8


def sampled_is_full(page_bytes: int) -> bool:
    """A page of at most :data:`SAMPLE_WORDS` words is checked whole in ``sampled`` mode too (a sample
    would read as much)."""
    return page_words(page_bytes) <= SAMPLE_WORDS


def catch_probability(page_bytes: int) -> float:
    """The probability that ``sampled`` catches one corrupted word at a uniformly random place in a page of
    ``page_bytes`` bytes: the word is a chunk header (always checked) or one of the :data:`SAMPLE_WORDS`
    draws lands on it, ``h/W + (1 − h/W)·(1 − (1 − 1/W)^S)`` for ``W`` words, ``h`` headers, ``S`` draws; 1 for
    a page checked whole (:func:`sampled_is_full`)."""
    w = page_words(page_bytes)
    if sampled_is_full(page_bytes):
        return 1.0
    headers = -(-w // CHUNK_WORDS)
    return headers / w + (1 - headers / w) * (1 - (1 - 1 / w) ** SAMPLE_WORDS)


def checked(mode: str) -> str:
    """How a summary says the pages were checked: ``every byte (--verify full)`` or ``by sample (--verify
    sampled)``."""
    return f"{'every byte' if mode == 'full' else 'by sample'} (--verify {mode})"


def describe(mode: str, page_bytes: int | None = None) -> str:
    """One phrase for summaries and tables: ``every byte`` or ``sampled: chunk headers + 1,024 words a page``
    (with ``page_bytes``: and the chance to catch one corrupted word)."""
    if mode == "full":
        return "every byte of every loaded page"
    text = f"sampled: every chunk header + {SAMPLE_WORDS:,} random words a page"
    if page_bytes is not None:
        if sampled_is_full(page_bytes):
            return text + " (these pages are that small: checked whole)"
        text += f"; one corrupted word caught with p = {catch_probability(page_bytes):.2%}"
    return text
