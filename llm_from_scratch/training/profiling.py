"""`training.profile_steps`: torch.profiler over a few steps of a run, to see where a step's time
goes: fetching its batches, the update itself, and the bookkeeping between updates (logging,
checks, the progress bar), on the host and, on CUDA, on the GPU.

The steps traced come after the first `SKIPPED_STEPS`, whose one-off costs (allocator growth,
lazy CUDA initialisation, compilation) would swamp them. The profile goes into `<run>/profile/`:
`trace.json` for Perfetto or chrome://tracing, and `summary.txt`, the operators and ranges by
total host time and, on CUDA, by GPU time; one log line gives the breakdown of a step.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import EventList
from torch.profiler import ProfilerActivity, record_function

logger = logging.getLogger(__name__)

SKIPPED_STEPS = 5
DATA_RANGE = "loop/data"
UPDATE_RANGE = "loop/update"
STEP_RANGES = "ProfilerStep*"  # key_averages' name for the profiler's own per-step ranges
_TABLE_ROWS = 30

T = TypeVar("T")


def fetched(items: Iterable[T]) -> Iterator[T]:
    """`items`, each fetched inside the `loop/data` range."""
    iterator = iter(items)
    while True:
        with record_function(DATA_RANGE):
            try:
                item = next(iterator)
            except StopIteration:
                return
        yield item


class StepProfiler:
    """A context around the training loop that profiles `steps` steps (none where `steps` is 0
    or `out_dir` is None, as on DDP ranks other than the first); `step()` ends each step."""

    def __init__(self, steps: int, out_dir: Path | None, device: torch.device):
        self.out_dir = out_dir
        self.on_cuda = device.type == "cuda"
        self.profile: torch.profiler.profile | None = None
        if steps and out_dir is not None:
            activities = [ProfilerActivity.CPU]
            if self.on_cuda:
                activities.append(ProfilerActivity.CUDA)
            self.profile = torch.profiler.profile(
                activities=activities,
                schedule=torch.profiler.schedule(
                    wait=SKIPPED_STEPS - 1, warmup=1, active=steps, repeat=1
                ),
                on_trace_ready=self._write,
            )

    def __enter__(self) -> StepProfiler:
        if self.profile is not None:
            self.profile.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.profile is not None:
            self.profile.__exit__(*exc)

    def step(self) -> None:
        """One step is done (past the traced steps, the profiler's schedule does nothing)."""
        if self.profile is not None:
            self.profile.step()

    def _write(self, profile: torch.profiler.profile) -> None:
        assert self.out_dir is not None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        profile.export_chrome_trace(str(self.out_dir / "trace.json"))
        events = profile.key_averages()
        tables = [f"# by total host time\n{events.table('cpu_time_total', row_limit=_TABLE_ROWS)}"]
        if self.on_cuda:
            by_gpu = events.table("self_device_time_total", row_limit=_TABLE_ROWS)
            tables.append(f"# by GPU time\n{by_gpu}")
        (self.out_dir / "summary.txt").write_text("\n".join(tables), encoding="utf-8")
        logger.info("%s", self.breakdown(events))

    def breakdown(self, events: EventList) -> str:
        """One line: a profiled step's wall time (its `ProfilerStep` range, from one `step()` to
        the next), and its host time fetching data and updating (and the GPU's busy time, on
        CUDA), each per step."""
        # On CUDA each range also shows up as a GPU annotation of the same name: the host's is
        # the one that times it.
        host = [event for event in events if event.device_type == DeviceType.CPU]
        traced = next(event for event in host if event.key == STEP_RANGES)
        steps = traced.count
        per_step = {event.key: event.cpu_time_total / 1e3 / steps for event in host}
        parts = [
            f"data {per_step.get(DATA_RANGE, 0.0):.1f} ms",
            f"update {per_step.get(UPDATE_RANGE, 0.0):.1f} ms",
        ]
        if self.on_cuda:
            # The kernels themselves: an operator's device time counts its kernels again.
            kernels = [
                event
                for event in events
                if event.device_type != DeviceType.CPU and not event.is_user_annotation
            ]
            busy = sum(event.self_device_time_total for event in kernels) / 1e3 / steps
            parts.append(f"GPU busy {busy:.1f} ms")
        return (
            f"profiled {steps} steps: {per_step[STEP_RANGES]:.1f} ms a step; "
            f"{', '.join(parts)} (host, profiler's overhead included): {self.out_dir}"
        )
