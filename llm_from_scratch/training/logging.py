"""TensorBoard logging from the main process; every other process gets a silent logger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class RunLogger:
    def __init__(self, log_dir: Path | None) -> None:
        self.writer = None
        if log_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # slow import; main process only

            self.writer = SummaryWriter(str(log_dir))

    def scalars(self, values: dict[str, float], step: int) -> None:
        if self.writer is not None:
            for tag, value in values.items():
                self.writer.add_scalar(tag, value, step)

    def text(self, tag: str, markdown: str, step: int) -> None:
        if self.writer is not None:
            self.writer.add_text(tag, markdown, step)

    def image(self, tag: str, image: np.ndarray, step: int) -> None:
        """An (height, width, 3) uint8 image, e.g. a rendered figure."""
        if self.writer is not None:
            self.writer.add_image(tag, image, step, dataformats="HWC")

    def hparams(self, hparams: dict[str, Any], metrics: dict[str, float]) -> None:
        if self.writer is not None:
            self.writer.add_hparams(hparams, metrics, run_name="hparams")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
