"""Train the BPE tokenizer(s) on a dataset's train split: `make tokenizer`."""

import hydra
from omegaconf import DictConfig

from llm_from_scratch.cli import exit_on_user_error
from llm_from_scratch.config import TokenizerJobConfig, resolve
from llm_from_scratch.data.sources import fetch_dataset
from llm_from_scratch.tokenizer.training_job import run


@hydra.main(version_base="1.3", config_path="../configs", config_name="train_tokenizer")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        config = resolve(cfg, TokenizerJobConfig)
        fetch_dataset(config.data)
        run(config)


if __name__ == "__main__":
    main()
