"""Path settings that name files: refused in one line before anything is created, Hydra's output
directory included."""

from __future__ import annotations

import os
import re
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


@pytest.mark.parametrize("name", ["../../../tmp/escape", "/tmp/escape", "a/../../b", "."])
def test_a_run_name_leading_outside_the_runs_folder_is_refused(tmp_path, name):
    from llm_from_scratch.paths import RunDir
    from llm_from_scratch.programs.common import compose_config
    from llm_from_scratch.programs.train import TrainConfig

    runs = tmp_path / "runs"
    message = f"the run name {name!r} leads outside {runs}: a name is a folder inside it"
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        RunDir.named(runs, name)
    with pytest.raises(ConfigError, match="^" + re.escape(f"name={name} leads outside {runs}")):
        compose_config("train", [f"name={name}", f"paths.runs_dir={runs}"], TrainConfig)
    assert RunDir.named(runs, "sweep/lr-3e-4").root == runs / "sweep" / "lr-3e-4"
    assert not runs.exists()


def test_a_config_group_option_leading_outside_its_folder_is_refused():
    from llm_from_scratch.programs.common import compose_config
    from llm_from_scratch.programs.train import TrainConfig

    with pytest.raises(ConfigError, match=r"^data=\.\./\.\./x leads outside .*configs/data: a"):
        compose_config("train", ["data=../../x"], TrainConfig)
