"""Fetch a dataset's raw files: `make data ARGS="data=tanaka_graded"`."""

import hydra
from omegaconf import DictConfig

from llm_from_scratch.cli import exit_on_user_error
from llm_from_scratch.config import PrepareDataConfig, resolve
from llm_from_scratch.data.sources import fetch_dataset


@hydra.main(version_base="1.3", config_path="../configs", config_name="prepare_data")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        config = resolve(cfg, PrepareDataConfig)
        directory = fetch_dataset(config.data)
        files = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
        print(f"{config.data.name}: {len(files)} files in {directory}")


if __name__ == "__main__":
    main()
