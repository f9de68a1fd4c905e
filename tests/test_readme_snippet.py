"""The README's Python snippet runs as printed, from any directory, given a run `default`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_from_scratch.paths import ROOT_VARIABLE
from tests.decoding.builders import save_run_checkpoint, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[1]


def python_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow  # a Python of its own, loading torch and decoding: seconds
def test_the_readmes_python_snippet_runs_as_printed(tmp_path):
    project = tmp_path / "project"
    save_run_checkpoint(project / "runs" / "default" / "best.pt", tiny_tokenizer(), 300, {})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", python_snippet()],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env={**os.environ, ROOT_VARIABLE: str(project), "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 + 3 + 2  # a translation, 3 candidates, 2 more
