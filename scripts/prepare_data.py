"""Fetch a dataset's raw files: `make data ARGS="data=tanaka_graded"`."""

try:
    from llm_from_scratch.programs.prepare_data import main
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    main()
