"""`scripts/plot_curves.py`: plot the learning curves of runs into one PNG.

python scripts/plot_curves.py runs/default runs/spe_tokenized -o docs/learning_curves.png
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from llm_from_scratch.atomic import check_writable
from llm_from_scratch.evaluation.curves import plot_curves
from llm_from_scratch.programs.command import run_main


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", help="run directories (each with tensorboard/)")
    parser.add_argument("-o", "--output", default="docs/learning_curves.png")
    args = parser.parse_args(argv)
    output = Path(args.output)
    check_writable(output.parent, str(output), "give another --output")  # before reading logs
    plot_curves(args.run_dirs, output)
    print(f"wrote {args.output}")
    return 0


def run() -> None:
    run_main(main)
