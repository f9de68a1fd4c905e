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


@dataclass(frozen=True)
class RunDir:
    """A run's directory and every file and folder in it, each named here and only here."""

    root: Path

    @classmethod
    def of(cls, paths: PathsConfig, name: str) -> RunDir:
        """The directory of the run `name` trains in: `paths.run_dir`, else `<runs_dir>/<name>`."""
        return cls(Path(paths.run_dir)) if paths.run_dir else cls.named(paths.runs_dir, name)

    @classmethod
    def named(cls, runs_dir: str | Path, name: str) -> RunDir:
        """The directory of the run called `name` under `runs_dir`; a name that leads outside
        it (`../x`, `/tmp/x`) is refused: the runs' folder holds every run."""
        check_inside(Path(runs_dir), name, f"the run name {name!r}")
        return cls(Path(runs_dir) / name)

    def __str__(self) -> str:
        return str(self.root)

    @property
    def last(self) -> Path:
        """What continues the run exactly: the weights, optimizer and position of its last save."""
        return self.root / "last.pt"

    @property
    def best(self) -> Path:
        return self.root / "best.pt"

    @property
    def averaged(self) -> Path:
        return self.root / "averaged.pt"

    @property
    def final_models(self) -> tuple[Path, Path]:
        """The run's final model, first found wins: the average of its last snapshots usually
        beats the best single checkpoint on dev."""
        return self.averaged, self.best

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    def snapshot(self, step: int) -> Path:
        return self.snapshots / f"{SNAPSHOT_PREFIX}{step:07d}.pt"

    def snapshot_paths(self) -> list[Path]:
        """The run's snapshots, oldest first (the zero-padded step sorts them)."""
        return sorted(self.snapshots.glob(f"{SNAPSHOT_PREFIX}*.pt"))

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def tensorboard(self) -> Path:
        return self.root / "tensorboard"

    @property
    def profile(self) -> Path:
        """`training.profile_steps`' traces."""
        return self.root / "profile"

    @property
    def launch(self) -> Path:
        """The config Hydra composed for the run, its own settings and the command's overrides."""
        return self.root / ".hydra"

    def evaluation(self, name: str) -> Path:
        """What `make eval` writes for the evaluation `name` (say `test-beam5`: its settings,
        evaluation/results.py) of the run's models."""
        return self.root / f"eval-{name}"

    def evaluations(self) -> list[Path]:
        """Every evaluation folder of the run's models (`evaluation`), those from before their
        names recorded the settings (`eval-test/`) too, sorted by name."""
        return sorted(path for path in self.root.glob("eval-*") if path.is_dir())

    def export(self, name: str) -> Path:
        """The run's export in the format whose folder is `name`."""
        return self.root / name

    @property
    def budget_probe(self) -> Path:
        """The time budget's timed save; hidden, so that a killed probe's file is a leftover."""
        return self.root / ".budget-probe.pt"


SNAPSHOT_PREFIX = "step-"


def snapshot_step(path: Path) -> int:
    """The step of the snapshot at `path` (`RunDir.snapshot`)."""
    return int(path.stem.removeprefix(SNAPSHOT_PREFIX))


def check_inside(folder: Path, name: str, what: str, kind: str = "a folder") -> None:
    """Refuse a `name` (of `what`, which names `kind` inside `folder`) that, joined to `folder`,
    lies outside it or is the folder itself: an absolute path, one through `..`, an empty name.
    Judged on the name as written, so that a folder inside that links elsewhere stays allowed."""
    normal = Path(os.path.normpath(name or "."))
    if normal.is_absolute() or normal.parts[:1] in ((), ("..",)):
        raise ConfigError(
            f"{what} leads outside {folder}: a name is {kind} inside it (letters, digits, "
            "-, _ and / between folders; no .. or leading /)"
        )


def check_directory(path: Path, key: str) -> None:
    """Refuse a directory setting `key` that names a file, or lies under one, before anything
    is created there."""
    for existing in (path, *path.parents):
        if existing.exists():
            if not existing.is_dir():
                raise ConfigError(f"{key}={path} cannot be a directory: {existing} is a file")
            return
