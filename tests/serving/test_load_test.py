"""scripts/load_test_serve.py against the tiny checkpoint: one table row per client count."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_load_test_prints_a_row_per_client_count_without_failures(checkpoint, tmp_path):
    sentences = tmp_path / "test.en"
    sentences.write_text("the cat sat.\na dog ran.\n\nit is here.\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "scripts/load_test_serve.py", "--clients", "1", "3", "--requests", "2",
         "--texts", "2", "--input", str(sentences), "--",
         "--checkpoint", str(checkpoint), "--device", "cpu"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines()[2:]]
    assert [(cells[0].strip(), cells[1].strip(), cells[5].strip()) for cells in rows] == [
        ("1", "2", "0"),
        ("3", "6", "0"),
    ]
