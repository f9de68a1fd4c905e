"""Tokenizer training samples at most `tokenizer.max_sentences` sentences a side, by content."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.tokenizer.sampling import sample_indices, sentence_keys
from llm_from_scratch.training.tokenizers import (
    load_or_train_tokenizers,
    read_train_texts,
    sample_train_texts,
)

TEXTS = [f"sentence number {i} of {i % 7} kinds" for i in range(300)] + ["a copy"] * 40


def sample(texts: list[str], max_sentences: int, seed: int = 1234) -> list[str]:
    return [texts[i] for i in sample_indices(sentence_keys(texts, seed), max_sentences)]


def test_a_corpus_no_larger_than_the_limit_is_used_whole_in_its_order():
    assert sample(TEXTS, len(TEXTS)) == TEXTS
    assert list(sample_indices(sentence_keys(TEXTS, 1), 10_000)) == list(range(len(TEXTS)))


def test_the_sample_has_the_limit_and_is_the_same_texts_however_the_corpus_is_ordered():
    shuffled = TEXTS[:]
    random.Random(0).shuffle(shuffled)
    first, second = sample(TEXTS, 100), sample(shuffled, 100)
    assert len(first) == len(second) == 100
    assert Counter(first) == Counter(second)
    assert sample(TEXTS, 100) == first  # deterministic
    assert Counter(sample(TEXTS, 100, seed=99)) != Counter(first)  # the seed chooses


def test_the_sample_keeps_corpus_order_and_copies_of_a_sentence_together():
    indices = sample_indices(sentence_keys(TEXTS, 1234), 200)
    assert list(indices) == sorted(set(indices.tolist()))
    copies = sum(TEXTS[i] == "a copy" for i in indices)
    assert copies in (0, 40)  # 40 copies of one key: all in, or all out (unless cut at the limit)


def test_copies_at_the_limit_are_cut_to_fill_it_exactly():
    keys = np.array([5, 1, 5, 5, 3], dtype=np.uint64)
    assert list(sample_indices(keys, 3)) == [0, 1, 4]


def test_max_sentences_must_be_positive():
    with pytest.raises(ConfigError, match=r"tokenizer\.max_sentences=0 must be at least 1"):
        TokenizerConfig(max_sentences=0)


def write_corpus(root: Path) -> tuple[DataConfig, PathsConfig]:
    (root / "tiny").mkdir(parents=True)
    en = [f"the house number {i} is red ." for i in range(60)] + ["hello there ."] * 20
    ja = [f"{i}番の家は赤い。" for i in range(60)] + ["こんにちは。"] * 20
    (root / "tiny" / "train.en").write_text("".join(t + "\n" for t in en), encoding="utf-8")
    (root / "tiny" / "train.ja").write_text("".join(t + "\n" for t in ja), encoding="utf-8")
    data = DataConfig(name="tiny", source="local")
    data.corpus.splits = {"train": "train", "dev": "train", "test": "train"}
    paths = PathsConfig(root=str(root), raw_dir=str(root), tokenizer_dir=str(root / "tok"))
    return data, paths


def test_tokenizers_learn_from_the_sample_of_each_side(tmp_path):
    data, paths = write_corpus(tmp_path)
    tok_cfg = TokenizerConfig(vocab_size=320, max_sentences=25)
    src, tgt = sample_train_texts(data, tok_cfg, paths)
    all_src, all_tgt = read_train_texts(data, paths)
    assert (src, tgt) == (sample(all_src, 25), sample(all_tgt, 25))
    source, target = load_or_train_tokenizers(data, tok_cfg, paths)
    assert source.to_json() == BPETokenizer.train(src, 320).to_json()
    assert target.to_json() == BPETokenizer.train(tgt, 320, normalization="none").to_json()
    whole = BPETokenizer.train(all_src, 320)
    assert source.to_json() != whole.to_json()


def test_a_limit_above_the_corpus_size_trains_on_the_whole_corpus(tmp_path):
    data, paths = write_corpus(tmp_path)
    source, _ = load_or_train_tokenizers(data, TokenizerConfig(vocab_size=320), paths)
    assert source.to_json() == BPETokenizer.train(read_train_texts(data, paths)[0], 320).to_json()
