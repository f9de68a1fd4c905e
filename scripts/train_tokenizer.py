"""Train the BPE tokenizer(s) on a dataset's train split: `make tokenizer`."""

import sys

try:
    # `--help` is answered before Hydra and torch load, which take seconds.
    from llm_from_scratch.programs.command import answer_help

    answer_help(
        sys.argv[1:],
        "train_tokenizer.py",
        "train_tokenizer",
        "Train the BPE tokenizer(s) `make train` would use on a dataset's train split (or load "
        "the saved ones) and report how they compress it.",
        {
            "tokenizer.vocab_size=N": "the vocabulary size",
            "paths.tokenizer_dir=DIR": "where the tokenizers go, instead of data/tokenizers/",
        },
    )
    from llm_from_scratch.programs.train_tokenizer import main
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    main()
