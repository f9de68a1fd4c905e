"""The field's test sets and the two domain corpora of the mirror: their configs name the mirror's
files, and a corpus of dev and test alone (wmt_news) is read, alone or at weight 0 in a mixture."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from llm_from_scratch.data.config import CorpusConfig, DataConfig, MixtureMember
from llm_from_scratch.data.corpus import CorpusError, load_split, load_splits
from llm_from_scratch.data.datamodule import build_data
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.schema import to_schema

SCORED = ("wmt_news", "coursera_lectures", "tech_docs")
PAIRS = {  # dev, test pairs (the mirror's README)
    "wmt_news": (1_000, 1_000),
    "coursera_lectures": (555, 2_068),
    "tech_docs": (995, 995),
}


def composed(compose_config, name: str) -> DataConfig:
    return to_schema(compose_config("prepare_data", [f"data={name}"]).data, DataConfig)


@pytest.mark.parametrize("name", SCORED)
def test_the_config_names_the_mirrors_files(name, compose_config, corpus_mirror):
    config = composed(compose_config, name)
    assert {file.name for file in config.files} == set(config.corpus.file_names)
    for entry in config.files:
        data = (corpus_mirror / name / entry.name).read_bytes()
        assert (entry.bytes, entry.sha256) == (len(data), hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize("name", SCORED)
def test_the_mirror_copy_gives_the_dev_and_test_pairs(name, compose_config, corpus_mirror, paths):
    config = composed(compose_config, name)
    fetch_data(config, paths)  # copied from DATA_MIRROR, and checked
    splits, _ = load_splits(config, paths, ("dev", "test"))
    assert (len(splits["dev"]), len(splits["test"])) == PAIRS[name]
    assert all(splits["test"]["src"][:5]) and all(splits["test"]["tgt"][:5])


def test_wmt_news_downloads_from_a_pinned_commit(compose_config):
    config = composed(compose_config, "wmt_news")
    assert config.source == "urls" and not config.corpus.has_train
    pinned = r"https://raw\.githubusercontent\.com/Helsinki-NLP/OPUS-MT-testsets/[0-9a-f]{40}/"
    assert all(re.match(pinned, file.url or "") for file in config.files)


def scored_only(weight: float) -> MixtureMember:
    corpus = CorpusConfig(splits={"dev": "dev", "test": "test"})
    return MixtureMember(name="news", source="local", corpus=corpus, weight=weight)


def everyday() -> MixtureMember:
    corpus = CorpusConfig(splits={"train": "train", "dev": "dev", "test": "test"})
    return MixtureMember(name="everyday", source="local", corpus=corpus)


def write_corpus(root: Path, name: str, splits: dict[str, list[tuple[str, str]]]) -> None:
    (root / name).mkdir(parents=True)
    for split, pairs in splits.items():
        for side, lang in enumerate(("en", "ja")):
            lines = "".join(f"{pair[side]}\n" for pair in pairs)
            (root / name / f"{split}.{lang}").write_text(lines, encoding="utf-8")


def test_a_mixture_reads_a_corpus_of_dev_and_test_at_weight_0(paths, word_tokenizer):
    root = Path(paths.raw_dir)
    news = {"dev": [("The bank closed.", "銀行は閉まった。")], "test": [("Rain.", "雨。")]}
    write_corpus(root, "news", news)
    hello = [("Hello.", "こんにちは。"), ("Thank you.", "ありがとう。")]
    held_out = [("Good night.", "おやすみ。")]
    write_corpus(root, "everyday", {"train": hello, "dev": held_out, "test": held_out})
    mixture = {"everyday": everyday(), "news": scored_only(0.0)}
    data = DataConfig(name="mix", source="local", mixture=mixture)
    train = load_split(data, "train", paths)
    assert (train["src"][:], train["corpus"][:]) == (["Hello.", "Thank you."], ["everyday"] * 2)
    dev = load_split(data, "dev", paths)
    assert dev["corpus"][:] == ["everyday", "news"]
    built = build_data(data, word_tokenizer, word_tokenizer, paths)  # as training reads it
    assert set(built.splits["train"]["corpus"][:]) == {"everyday"}
    for split in ("dev", "test"):  # scored beside the corpus trained on
        assert built.splits[split]["corpus"][:] == ["everyday", "news"]


def test_a_corpus_of_dev_and_test_gives_no_train_pairs(paths):
    write_corpus(Path(paths.raw_dir), "news", {"dev": [("A.", "あ。")], "test": [("B.", "い。")]})
    data = DataConfig(name="news", source="local", corpus=scored_only(0).corpus)
    assert load_split(data, "dev", paths)["tgt"][:] == ["あ。"]
    with pytest.raises(CorpusError, match=r'news has no train split .*"--data news"'):
        load_split(data, "train", paths)


@pytest.mark.parametrize(
    ("top", "weight", "message"),
    [
        ({}, 1.0, "data.mixture.news has no train split (dev and test only): give it weight 0"),
        ({"temperature": 2.0}, 1.0, "and the mixture weights rather than a temperature"),
    ],
)
def test_a_corpus_of_dev_and_test_is_refused_as_training_data(top, weight, message):
    mixture = {"everyday": everyday(), "news": scored_only(weight)}
    with pytest.raises(ConfigError, match=re.escape(message)):
        DataConfig(name="mix", source="local", mixture=mixture, **top)


def test_splits_without_train_need_both_dev_and_test():
    with pytest.raises(ConfigError, match=re.escape("must name a train split (or, for a corpus")):
        CorpusConfig(splits={"test": "test"})
