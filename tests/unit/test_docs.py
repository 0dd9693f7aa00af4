"""The documentation holds: the reference pages are what the code generates (scripts/gen_reference.py), the site
builds with ``mkdocs build --strict`` (no broken link, no page left out of the nav), and the README stays a
front page (≤ 200 lines, a picture on its first screen, every page it links to exists)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_the_reference_pages_are_generated_from_the_code():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_reference.py"), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_every_command_and_flag_is_in_the_cli_reference():
    from kvtui.cli import build_parser

    text = (ROOT / "docs" / "reference" / "cli.md").read_text()
    parser = build_parser()
    for name, sub in parser.commands.items():
        assert f"## kvtui {name}" in text
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in text, f"kvtui {name} {flag}"


def test_the_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    r = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1",
                                                                        "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_the_readme_is_a_front_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; details go to docs/"
    first_screen = "\n".join(lines[:40])
    assert re.search(r"!\[[^\]]*\]\([^)]+\.(gif|svg|png)\)", first_screen), "no picture in the README's first 40 lines"
    for target in re.findall(r"\]\(((?:docs/|screenshots/)[^)#]+)", README.read_text()):
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_the_pictures_live_once_in_the_top_level_screenshots_folder():
    """The README and the site show the same files from screenshots/ (the site through the hook in mkdocs.yml;
    a page's link to a picture that is not there fails the strict build above); `make screenshots` writes there."""
    assert not (ROOT / "docs" / "screenshots").exists()
    shots = {p.name for p in (ROOT / "screenshots").iterdir()}
    assert "demo.gif" in shots and "watch-120x40.svg" in shots
    readme = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README.read_text())
    assert readme and all(target.startswith("screenshots/") for target in readme), readme
    made = re.findall(r"--(?:screenshot|png|gif) (\S+)", (ROOT / "Makefile").read_text())
    assert made and all(path.startswith("screenshots/") for path in made), made
