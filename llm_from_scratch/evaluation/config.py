"""Schema of `configs/evaluate.yaml`, registered in Hydra's ConfigStore as `evaluate_schema`."""

from __future__ import annotations

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from llm_from_scratch.data.config import SPLITS, DataConfig
from llm_from_scratch.decoding.config import DecodeConfig
from llm_from_scratch.errors import ConfigError


@dataclass
class EvaluateConfig:
    """`scripts/evaluate.py` (`make eval`)."""

    checkpoint: str | None = None  # None: the newest runs/**/best.pt
    # More checkpoints that decode together with `checkpoint`, averaging each step's next-token
    # probabilities; they must share its tokenizers.
    ensemble: list[str] = field(default_factory=list)
    split: str = "test"
    data: DataConfig | None = None  # None: the dataset the checkpoint was trained on
    decode: DecodeConfig = MISSING
    device: str = "auto"  # auto: CUDA when available, else CPU
    output_dir: str | None = None  # None: eval-<split>/ beside the checkpoint
    limit: int | None = None  # score only the first `limit` sentences (quick checks)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ConfigError(f"split={self.split!r} must be one of {', '.join(SPLITS)}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit={self.limit} must be at least 1")


def register_evaluate_schema() -> None:
    ConfigStore.instance().store(name="evaluate_schema", node=EvaluateConfig)
