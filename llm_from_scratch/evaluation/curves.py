"""Learning curves: the scalars a run logged to TensorBoard, plotted side by side for runs.

python scripts/plot_curves.py runs/default runs/tanaka -o docs/learning_curves.png
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import RunDir

# (tag, panel title): what a reader compares between runs.
PANELS = (
    ("train/loss", "training loss (label-smoothed, per target token)"),
    ("dev/loss", "dev loss (per target token)"),
    ("dev/bleu", "dev BLEU, greedy (ja-mecab or 13a: the target's words)"),
)


def read_scalars(run_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series of `<run_dir>/tensorboard` as (step, value) pairs in step order.

    A resumed run writes several event files; a step logged twice keeps its newest value, by
    the events' own wall times: the files' names order them only across seconds (their counter
    sorts 10 before 9).
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_dir = RunDir(Path(run_dir)).tensorboard
    if not any(log_dir.glob("events.out.tfevents.*")):
        raise UserError(f"{log_dir} has no TensorBoard event files: is {run_dir} a run directory?")
    series: dict[str, dict[int, tuple[float, float]]] = {}  # tag: step: (wall time, value)
    for events in sorted(log_dir.glob("events.out.tfevents.*")):
        accumulator = EventAccumulator(str(events), size_guidance={"scalars": 0})
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            points = series.setdefault(tag, {})
            for event in accumulator.Scalars(tag):
                logged = points.get(event.step)
                if logged is None or event.wall_time >= logged[0]:
                    points[event.step] = (event.wall_time, event.value)
    return {
        tag: [(step, value) for step, (_, value) in sorted(points.items())]
        for tag, points in series.items()
    }


def plot_curves(run_dirs: Sequence[str | Path], output: str | Path) -> None:
    """One panel per entry of PANELS, one line per run (labelled by its directory name)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("plotting needs matplotlib: pip install -e '.[dev]'") from None
    runs = {Path(run_dir).name: read_scalars(run_dir) for run_dir in run_dirs}
    figure, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 3.8))
    for axis, (tag, title) in zip(axes, PANELS, strict=True):
        for name, series in runs.items():
            if tag in series:
                steps, values = zip(*series[tag], strict=True)
                axis.plot(steps, values, label=name, marker="." if tag.startswith("dev") else None)
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("optimizer step")
        axis.grid(alpha=0.3)
    axes[0].legend()
    figure.tight_layout()
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110)
    plt.close(figure)
