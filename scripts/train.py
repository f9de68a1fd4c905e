"""Train a translation model: `make train ARGS="model=small trainer.max_steps=2000"`."""

import hydra
from omegaconf import DictConfig

from llm_from_scratch.cli import exit_on_user_error
from llm_from_scratch.config import TrainConfig, resolve
from llm_from_scratch.data.sources import fetch_dataset
from llm_from_scratch.training.trainer import train


@hydra.main(version_base="1.3", config_path="../configs", config_name="train")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        config = resolve(cfg, TrainConfig)
        fetch_dataset(config.data)
        train(config)


if __name__ == "__main__":
    main()
