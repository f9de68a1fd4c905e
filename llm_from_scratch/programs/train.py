"""`make train`: fetch the data, train or load the tokenizers, train a model, average snapshots.

    make train ARGS="model=base data=tanaka_graded training.max_steps=20000"

A run lives in `paths.run_dir` (`runs/<name>/`); starting it again resumes from its `last.pt`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import datasets
import hydra
from omegaconf import MISSING, DictConfig

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.datamodule import build_data
from llm_from_scratch.data.sources import fetch_dataset
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.device import resolve_device
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.paths import PathsConfig, config_dir
from llm_from_scratch.programs.common import exit_on_user_error, register_schema
from llm_from_scratch.programs.train_tokenizer import load_or_train_tokenizers
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.distributed import init_distributed, shutdown_distributed
from llm_from_scratch.training.trainer import Trainer

logger = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """`configs/train.yaml`: a run's whole config, stored in its checkpoints."""

    name: str = "default"  # names the run directory, <paths.runs_dir>/<name>/
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = MISSING
    tokenizer: TokenizerConfig = MISSING
    model: ModelConfig = MISSING
    training: TrainingConfig = MISSING
    decoding: DecodingConfig = MISSING


register_schema("train_schema", TrainConfig)


def train(config: TrainConfig) -> dict[str, float]:
    """Build the data and the model, train, and return the final dev metrics."""
    started_at = time.perf_counter()  # a time budget counts data and tokenizer preparation too
    dist = init_distributed(resolve_device(config.training.device, "training.device").type)
    logging.basicConfig(level=logging.INFO if dist.is_main else logging.WARNING)
    datasets.disable_progress_bars()  # the log says what the data stage did
    if not dist.is_main:
        dist.barrier()  # let the main process train the tokenizers and fill the cache first
    fetch_dataset(config.data, config.paths)
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
    data = build_data(config.data, src_tok, tgt_tok, config.paths)
    if dist.is_main:
        dist.barrier()
    trainer = Trainer(config, data, dist, started_at=started_at)
    if dist.is_main:
        logger.info(
            "model: %s parameters; device %s, precision %s; run directory %s",
            f"{trainer.model.num_parameters():,}",
            trainer.device,
            trainer.precision.name,
            trainer.run_dir,
        )
    try:
        metrics = trainer.fit()
    finally:
        shutdown_distributed()
    if dist.is_main:
        summary = ", ".join(f"{name} {value:.2f}" for name, value in metrics.items())
        print(f"step {trainer.progress.step}: dev {summary}; checkpoints in {trainer.run_dir}")
    return metrics


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="train")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        train(to_schema(cfg, TrainConfig))
