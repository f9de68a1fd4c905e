"""The `paths` config group: where raw data, caches, tokenizers and runs live.

Every default hangs off the project root, not the current directory, so `runs/` and `data/` are
the same wherever a program is started. The root is the checkout holding `configs/`, or
`$LLM_FROM_SCRATCH_ROOT` when set (e.g. for an installed, non-editable package). Configs reach it
as `${project_root:}`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from llm_from_scratch.errors import ConfigError

ROOT_VARIABLE = "LLM_FROM_SCRATCH_ROOT"


def project_root() -> Path:
    override = os.environ.get(ROOT_VARIABLE)
    return Path(override).resolve() if override else Path(__file__).resolve().parents[1]


def config_dir() -> Path:
    """The `configs/` directory of Hydra's primary configs."""
    return project_root() / "configs"


OmegaConf.register_new_resolver("project_root", lambda: str(project_root()), replace=True)


@dataclass
class PathsConfig:
    """`configs/paths/default.yaml`; a field left None lies under `root` as that file says."""

    root: str | None = None
    raw_dir: str | None = None  # <raw_dir>/<dataset>/: the fetched files
    cache_dir: str | None = None  # tokenized splits
    tokenizer_dir: str | None = None
    runs_dir: str | None = None  # one directory per run, named by the run's `name`
    run_dir: str | None = None  # this run's directory (train: <runs_dir>/<name>)

    def __post_init__(self) -> None:
        self.root = self.root or str(project_root())
        root = Path(self.root)
        self.raw_dir = self.raw_dir or str(root / "data" / "raw")
        self.cache_dir = self.cache_dir or str(root / "data" / "cache")
        self.tokenizer_dir = self.tokenizer_dir or str(root / "data" / "tokenizers")
        self.runs_dir = self.runs_dir or str(root / "runs")
        for key in ("root", "raw_dir", "cache_dir", "tokenizer_dir", "runs_dir", "run_dir"):
            if getattr(self, key) is not None:
                check_directory(Path(getattr(self, key)), f"paths.{key}")

    def run(self, name: str) -> Path:
        """The directory of the run called `name`."""
        return Path(self.runs_dir) / name


def check_directory(path: Path, key: str) -> None:
    """Refuse a directory setting `key` that names a file, or lies under one, before anything
    is created there."""
    for existing in (path, *path.parents):
        if existing.exists():
            if not existing.is_dir():
                raise ConfigError(f"{key}={path} cannot be a directory: {existing} is a file")
            return
