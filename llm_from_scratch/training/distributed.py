"""torchrun (DDP) awareness: which process this is, and collective helpers that are no-ops alone."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from llm_from_scratch.device import resolve_device
from llm_from_scratch.precision import Precision, select_precision


@dataclass(frozen=True)
class Distributed:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Only the main process writes logs and checkpoints."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    def any(self, flag: bool) -> bool:
        """True on every process when `flag` is True on any (stopping must be unanimous)."""
        if not self.enabled:
            return flag
        value = torch.tensor([int(flag)])
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def sum(self, value: int) -> int:
        if not self.enabled:
            return value
        total = torch.tensor([value], dtype=torch.long)
        dist.all_reduce(total)
        return int(total.item())

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def init_distributed(device_type: str) -> Distributed:
    """Join the process group torchrun describes in the environment; a single process otherwise."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size == 1:
        return Distributed()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        if device_type == "cuda":
            # This rank's own GPU, before anything touches CUDA: otherwise every rank opens a
            # context on GPU 0. Collectives of small CPU tensors (the stop flags) go through gloo.
            device = torch.device("cuda", local_rank)
            torch.cuda.set_device(device)
            dist.init_process_group(backend="cuda:nccl,cpu:gloo", device_id=device)
        else:
            dist.init_process_group(backend="gloo")
    return Distributed(dist.get_rank(), world_size, local_rank)


def shutdown_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def training_precision(device: str, precision: str, ranks: Distributed) -> Precision:
    """The device (this rank's own GPU under DDP) and precision a run trains in, from
    `training.device` and `training.precision`."""
    chosen = resolve_device(device, "training.device")
    if chosen.type == "cuda" and ranks.enabled:
        chosen = torch.device("cuda", ranks.local_rank)
    picked = select_precision(precision, chosen)
    if ranks.any(picked.name == "fp32"):  # `auto` times each rank's CPU; all must agree
        picked = Precision(chosen, "fp32")
    if chosen.type == "cuda" and picked.name == "fp32":
        # TF32 matrix products: fp32's range with a 10-bit mantissa, on the tensor cores.
        torch.set_float32_matmul_precision("high")
    return picked
