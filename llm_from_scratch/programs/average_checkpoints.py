"""`scripts/average_checkpoints.py`: average the weights of checkpoints of one run into a new
inference checkpoint.

    python scripts/average_checkpoints.py runs/default/snapshots/*.pt -o runs/default/averaged.pt
    python scripts/average_checkpoints.py --run-dir runs/default --last 5

Training with `training.keep_snapshots` >= 2 already writes `<run_dir>/averaged.pt` this way.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from llm_from_scratch.checkpoint import CheckpointError
from llm_from_scratch.programs.common import run_main
from llm_from_scratch.training.averaging import average_checkpoints, snapshot_paths


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="*", type=Path, help="checkpoints to average")
    parser.add_argument("--run-dir", type=Path, help="average the run's newest snapshots")
    parser.add_argument("--last", type=int, default=5, help="how many snapshots of --run-dir")
    parser.add_argument("-o", "--output", type=Path, help="default: <run-dir>/averaged.pt")
    args = parser.parse_args(argv)
    paths = list(args.checkpoints)
    if args.run_dir is not None:
        if args.last < 1:
            raise CheckpointError(f"--last={args.last} must be at least 1")
        paths += snapshot_paths(args.run_dir)[-args.last :]
    output = args.output or (args.run_dir / "averaged.pt" if args.run_dir else None)
    if output is None:
        parser.error("give --output (or --run-dir)")
    if not paths:
        raise CheckpointError(
            "no checkpoints to average (give paths or a --run-dir with snapshots)"
        )
    average_checkpoints(paths, output)
    print(f"averaged {len(paths)} checkpoints into {output}")
    return 0


def run() -> None:
    run_main(main)
