"""What a script says when the Python running it lacks the project's packages.

`python3 scripts/translate.py` in a shell where `.venv` is not active finds neither this package
nor torch; the scripts then say how to run them instead of printing a traceback.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's package, which another Python has not installed
from llm_from_scratch.display import shown  # noqa: E402  (standard library only)


def explain_and_exit(missing: ModuleNotFoundError) -> None:
    """Print the one-line fix for `missing` and exit with status 2."""
    if (missing.name or "").startswith("llm_from_scratch."):
        raise missing  # the package is there but broken: not a matter of environments
    venv_python = ROOT / ".venv" / "bin" / "python"
    command = f"{shown(venv_python)} {shown(Path(sys.argv[0]))} ..."
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
