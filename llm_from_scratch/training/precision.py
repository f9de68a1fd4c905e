"""Device and mixed-precision selection: the AMP set-up in one place."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

from llm_from_scratch.errors import ConfigError

log = logging.getLogger(__name__)

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}


@dataclass(frozen=True)
class Precision:
    device: torch.device
    name: str  # bf16 | fp16 | fp32

    @property
    def dtype(self) -> torch.dtype | None:
        return AUTOCAST_DTYPES[self.name]

    def autocast(self) -> AbstractContextManager:
        return torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None)

    def grad_scaler(self) -> torch.amp.GradScaler:
        """fp16 gradients underflow without loss scaling; bf16 and fp32 need none (disabled)."""
        return torch.amp.GradScaler(self.device.type, enabled=self.name == "fp16")


def select_device(requested: str) -> torch.device:
    """`auto`: the current CUDA device when there is one, else the CPU."""
    if requested == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    device = torch.device(requested)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"trainer.device={requested!r} but CUDA is not available here")
    return device


def select_precision(requested: str, device: torch.device) -> Precision:
    """`auto`: bf16 where the hardware computes it natively, fp16 on older GPUs, else fp32."""
    if requested == "auto":
        if device.type == "cuda":
            requested = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        else:
            requested = "bf16" if cpu_supports_bf16() else "fp32"
    if requested == "fp16" and device.type == "cpu":
        raise ConfigError("trainer.precision=fp16 needs a GPU; use bf16 or fp32 on a CPU")
    if requested == "bf16" and device.type == "cpu" and not cpu_supports_bf16():
        # Measured on an AVX2-only EPYC: a bf16 GEMM ran at 1 GFLOP/s against 157 in fp32.
        log.warning(
            "trainer.precision=bf16, but this CPU has no native bf16 (AVX-512-bf16 or AMX): "
            "emulated bf16 is over 100x slower than fp32 here; use trainer.precision=auto or fp32"
        )
    return Precision(device, requested)


def cpu_supports_bf16() -> bool:
    """AVX-512-bf16 or AMX: bf16 matrix products run natively (2.3x fp32 on such a CPU)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False
