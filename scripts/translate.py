"""Translate with a run's model, in its direction (English to Japanese by default):
`.venv/bin/python scripts/translate.py "Hello."`."""

try:
    from llm_from_scratch.programs.translate import run
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    run()
