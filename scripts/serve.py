"""Serve a model over HTTP: `.venv/bin/python scripts/serve.py`, then open http://127.0.0.1:8000."""

try:
    from llm_from_scratch.programs.serve import run
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    run()
