"""Fixtures of the decoding tests; see `builders.py` for the tiny copy model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.tokenizer.bpe import BPETokenizer

from .builders import random_sources, save_tiny_checkpoint, tiny_tokenizer, train_copy_model


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The tiny models' matrices are too small to gain from threads, and on a busy machine
    OpenMP threads waiting for a core add milliseconds to every operation."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tokenizer() -> BPETokenizer:
    return tiny_tokenizer()


@pytest.fixture(scope="session")
def copy_model(tokenizer: BPETokenizer) -> Seq2SeqTransformer:
    return train_copy_model(tokenizer)


@pytest.fixture
def sources(tokenizer: BPETokenizer) -> list[list[int]]:
    return random_sources(tokenizer, 10, torch.Generator().manual_seed(1))


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory, tokenizer: BPETokenizer) -> Path:
    return save_tiny_checkpoint(tmp_path_factory.mktemp("run") / "best.pt", tokenizer)
