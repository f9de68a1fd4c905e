"""Path settings that name files: refused in one line before anything is created, Hydra's output
directory included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
KEYS = ("root", "raw_dir", "cache_dir", "tokenizer_dir", "runs_dir", "run_dir")


def tree(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


@pytest.mark.parametrize("under", [False, True], ids=["the file", "under the file"])
@pytest.mark.parametrize("key", KEYS)
def test_a_path_setting_naming_a_file_is_a_config_error(tmp_path, key, under):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    path = blocker / "sub" if under else blocker
    with pytest.raises(ConfigError) as error:
        PathsConfig(**{key: str(path)})
    assert str(error.value) == f"paths.{key}={path} cannot be a directory: {blocker} is a file"


@pytest.mark.parametrize(
    ("script", "key"),
    [
        ("train.py", "paths.run_dir"),  # Hydra's output directory: it would mkdir it first
        ("train_tokenizer.py", "paths.tokenizer_dir"),
    ],
)
@pytest.mark.slow
def test_the_programs_refuse_it_in_one_line_and_create_nothing(tmp_path, script, key):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    before = tree(tmp_path)
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / script), f"paths.root={tmp_path}",
         f"{key}={blocker}"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == f"error: {key}={blocker} cannot be a directory: {blocker} is a file\n"
    assert tree(tmp_path) == before
