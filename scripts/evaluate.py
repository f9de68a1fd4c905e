"""Score a checkpoint on a held-out split: `make eval ARGS="split=test"`."""

import sys

from llm_from_scratch.cli import exit_on_user_error
from llm_from_scratch.evaluation.evaluate_cli import main

if __name__ == "__main__":
    with exit_on_user_error():
        sys.exit(main(sys.argv[1:]))
