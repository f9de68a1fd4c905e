"""English→Japanese NMT from scratch, tokenizer to evaluation."""

__version__ = "0.1.0"
