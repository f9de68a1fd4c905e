"""Train a translation model: `make train ARGS="model=small training.max_steps=2000"`."""

try:
    from llm_from_scratch.programs.train import main
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    main()
