"""Learning curves read back from TensorBoard event files and plotted to a PNG."""

from __future__ import annotations

import pytest

from llm_from_scratch.errors import UserError
from llm_from_scratch.evaluation.curves import plot_curves, read_scalars
from llm_from_scratch.training.stats import RunLogger


def log_run(run_dir, points: dict[str, list[tuple[int, float]]]) -> None:
    logger = RunLogger(run_dir / "tensorboard")
    for tag, series in points.items():
        for step, value in series:
            logger.scalars({tag: value}, step)
    logger.close()


def test_scalars_come_back_in_step_order_and_a_resumed_run_keeps_the_newest(tmp_path):
    log_run(tmp_path, {"train/loss": [(1, 9.0), (2, 8.0)], "dev/bleu": [(2, 1.5)]})
    log_run(tmp_path, {"train/loss": [(2, 7.5), (3, 7.0)]})  # resumed from step 1's checkpoint
    scalars = read_scalars(tmp_path)
    assert scalars["train/loss"] == [(1, 9.0), (2, 7.5), (3, 7.0)]
    assert scalars["dev/bleu"] == [(2, 1.5)]


def test_the_newest_value_wins_whatever_its_event_files_name(tmp_path):
    # Files written in one second are named by a per-process counter, whose "….10" sorts before
    # the "….9" it follows: here the resumed run's file is renamed to sort first.
    log_run(tmp_path, {"train/loss": [(1, 9.0), (2, 8.0)]})
    (first,) = (tmp_path / "tensorboard").iterdir()
    log_run(tmp_path, {"train/loss": [(2, 7.5)]})
    (resumed,) = set((tmp_path / "tensorboard").iterdir()) - {first}
    resumed.rename(resumed.with_name("events.out.tfevents.0000000000.host.1.0"))
    assert read_scalars(tmp_path)["train/loss"] == [(1, 9.0), (2, 7.5)]


def test_plot_writes_a_png_with_every_run(tmp_path):
    for name, offset in (("first", 0.0), ("second", 1.0)):
        log_run(
            tmp_path / name, {"train/loss": [(1, 5.0 + offset), (2, 4.0)], "dev/bleu": [(2, 3.0)]}
        )
    output = tmp_path / "docs" / "curves.png"
    plot_curves([tmp_path / "first", tmp_path / "second"], output)
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_directory_without_event_files_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="no TensorBoard event files"):
        read_scalars(tmp_path)
