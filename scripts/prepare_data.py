"""Fetch a dataset's raw files: `make data ARGS="data=tanaka_graded"`."""

from llm_from_scratch.programs.prepare_data import main

if __name__ == "__main__":
    main()
