"""The tokenizer stage: character BPE with byte fallback, trained from scratch.

bpe.py            BPETokenizer: train, encode, decode, word counts, save/load as versioned JSON
bpe_training.py   the merge-learning loop, and the word counts
file_format.py    the JSON file format and its checks (TokenizerError)
pretokenize.py    normalization and the pre-tokenizers
special_tokens.py the special tokens, the only place their ids are fixed
config.py         TokenizerConfig, the `tokenizer` config group
"""
