"""The transliteration corpus: the name dictionary's one-word foreign names and their katakana
(data/name_pairs.py), from the test session's small dictionary (tests/conftest.py)."""

from __future__ import annotations

import gzip

import pytest

from llm_from_scratch import name_dictionary
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.name_pairs import name_pairs, split_of, write_name_pairs
from llm_from_scratch.data.sources import DataSourceError, fetch_dataset
from llm_from_scratch.name_dictionary import load_dictionary
from llm_from_scratch.paths import PathsConfig


def read(path):
    return gzip.decompress(path.read_bytes()).decode().splitlines()


def test_one_word_foreign_names_pair_with_their_katakana():
    assert name_pairs(load_dictionary()) == [
        ("Biden", "バイデン"),
        ("Floyd", "フロイド"),
        ("George", "ジョージ"),
        ("Nadu", "ナド"),  # a part of タミル・ナド, Tamil Nadu
        ("Parker", "パーカー"),
        ("Sunday", "サンデー"),  # JMdict's katakana word; its kanji word is a translation
        ("Taliban", "ターリバーン"),  # by support alone: the same corpus on every machine
        ("Tamil", "タミル"),
        ("Turner", "ターナー"),
        ("Weyden", "バイデン"),
    ]  # not Abe (kanji outweighs its katakana), NASA (an acronym), White House (two words)


def test_the_splits_hold_every_pair_once_by_a_hash_of_the_name(tmp_path):
    write_name_pairs(load_dictionary(), tmp_path, "stamp")
    written = []
    for split in ("train", "dev", "test"):
        names, katakana = read(tmp_path / f"{split}.en.gz"), read(tmp_path / f"{split}.ja.gz")
        assert all(split_of(name) == split for name in names)
        written += zip(names, katakana, strict=True)
    assert sorted(written) == name_pairs(load_dictionary())
    held_out = [name for name in map(str, range(10_000)) if split_of(name) != "train"]
    assert 0.02 < len(held_out) / 10_000 < 0.04  # 1.5% each of dev and test


def test_the_pairs_are_written_again_only_for_another_dictionary(tmp_path):
    assert write_name_pairs(load_dictionary(), tmp_path, "stamp")
    (tmp_path / "train.en.gz").write_bytes(gzip.compress(b"edited\n"))
    assert not write_name_pairs(load_dictionary(), tmp_path, "stamp")
    assert read(tmp_path / "train.en.gz") == ["edited"]
    assert write_name_pairs(load_dictionary(), tmp_path, "another")
    assert "Biden" in read(tmp_path / "train.en.gz")


def test_fetching_the_corpus_writes_it_from_the_installed_dictionary(tmp_path, monkeypatch):
    config = DataConfig(name="name_pairs", source="name_dictionary")
    paths = PathsConfig(root=str(tmp_path), raw_dir=str(tmp_path / "raw"))
    folder = fetch_dataset(config, paths)
    assert (read(folder / "dev.en.gz"), read(folder / "test.en.gz")) == (["Turner"], ["Parker"])
    missing = (tmp_path / "enamdict", tmp_path / "edict")
    monkeypatch.setattr(name_dictionary, "DICTIONARY_FILES", missing)
    with pytest.raises(DataSourceError, match="apt-get install enamdict edict"):
        fetch_dataset(config, PathsConfig(root=str(tmp_path), raw_dir=str(tmp_path / "other")))
