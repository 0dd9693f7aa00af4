"""The code is checked: ruff (pyproject ``[tool.ruff]``) over the code, tests and scripts, and mypy
(``[tool.mypy]``: strict on kvtui.core, kvtui.metrics, kvtui.session, kvtui.config, kvtui.bench and the commands
that print the benches' figures and the run summary) over kvtui and workload. Both run from the environment's own
executables; mypy keeps its cache in ``.mypy_cache`` so that a rerun checks only what changed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUFF_PATHS = ("kvtui", "workload", "tests", "scripts")


def _tool(name: str) -> str:
    """The executable ``name`` beside this Python (the project's environment), else on PATH."""
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed (pip install -e '.[test]')")
    return found


def _run(cmd: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)


def test_ruff_finds_nothing():
    r = _run([_tool("ruff"), "check", "--no-cache", "--output-format", "concise", *RUFF_PATHS], 120)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and out.strip() == "All checks passed!", f"ruff check {' '.join(RUFF_PATHS)}:\n{out}"


def test_mypy_finds_nothing():
    # the files to check and the cache folder come from pyproject's [tool.mypy]
    r = _run([_tool("mypy")], 600)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and out.strip().startswith("Success:"), f"mypy:\n{out}"


def test_no_two_test_modules_share_a_name():
    """pytest imports test modules by their base name (the tests folders are not packages): two files of one name
    in different tiers stop the whole suite from collecting one of them, which a run of one tier never shows."""
    names: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {n: p for n, p in names.items() if len(p) > 1}
