"""Average the weights of checkpoints of one run into a new inference checkpoint.

    python scripts/average_checkpoints.py runs/default/snapshots/*.pt -o runs/default/averaged.pt
    python scripts/average_checkpoints.py --run-dir runs/default --last 5

Training with `trainer.keep_snapshots` >= 2 already writes `<run_dir>/averaged.pt` this way.
"""

import argparse
import sys
from pathlib import Path

from llm_from_scratch.cli import exit_on_user_error
from llm_from_scratch.training.averaging import average_checkpoints, snapshot_paths
from llm_from_scratch.training.checkpoint import CheckpointError


def main(argv: list[str]) -> int:
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


if __name__ == "__main__":
    with exit_on_user_error():
        sys.exit(main(sys.argv[1:]))
