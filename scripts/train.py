"""Train a translation model: `make train ARGS="model=small training.max_steps=2000"`."""

import sys

# What `--help` lists besides the config groups: each key is in the TrainConfig schema.
SETTINGS = {
    "name=NAME": "the run, in runs/NAME/ (default: default); run it again to resume",
    "training.max_time=30m": "the time budget (1800, 1h; null: none); it picks the rung",
    "training.max_steps=N": "the step count (with a time budget: its cap)",
    "training.device=cpu": "auto (CUDA when available), cpu, cuda:0",
    "training.threads=N": "CPU threads (default: the usable cores)",
    "training.lr=0.001": "the peak learning rate",
    "training.init_from=run:NAME": "fine-tune the final model of runs/NAME/ (or a checkpoint)",
    "paths.run_dir=DIR": "the run's directory, instead of runs/NAME/",
}

try:
    # `--help` is answered before Hydra and torch load, which take seconds.
    from llm_from_scratch.programs.command import answer_help

    answer_help(
        sys.argv[1:],
        "train.py",
        "train",
        "Fetch the data, train or load the tokenizers, train a model in runs/NAME/ and average "
        "its last snapshots. Settings are Hydra overrides; docs/training.md has them all.",
        SETTINGS,
    )
    from llm_from_scratch.programs.train import main
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

if __name__ == "__main__":
    main()
