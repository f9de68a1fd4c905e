"""Fetch a dataset's raw files: `make data ARGS="data=tanaka_graded"`."""

import sys

try:
    # `--help` is answered before Hydra loads, which takes seconds.
    from llm_from_scratch.programs.command import answer_help

    answer_help(
        sys.argv[1:],
        "prepare_data.py",
        "prepare_data",
        "Fetch a dataset's raw files into data/raw/NAME/ (every member's, for a mixture): "
        "downloaded, or copied from $DATA_MIRROR.",
        {"paths.raw_dir=DIR": "where the files go, instead of data/raw/"},
    )
    from llm_from_scratch.programs.prepare_data import main
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    main()
