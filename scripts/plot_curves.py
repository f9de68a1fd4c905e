"""Plot the learning curves of runs into one PNG.

python scripts/plot_curves.py runs/default runs/spe_tokenized -o docs/learning_curves.png
"""

import argparse
import sys

from llm_from_scratch.cli import exit_on_user_error
from llm_from_scratch.evaluation.curves import plot_curves

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", help="run directories (each with tensorboard/)")
    parser.add_argument("-o", "--output", default="docs/learning_curves.png")
    args = parser.parse_args()
    with exit_on_user_error():
        plot_curves(args.run_dirs, args.output)
        print(f"wrote {args.output}")
    sys.exit(0)
