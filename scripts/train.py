"""Train a translation model: `make train ARGS="model=small training.max_steps=2000"`."""

from llm_from_scratch.programs.train import main

if __name__ == "__main__":
    main()
