"""Test doubles, configs and paths shared by the data-stage tests."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from llm_from_scratch.data.config import CleaningConfig, CorpusConfig, DataConfig, LoadingConfig
from llm_from_scratch.paths import PathsConfig

FIXTURES = Path(__file__).parent / "fixtures"


class WordTokenizer:
    """One token per whitespace-separated word, so expected lengths are easy to count by eye."""

    pad_id, bos_id, eos_id = 0, 1, 2
    vocab_size = 100  # 3 specials, 97 word ids
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
def paths(tmp_path: Path) -> PathsConfig:
    """Raw files read from `<tmp_path>/<name>/`; caches and tokenizers written under tmp_path."""
    return PathsConfig(
        root=str(tmp_path),
        raw_dir=str(tmp_path),
        cache_dir=str(tmp_path),
        tokenizer_dir=str(tmp_path / "tokenizers"),
    )


@pytest.fixture
def tiny_paths(paths: PathsConfig) -> PathsConfig:
    """`paths`, but reading the raw files of the fixtures (tests/data/fixtures/<name>/)."""
    return dataclasses.replace(paths, raw_dir=str(FIXTURES))


def data_config(
    name: str,
    corpus: dict | None = None,
    cleaning: dict | None = None,
    loading: dict | None = None,
    **top: object,
) -> DataConfig:
    """A local-only `DataConfig` (nothing to download) with the given sections' fields."""
    return DataConfig(
        name=name,
        **{"source": "local", **top},
        corpus=CorpusConfig(**(corpus or {})),
        cleaning=CleaningConfig(**(cleaning or {})),
        loading=LoadingConfig(**(loading or {})),
    )


@pytest.fixture
def local_config() -> Callable[..., DataConfig]:
    """Builds a local-only config: `local_config(name, corpus={...}, cleaning={...}, ...)`."""
    return data_config


@pytest.fixture
def tiny_enja() -> DataConfig:
    """The 12/3/2-pair KyTea-segmented fixture (tests/data/fixtures/tiny_enja): use `tiny_paths`."""
    return data_config(
        "tiny_enja",
        corpus={"splits": {"train": "train", "dev": "dev", "test": "test"}, "detokenize_ja": True},
        cleaning={"max_tokens": 12},
        loading={"batch_tokens": 64},
    )
