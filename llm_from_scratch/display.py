"""How a program shows a path: as a user would type it from where they started the program.

Standard library only: `scripts/_environment.py` shows paths where the project's dependencies
cannot be imported.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path


def shown(path: str | Path) -> str:
    """`path` relative to the working directory when it lies under it, else absolute, quoted
    for a shell where it needs to be. Links are kept, not resolved: `.venv/bin/python` is the
    command to type, not the Python it links to."""
    absolute = Path(os.path.abspath(path))
    try:
        text = str(absolute.relative_to(os.getcwd()))
    except ValueError:
        text = str(absolute)
    return shlex.quote(text)
