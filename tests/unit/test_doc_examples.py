"""The documented examples of kvtui's output are what the tool prints today (scripts/gen_examples.py, `make examples`):

- each example's snippet (``docs/examples/NAME.txt``) is included by its page, and is its transcript as the
  table of examples shows it (the same command lines, the same choice of lines);
- each table in an example (a run's summary, trace-stats, a sweep, compare, a soak, a bench…) is rendered again
  by the tool's own renderer from the figures the real run gave it, kept in the transcript: a changed label,
  line or number format fails here until the examples are generated again;
- every other line (a ``kvtui:`` note, an error, ``doctor``, ``export``), and every ``kvtui:`` line the pages
  quote by hand, is made of words the code still prints: each word lies in a string literal of kvtui's source
  that matches the line.

No store runs here: the transcripts hold what the real runs printed."""

from __future__ import annotations

import difflib
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_examples as gen  # noqa: E402

DOCS = ROOT / "docs"
REGENERATE = "run `make examples` (or scripts/gen_examples.py NAME) and look at what changed"
NAMES = [ex.name for ex in gen.EXAMPLES]


def _transcript(name: str) -> dict:
    return json.loads(gen.transcript_path(name).read_text())


def _pages() -> dict[str, str]:
    return {str(p.relative_to(DOCS)): p.read_text() for p in sorted(DOCS.rglob("*.md"))}


@pytest.fixture(scope="module")
def literals():
    return gen.source_patterns()


def test_every_example_is_included_by_its_page_and_every_include_is_an_example():
    pages = _pages()
    for ex in gen.EXAMPLES:
        assert gen.INCLUDE.format(name=ex.name) in pages[ex.page], f"docs/{ex.page} does not include {ex.name}"
    included = {m for text in pages.values() for m in re.findall(r'--8<-- "docs/examples/([^"]+)\.txt"', text)}
    assert included == set(NAMES), f"included but no example: {included - set(NAMES)}; " \
                                   f"examples no page includes: {set(NAMES) - included}"
    files = {p.name for p in gen.OUT.iterdir()}
    assert files == {f"{n}.{ext}" for n in NAMES for ext in ("txt", "json")}, \
        f"docs/examples/ holds other files than the examples': {sorted(files)}"


@pytest.mark.parametrize("name", NAMES)
def test_the_snippet_is_the_transcript_of_the_commands_the_table_says(name):
    ex = next(e for e in gen.EXAMPLES if e.name == name)
    transcript = _transcript(name)
    assert [s["command"] for s in transcript["steps"]] == [s.command for s in ex.steps], \
        f"the table's commands of {name} changed since it ran: {REGENERATE}"
    for step, got in zip(ex.steps, transcript["steps"]):
        assert got["rc"] in step.rc + ((None,) if step.background else ()), (step.command, got["rc"])
    shown = gen.snippet_path(name).read_text()
    want = gen.snippet(ex, transcript)
    assert shown == want, f"docs/examples/{name}.txt is not what its transcript shows ({REGENERATE}):\n" + \
        "".join(difflib.unified_diff(want.splitlines(True), shown.splitlines(True), "generated", "file"))


@pytest.mark.parametrize("name", NAMES)
def test_the_tool_still_renders_the_documented_tables_from_their_figures(name):
    for step in _transcript(name)["steps"]:
        for record in step["records"]:
            for call in record["calls"]:
                printed = set(step["output"].splitlines())  # (a `| grep` keeps some of its lines)
                assert printed & set(call["out"].splitlines()), f"{call['renderer']}'s text is not in {name}'s output"
                try:
                    now = gen.rerender(call)
                except Exception as exc:  # (figures of an older shape: a key the renderer now needs)
                    pytest.fail(f"{call['renderer']} cannot render the figures kept for example {name} any more "
                                f"({type(exc).__name__}: {exc}): {REGENERATE}")
                assert now == call["out"], (
                    f"{call['renderer']} renders the figures of example {name} ({step['command']}) differently now: "
                    f"{REGENERATE}\n" + "".join(difflib.unified_diff(call["out"].splitlines(True),
                                                                       now.splitlines(True), "documented", "now")))


