"""The one device resolver: training, decoding and benchmarks all pick devices through it; the
wait for a device's queued work; and the CPU threads training uses."""

from __future__ import annotations

import os

import torch

from llm_from_scratch.errors import ConfigError


def resolve_device(name: str, key: str = "device") -> torch.device:
    """The device called `name`, checked to be usable here; `auto` is CUDA when available, else
    the CPU. `key` names the setting in the error message (e.g. `training.device`)."""
    if name == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            device = torch.device(name)
            if device.type == "cuda":
                _check_cuda(device)
            else:
                torch.empty(0, device=device)
        except (RuntimeError, AssertionError) as error:
            message = str(error).splitlines()[0]
            raise ConfigError(f"{key}={name!r} is not usable: {message}") from None
    if device.type == "cuda":
        # cuDNN's attention plans a kernel for each new shape of its inputs on the host, and
        # training batches and every decoding step bring new lengths: its plans cost far more
        # host time than its kernels save on the GPU. Off once, for the whole process.
        torch.backends.cuda.enable_cudnn_sdp(False)
    return device


def _check_cuda(device: torch.device) -> None:
    """Raise where `device` is not a GPU here, without opening a CUDA context: one opened now
    would be on GPU 0, from every DDP rank, before each picks its own."""
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU is available")
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise RuntimeError(f"there are {torch.cuda.device_count()} CUDA GPUs")


def synchronize(device: torch.device) -> None:
    """Wait until `device` has done the work queued on it (a no-op on the CPU, which does it as
    it is asked): a clock read after this times the work, not its queueing."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under `taskset`)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def set_threads(threads: int | None) -> int:
    """Set torch's CPU threads to `threads`; None: `$OMP_NUM_THREADS` when set (torchrun sets it
    for several processes on one machine), else the usable cores. Returns the number set."""
    if threads is None:
        from_environment = os.environ.get("OMP_NUM_THREADS", "")
        threads = int(from_environment) if from_environment.isdigit() else usable_cores()
    torch.set_num_threads(max(1, threads))
    return torch.get_num_threads()


def contention(threads: int) -> str | None:
    """A warning when the load average says other processes already keep the cores busy, so
    `threads` more would share cores with them (each slowing the other); None otherwise."""
    cores = usable_cores()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load < 1.0 or load + threads <= cores + 0.5:
        return None
    advice = "set training.threads lower, or run" if threads > 1 else "run"
    return (
        f"the load average is {load:.1f} on the {cores} cores this process may use: another "
        f"process is busy on them, and training's {threads} thread(s) will share them (both run "
        f"slower); {advice} one at a time"
    )
