"""`make data`: fetch a dataset's raw files (`make data ARGS="data=tanaka_graded"`), every
member's for a mixture."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import hydra
from omegaconf import MISSING, DictConfig

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.paths import PathsConfig, config_dir
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.programs.common import (
    check_raw_data_writable,
    compose_before_hydra,
    register_schema,
)
from llm_from_scratch.schema import to_schema


@dataclass
class PrepareDataConfig:
    """`configs/prepare_data.yaml`."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = MISSING


register_schema("prepare_data_schema", PrepareDataConfig)


def main() -> None:
    """`scripts/prepare_data.py`: a bad config is refused in one line before Hydra starts."""
    with exit_on_user_error():
        compose_before_hydra("prepare_data", sys.argv[1:], PrepareDataConfig)
    _main()


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="prepare_data")
def _main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        config = to_schema(cfg, PrepareDataConfig)
        check_raw_data_writable(config.data, config.paths)
        for corpus, directory in zip(
            config.data.members, fetch_data(config.data, config.paths), strict=True
        ):
            files = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
            print(f"{corpus.name}: {len(files)} files in {directory}")
