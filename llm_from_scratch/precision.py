"""Mixed-precision selection, for training and decoding: the AMP set-up in one place."""

from __future__ import annotations

import functools
import logging
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch

from llm_from_scratch.errors import ConfigError

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "bf16", "fp16", "fp32")
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}
# `auto` trains a CPU in bf16 only when its matrix products beat fp32's by this much: near a tie,
# fp32's precision is worth more than a few per cent of speed.
CPU_BF16_MIN_SPEEDUP = 1.2


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


def select_precision(
    requested: str, device: torch.device, key: str = "training.precision"
) -> Precision:
    """`auto`: bf16 where the hardware computes it natively and faster, fp16 on older GPUs, else
    fp32. `key` names the setting in messages (e.g. `decoding.precision`)."""
    if requested == "auto":
        if device.type == "cuda":
            requested = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        else:
            requested = "bf16" if cpu_bf16_is_faster() else "fp32"
    if requested == "fp16" and device.type == "cpu":
        raise ConfigError(f"{key}=fp16 needs a GPU; use bf16 or fp32 on a CPU")
    if requested == "bf16" and device.type == "cpu" and not cpu_supports_bf16():
        # Without native instructions bf16 is emulated, orders of magnitude slower than fp32.
        log.warning(
            "%s=bf16, but this CPU has no native bf16 (AVX-512-bf16 or AMX): "
            "emulated bf16 is far slower than fp32 here; use %s=auto or fp32",
            key,
            key,
        )
    return Precision(device, requested)


def cpu_supports_bf16() -> bool:
    """AVX-512-bf16 or AMX: the CPU has bf16 instructions (which are not always faster)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


@functools.cache
def cpu_bf16_is_faster() -> bool:
    """Time bf16 against fp32 matrix products here, since native bf16 does not imply faster:
    some CPUs with AVX-512-bf16 but no AMX multiply bf16 more slowly than fp32."""
    if not cpu_supports_bf16():
        return False
    speedup = cpu_bf16_speedup()
    faster = speedup >= CPU_BF16_MIN_SPEEDUP
    log.info(
        "precision auto: bf16 matrix products %.2fx fp32's on this CPU; computing in %s",
        speedup,
        "bf16" if faster else "fp32",
    )
    return faster


def cpu_bf16_speedup(size: int = 768, rounds: int = 3) -> float:
    """bf16 over fp32 FLOP/s, best of interleaved rounds so that a busy moment hits both alike.

    Timed on one thread: the ratio is the instruction set's, and a product split over every core
    waits for the slowest, so a process finishing on one core (the tokenizing workers just
    before) would otherwise decide the precision of the whole run.
    """
    rates: dict[torch.dtype, float] = {torch.bfloat16: 0.0, torch.float32: 0.0}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(rounds):
            for dtype in rates:
                rates[dtype] = max(rates[dtype], matmul_rate(dtype, size, repeats=4))
    finally:
        torch.set_num_threads(threads)
    return rates[torch.bfloat16] / rates[torch.float32]


def matmul_rate(
    dtype: torch.dtype, size: int, repeats: int, device: torch.device | str = "cpu"
) -> float:
    """FLOP/s of a square matrix product on `device`, after one untimed warm-up product."""
    device = torch.device(device)
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    a @ b
    _wait_for(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    _wait_for(device)
    return 2 * size**3 * repeats / (time.perf_counter() - start)


def _wait_for(device: torch.device) -> None:
    """Until `device` has done the work queued on it: CUDA runs it asynchronously."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