def _rendered_lines(step: dict) -> set[str]:
    return {line.rstrip() for rec in step["records"] for call in rec["calls"] for line in call["out"].splitlines()}


@pytest.mark.parametrize("name", NAMES)
def test_the_other_lines_of_an_example_are_words_the_code_prints(name, literals):
    ex = next(e for e in gen.EXAMPLES if e.name == name)
    for step, got in zip(ex.steps, _transcript(name)["steps"]):
        if not step.command.startswith("kvtui ") or step.hidden:
            continue  # (a file's contents, a curl: not kvtui's words)
        given = set(shlex.split(step.command.split("|")[0]))
        rendered = _rendered_lines(got)
        for line in gen.select(got["output"].splitlines(), step.keep):
            if line == gen.ELLIPSIS or line in rendered:
                continue
            assert not gen.unexplained_words(line, literals, given), (
                f"{name}: no string of kvtui's code prints {gen.unexplained_words(line, literals, given)} "
                f"in {line!r}: {REGENERATE}")


EXTERNAL = ("Address already in use", "Expecting value")
"""Words a quoted line takes from outside kvtui (the OS's strerror, Python's json module's message)."""


def _quoted_lines() -> list[tuple[str, str]]:
    """The ``kvtui:`` lines the pages write by hand: in fenced blocks, and quoted in backticks (a quote the page's
    source wraps over lines is read as one line)."""
    out = []
    for page, text in _pages().items():
        if page.startswith(("reference/", "examples/")):
            continue
        for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S):
            out += [(page, line) for line in block.splitlines() if re.match(r"kvtui( export| worker)?: ", line)]
        out += [(page, " ".join(m.split())) for m in re.findall(r"`(kvtui(?: export| worker)?: [^`]+)`", text)]
    return out


def _without_external(line: str) -> str:
    for phrase in EXTERNAL:
        line = line.replace(phrase, "")
    return line


def test_the_kvtui_lines_the_pages_quote_by_hand_are_words_the_code_prints(literals):
    quoted = _quoted_lines()
    assert len(quoted) > 20  # (the pages quote many notes and errors)
    wrong = [(page, line, gen.unexplained_words(_without_external(line), literals)) for page, line in quoted]
    wrong = [w for w in wrong if w[2]]
    assert not wrong, "lines the pages quote that no string of kvtui's code prints:\n" + "\n".join(
        f"  docs/{page}: {line!r}: {bad}" for page, line, bad in wrong)


def test_the_word_check_catches_a_changed_word(literals):
    isolated = "kvtui: network isolated: private network namespace, loopback only"
    assert gen.unexplained_words(isolated, literals) == []
    assert "walled:" in gen.unexplained_words(isolated.replace("isolated:", "walled:"), literals)
    interrupted = ("kvtui: interrupted: the summary covers the requests that finished (1,474); 7 submitted were "
                   "abandoned, queued or under way")
    assert gen.unexplained_words(interrupted, literals) == []
    assert "spans" in gen.unexplained_words(interrupted.replace("covers", "spans"), literals)
    assert gen.unexplained_words("kvtui: run --trace my.jsonl", literals, {"my.jsonl"}) == []


def test_a_selection_marks_each_gap_once():
    lines = ["a 1", "b 2", "c 3", "d 4", "e 5"]
    assert gen.select(lines, None) == lines
    assert gen.select(lines, ()) == [gen.ELLIPSIS]
    assert gen.select(lines, (r"^a", r"^e")) == ["a 1", gen.ELLIPSIS, "e 5"]
    assert gen.select(lines, (gen.Section(r"^b", r"^d"),)) == [gen.ELLIPSIS, "b 2", "c 3", gen.ELLIPSIS]
    assert gen.select(lines, (gen.Section(r"^c"),)) == [gen.ELLIPSIS, "c 3", "d 4", "e 5"]
