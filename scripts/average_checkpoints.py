"""Average checkpoints' weights: `python scripts/average_checkpoints.py --run-dir runs/default`."""

from llm_from_scratch.programs.average_checkpoints import run

if __name__ == "__main__":
    run()
