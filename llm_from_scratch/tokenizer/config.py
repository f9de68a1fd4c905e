"""Schema of the `tokenizer` config group (`configs/tokenizer/*.yaml`)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_from_scratch.errors import ConfigError

NORMALIZATIONS = ("none", "nfkc")


@dataclass
class TokenizerConfig:
    vocab_size: int = 8000
    shared: bool = False  # one joint vocabulary for both languages (allows three-way tying)
    character_coverage: float = 0.9995
    normalization: str = "nfkc"
    dir: str = "data/tokenizers"

    def __post_init__(self) -> None:
        if self.vocab_size < 300:
            raise ConfigError(
                f"tokenizer.vocab_size={self.vocab_size} is too small: "
                "256 byte-fallback tokens and the special tokens need room"
            )
        if not 0.0 < self.character_coverage <= 1.0:
            raise ConfigError(
                f"tokenizer.character_coverage={self.character_coverage} must be in (0, 1]"
            )
        if self.normalization not in NORMALIZATIONS:
            raise ConfigError(
                f"tokenizer.normalization={self.normalization!r} must be one of "
                f"{', '.join(NORMALIZATIONS)}"
            )
