"""The README's quick start runs as written: each command line of its first fenced block after "## Quick start",
through the installed ``kvtui`` (a real store on loopback). ``kvtui watch`` needs a terminal, so it gets
``--headless --duration 3`` appended here and nothing else."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KVTUI = Path(sys.executable).with_name("kvtui")


def _quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line.startswith("kvtui ")]


def test_the_quick_start_has_five_examples():
    assert len(_quick_start()) == 5


@pytest.mark.integration
@pytest.mark.parametrize("line", _quick_start())
def test_a_quick_start_example_runs_as_written(line, tmp_path):
    argv = shlex.split(line)
    if argv[1] == "watch":
        argv += ["--headless", "--duration", "3"]
    env = {**os.environ, "TERM": "dumb"}
    r = subprocess.run([str(KVTUI), *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, f"{line}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
