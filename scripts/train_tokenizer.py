"""Train the BPE tokenizer(s) on a dataset's train split: `make tokenizer`."""

from llm_from_scratch.programs.train_tokenizer import main

if __name__ == "__main__":
    main()
