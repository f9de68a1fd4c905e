"""From-scratch BPE tokenizer: character BPE with byte fallback (see `bpe.py`)."""

from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.file_format import TokenizerError

__all__ = ["BPETokenizer", "TokenizerError"]
