"""Score a checkpoint on a held-out split: `python scripts/evaluate.py split=test`."""

from llm_from_scratch.programs.evaluate import run

if __name__ == "__main__":
    run()
