"""Average a run's checkpoints:
`.venv/bin/python scripts/average_checkpoints.py --run-dir runs/default`."""

try:
    from llm_from_scratch.programs.average_checkpoints import run
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    run()
