"""Plot runs' learning curves:
`.venv/bin/python scripts/plot_curves.py runs/default -o curves.png`."""

try:
    from llm_from_scratch.programs.plot_curves import run
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    run()
