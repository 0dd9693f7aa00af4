"""MkDocs hook (mkdocs.yml ``hooks:``): the top-level ``screenshots/`` folder, the README's pictures, served at
``screenshots/`` of the site, so a docs page shows one as ``screenshots/NAME`` (``../screenshots/NAME`` from a
guide page). MkDocs reads only ``docs/``; this keeps the pictures in one place, beside the README, and a link to
a picture that is not there still fails ``mkdocs build --strict``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

SCREENSHOTS = Path(__file__).resolve().parents[1] / "screenshots"


def on_files(files: Files, config: Any) -> Files:
    """Add every file of :data:`SCREENSHOTS` to the site, under ``screenshots/``."""
    for path in sorted(SCREENSHOTS.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            files.append(File.generated(config, f"screenshots/{path.name}", abs_src_path=str(path)))
    return files
