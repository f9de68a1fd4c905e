"""What a script says when the Python running it lacks the project's packages.

`python3 scripts/translate.py` in a shell where `.venv` is not active finds neither this package
nor torch; the scripts then say how to run them instead of printing a traceback.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def explain_and_exit(missing: ModuleNotFoundError) -> None:
    """Print the one-line fix for `missing` and exit with status 2."""
    if (missing.name or "").startswith("llm_from_scratch."):
        raise missing  # the package is there but broken: not a matter of environments
    venv_python = ROOT / ".venv" / "bin" / "python"
    command = f"{_shown(venv_python)} {_shown(Path(sys.argv[0]))} ..."
    if Path(sys.prefix).resolve() == venv_python.parents[1].resolve():
        fix = "reinstall it with `rm .venv/.installed && make setup`"
    else:
        fix = f"run `make setup` once, then `{command}`"
    print(
        f"error: {sys.executable} cannot import {missing.name} (not the project's environment): "
        f"{fix}",
        file=sys.stderr,
    )
    sys.exit(2)


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it lies under it, else absolute."""
    relative = os.path.relpath(path)
    return os.path.abspath(path) if relative.startswith("..") else relative
