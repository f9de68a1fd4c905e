"""Schema of the `tokenizer` config group: its defaults are `make train`'s tokenizers, and each
preset (`configs/tokenizer/*.yaml`) holds only the keys it changes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from llm_from_scratch.errors import ConfigError, check_choice, check_range
from llm_from_scratch.tokenizer.pretokenize import NORMALIZATIONS, PRETOKENIZERS
from llm_from_scratch.tokenizer.special_tokens import RESERVED

MIN_VOCAB_SIZE = 300  # 256 byte-fallback tokens, the special tokens, and room for characters


@dataclass
class TokenizerConfig:
    """Separate BPE vocabularies for English and Japanese (character BPE with byte fallback). 8k
    each: for the everyday corpora's 150k pairs they beat 4k ones on both dev sets at equal steps
    (docs/results.md, The everyday default)."""

    vocab_size: int = 8000
    shared: bool = False  # one joint vocabulary for both languages (allows three-way tying)
    # The rarest 0.05% of character occurrences are spelled as UTF-8 bytes.
    character_coverage: float = 0.9995
    normalization: str = "nfkc"  # the source side's (a shared vocabulary's: both sides')
    # The target side's: "none" keeps the corpus's own forms (full-width digits, ？ and ！ in
    # Japanese), which the model then writes, as the references do.
    target_normalization: str = "none"
    pretokenizer: str = "okurigana"  # how text is cut before BPE: see tokenizer/pretokenize.py
    special_tokens: list[str] = field(default_factory=list)  # user-defined, after <pad> <bos> <eos>
    # Learn from at most this many sentences per side, chosen by a hash seeded with
    # `sample_seed` (tokenizer/sampling.py); a smaller corpus is used whole.
    max_sentences: int = 2_000_000
    sample_seed: int = 1234

    def __post_init__(self) -> None:
        check_training_options(
            self.vocab_size,
            self.character_coverage,
            self.normalization,
            self.pretokenizer,
            self.special_tokens,
        )
        check_range("tokenizer.max_sentences", self.max_sentences, 1)
        check_choice("tokenizer.target_normalization", self.target_normalization, NORMALIZATIONS)
        if self.shared and self.target_normalization != self.normalization:
            raise ConfigError(
                f"tokenizer.shared=true trains one tokenizer for both sides: "
                f"tokenizer.target_normalization={self.target_normalization!r} must equal "
                f"tokenizer.normalization={self.normalization!r}"
            )


def check_training_options(
    vocab_size: int,
    character_coverage: float,
    normalization: str,
    pretokenizer: str,
    special_tokens: Sequence[str],
) -> None:
    """Raise `ConfigError` naming the first invalid option (shared by the config and the API)."""
    if vocab_size < MIN_VOCAB_SIZE:
        raise ConfigError(
            f"tokenizer.vocab_size={vocab_size} is too small: "
            "256 byte-fallback tokens and the special tokens need room"
        )
    check_range("tokenizer.character_coverage", character_coverage, 0, 1, low_open=True)
    check_choice("tokenizer.normalization", normalization, NORMALIZATIONS)
    check_choice("tokenizer.pretokenizer", pretokenizer, PRETOKENIZERS)
    for token in special_tokens:
        if not isinstance(token, str) or not token:
            raise ConfigError(f"tokenizer.special_tokens: {token!r} is not a non-empty string")
        if token in RESERVED:
            raise ConfigError(f"tokenizer.special_tokens: {token!r} is reserved (always present)")
    if len(set(special_tokens)) != len(special_tokens):
        raise ConfigError(f"tokenizer.special_tokens={list(special_tokens)} repeats a token")
