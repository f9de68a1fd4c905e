"""The one device resolver: training, decoding and benchmarks all pick devices through it; the
wait for a device's queued work; and the CPU threads training uses."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

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
    """A warning when other processes keep the cores busy, so `threads` more would share cores
    with them (each slowing the other); None otherwise. The load average says so first; where
    the kernel tells how many threads are runnable now, they must say so too: the load average
    lags, and still counts a job that ended a minute ago."""
    cores = usable_cores()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load < 1.0 or load + threads <= cores + 0.5:
        return None
    others = running_elsewhere()
    if others is not None and others + threads <= cores:
        return None
    now = "" if others is None else f" and {others} other thread(s) run now"
    advice = "set training.threads lower, or run" if threads > 1 else "run"
    return (
        f"the load average is {load:.1f}{now} on the {cores} cores this process may use: "
        f"another process is busy on them, and training's {threads} thread(s) will share them "
        f"(both run slower); {advice} one at a time"
    )


RUNNABLE_SAMPLES = 9  # readings of the runnable count, `RUNNABLE_INTERVAL` seconds apart
RUNNABLE_INTERVAL = 0.02


def running_elsewhere(loadavg: Path = Path("/proc/loadavg")) -> int | None:
    """Threads of other processes runnable now: the median of a few readings of the kernel's
    count (the fourth field of `loadavg`, `runnable/all`, which counts the reader), so that a
    passing kernel thread does not count; None where the file is not there (not Linux)."""
    if not loadavg.is_file():
        return None
    counts = []
    for reading in range(RUNNABLE_SAMPLES):
        if reading:
            time.sleep(RUNNABLE_INTERVAL)
        counts.append(int(loadavg.read_text().split()[3].split("/")[0]) - 1)
    return max(0, int(statistics.median(counts)))
