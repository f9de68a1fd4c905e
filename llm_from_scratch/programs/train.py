"""`make train`: fetch the data, train or load the tokenizers, train a model, average snapshots.

    make train ARGS="model=base data=tanaka_graded training.max_steps=20000"

A run lives in `paths.run_dir` (`runs/<name>/`); starting it again resumes from its `last.pt`,
or, once it has finished, says so and changes nothing. One run at a time owns the directory.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import MISSING, DictConfig, OmegaConf

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
from llm_from_scratch.training.distributed import (
    Distributed,
    init_distributed,
    shutdown_distributed,
)
from llm_from_scratch.training.run_dir import claim, finished_run
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


def train(config: TrainConfig, launch: DictConfig | None = None) -> dict[str, float]:
    """Build the data and the model, train, and return the final dev metrics (none when the run
    had already finished). `launch`: the config Hydra composed, recorded in `<run_dir>/.hydra/`."""
    started_at = time.perf_counter()  # a time budget counts data and tokenizer preparation too
    dist = init_distributed(resolve_device(config.training.device, "training.device").type)
    logging.basicConfig(level=logging.INFO if dist.is_main else logging.WARNING)
    run_dir = Path(config.paths.run_dir or config.paths.run(config.name))
    try:
        finished = finished_run(run_dir, config)  # before anything writes to run_dir
        if finished is not None:
            if dist.is_main:
                print(finished.report())  # not logged: the log is a file of the run directory
            return {}
        with claim(run_dir, dist):
            if dist.is_main and launch is not None:
                record_launch(launch, run_dir)
            return _train(config, dist, started_at)
    finally:
        shutdown_distributed()


def _train(config: TrainConfig, dist: Distributed, started_at: float) -> dict[str, float]:
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
    metrics = trainer.fit()
    if dist.is_main:
        summary = ", ".join(f"{name} {value:.2f}" for name, value in metrics.items())
        print(f"step {trainer.progress.step}: dev {summary}; checkpoints in {trainer.run_dir}")
    return metrics


def record_launch(cfg: DictConfig, run_dir: Path) -> None:
    """Write what Hydra writes to `.hydra/` at launch, which `configs/train.yaml` turns off so that
    a run that trains nothing writes nothing: the composed config, Hydra's and the overrides."""
    if not HydraConfig.initialized():
        return
    hydra_cfg = HydraConfig.get()
    directory = run_dir / ".hydra"
    directory.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, directory / "config.yaml")
    OmegaConf.save(OmegaConf.create({"hydra": hydra_cfg}), directory / "hydra.yaml")
    OmegaConf.save(hydra_cfg.overrides.task, directory / "overrides.yaml")


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="train")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        train(to_schema(cfg, TrainConfig), launch=cfg)
