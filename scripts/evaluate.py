"""Score a checkpoint on a held-out split: `make eval ARGS="split=test"`."""

import sys

from llm_from_scratch.cli import exit_on_user_error, import_stage

if __name__ == "__main__":
    with exit_on_user_error():
        sys.exit(import_stage("evaluation.evaluate_cli", "evaluation").main(sys.argv[1:]))
