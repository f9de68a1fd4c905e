"""Test doubles and configs shared by the data-stage tests."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from llm_from_scratch.data.config import DataConfig

FIXTURES = Path(__file__).parent / "fixtures"


class WordTokenizer:
    """One token per whitespace-separated word, so expected lengths are easy to count by eye."""

    pad_id, bos_id, eos_id = 0, 1, 2
    hash = "word-tokenizer-v1"

    def __init__(self) -> None:
        self.encoded_texts = 0  # lets tests tell a cache hit from a recomputation

    def normalize(self, text: str) -> str:
        return unicodedata.normalize("NFKC", text)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        self.encoded_texts += len(texts)
        return [[3 + sum(map(ord, word)) % 97 for word in text.split()] for text in texts]


@pytest.fixture
def word_tokenizer() -> WordTokenizer:
    return WordTokenizer()


@pytest.fixture
def local_config(tmp_path: Path) -> Callable[..., DataConfig]:
    """Builds a config reading `<raw_dir>/<name>/` (default: tmp_path), nothing to download."""

    def build(name: str, **overrides: object) -> DataConfig:
        options: dict = {"source": "local", "raw_dir": str(tmp_path), "cache_dir": str(tmp_path)}
        return DataConfig(name=name, **{**options, **overrides})

    return build


@pytest.fixture
def tiny_enja(local_config: Callable[..., DataConfig]) -> DataConfig:
    """The 12/3/2-pair KyTea-segmented fixture (tests/data/fixtures/tiny_enja)."""
    return local_config(
        "tiny_enja", raw_dir=str(FIXTURES), detokenize_ja=True, max_tokens=12, batch_tokens=64
    )
