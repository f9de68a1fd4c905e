"""Score a model on a held-out split: `.venv/bin/python scripts/evaluate.py --split dev`."""

try:
    from llm_from_scratch.programs.evaluate import run
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    run()
