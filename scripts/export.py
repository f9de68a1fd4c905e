"""Export a run's model for CTranslate2: `.venv/bin/python scripts/export.py`."""

try:
    from llm_from_scratch.programs.export import run
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    run()
