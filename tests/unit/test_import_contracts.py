"""The layout's rules, checked: import-linter's contracts (pyproject ``[tool.importlinter]``) and the size of
each module (README "Layout of the code")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 450
REASON = "Longer than"  # a module over MAX_LINES says why in its first lines, starting with these words


def test_import_contracts_hold():
    exe = Path(sys.executable).with_name("lint-imports")
    cmd = [str(exe)] if exe.exists() else [shutil.which("lint-imports") or "lint-imports"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "Contracts: " in r.stdout and "broken" in r.stdout and " 0 broken" in r.stdout


def test_no_module_over_450_lines_without_a_reason():
    long = []
    for path in sorted((ROOT / "kvtui").rglob("*.py")) + sorted((ROOT / "workload").rglob("*.py")):
        lines = path.read_text().splitlines()
        if len(lines) > MAX_LINES and not any(REASON in line for line in lines[:12]):
            long.append(f"{path.relative_to(ROOT)}: {len(lines)} lines")
    assert not long, "modules over 450 lines with no reason at the top: " + "; ".join(long)
