"""`scripts/average_checkpoints.py`: average the weights of checkpoints of one run into a new
inference checkpoint.

    python scripts/average_checkpoints.py runs/default/snapshots/*.pt -o runs/default/averaged.pt
    python scripts/average_checkpoints.py --run-dir runs/default --last 5

Training with `training.keep_snapshots` >= 2 already writes `<run_dir>/averaged.pt` this way.
With `--run-dir`, a snapshot gone from those it would average (deleted) is refused: the average
would silently be of fewer, or older, snapshots. `--allow-gaps` averages the ones left.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from llm_from_scratch.atomic import check_writable
from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint
from llm_from_scratch.paths import RunDir
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.training.averaging import average_checkpoints, missing_snapshot


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="*", type=Path, help="checkpoints to average")
    parser.add_argument("--run-dir", type=Path, help="average the run's newest snapshots")
    parser.add_argument("--last", type=int, default=5, help="how many snapshots of --run-dir")
    parser.add_argument("-o", "--output", type=Path, help="default: <run-dir>/averaged.pt")
    parser.add_argument(
        "--allow-gaps", action="store_true", help="average --run-dir's snapshots left after some"
    )
    args = parser.parse_args(argv)
    paths = list(args.checkpoints)
    run_dir = RunDir(args.run_dir) if args.run_dir is not None else None
    if run_dir is not None:
        if args.last < 1:
            raise CheckpointError(f"--last={args.last} must be at least 1")
        paths += run_dir.snapshot_paths()[-args.last :]
        if not args.allow_gaps:
            check_no_gap(run_dir, args.last)
    output = args.output or (run_dir.averaged if run_dir is not None else None)
    if output is None:
        parser.error("give --output (or --run-dir)")
    if not paths:
        raise CheckpointError(
            "no checkpoints to average (give paths or a --run-dir with snapshots)"
        )
    check_writable(output.parent, str(output), "give another --output")  # before reading
    averaged = average_checkpoints(paths, output)
    steps = ", ".join(str(step) for step in averaged["averaged_steps"] if step is not None)
    print(f"averaged {len(paths)} checkpoints (steps {steps or 'not recorded'}) into {output}")
    return 0


def check_no_gap(run_dir: RunDir, last: int) -> None:
    """Refuse when a snapshot is gone from the `last` newest that the run wrote (no more than it
    keeps)."""
    snapshots = run_dir.snapshot_paths()
    if not snapshots:
        return
    training = load_checkpoint(snapshots[-1], mmap=True, verify=False)["config"].get("training", {})
    count = min(last, training.get("keep_snapshots", last))
    step = missing_snapshot(run_dir, count)
    if step is not None:
        raise CheckpointError(
            f"the snapshot of step {step} is gone from the {count} newest of {run_dir} "
            f"(deleted?): averaging the {len(snapshots[-last:])} left is another average; pass "
            "--allow-gaps to average them anyway"
        )


def run() -> None:
    run_main(main)
