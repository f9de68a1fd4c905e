"""Schema of the `training` config group (`configs/training/*.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.tokenizer.config import TokenizerConfig

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
SCHEDULES = ("inverse_sqrt", "cosine")


@dataclass
class TrainingConfig:
    seed: int = 1234
    device: str = "auto"  # auto: CUDA when available, else CPU
    precision: str = "auto"
    compile: bool = False
    max_steps: int = 10_000
    max_epochs: int | None = None
    max_time: float | None = None  # seconds
    lr: float = 1e-3
    weight_decay: float = 0.01
    schedule: str = "inverse_sqrt"
    warmup_steps: int = 1000
    label_smoothing: float = 0.1
    accumulation_steps: int = 1
    clip_norm: float = 1.0
    eval_every: int = 500
    save_every: int = 500
    keep_snapshots: int = 0  # weight-only snapshots kept (one per save_every); ≥ 2: averaged.pt
    patience: int | None = None  # evaluations without a dev-BLEU improvement before stopping
    log_every: int = 50
    dev_bleu_sentences: int = 500  # dev pairs decoded (greedy) for BLEU at each evaluation
    max_nonfinite: int = 20  # consecutive skipped updates (non-finite loss or gradient) tolerated

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"training.precision={self.precision!r} must be one of {', '.join(PRECISIONS)}"
            )
        if self.schedule not in SCHEDULES:
            raise ConfigError(
                f"training.schedule={self.schedule!r} must be one of {', '.join(SCHEDULES)}"
            )
        for key in (
            "max_steps", "accumulation_steps", "eval_every", "save_every", "log_every",
            "max_nonfinite",
        ):  # fmt: skip
            if getattr(self, key) < 1:
                raise ConfigError(f"training.{key}={getattr(self, key)} must be at least 1")
        if self.keep_snapshots < 0:
            raise ConfigError(f"training.keep_snapshots={self.keep_snapshots} must be at least 0")
        if self.lr <= 0:
            raise ConfigError(f"training.lr={self.lr} must be positive")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"training.label_smoothing={self.label_smoothing} must be in [0, 1)")


class RunConfig(Protocol):
    """What training reads of a run's config: the train program's schema has these sections."""

    name: str
    paths: PathsConfig
    data: DataConfig
    tokenizer: TokenizerConfig
    model: ModelConfig
    training: TrainingConfig
    decoding: DecodingConfig
