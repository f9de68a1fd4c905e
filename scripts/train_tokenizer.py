"""Train the BPE tokenizer(s) on a dataset's train split: `make tokenizer`."""

try:
    from llm_from_scratch.programs.train_tokenizer import main
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    main()
