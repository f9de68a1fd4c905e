"""Back-translation's data: monolingual corpora, the tag, the synthetic corpus on disk (written
in pieces, resumed, reused), and a derived corpus that is not written yet."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from llm_from_scratch.data.back_translation import SyntheticCorpus, tagged
from llm_from_scratch.data.config import CorpusConfig, DataConfig, MixtureMember
from llm_from_scratch.data.corpus import CorpusError, read_monolingual, read_split
from llm_from_scratch.data.placeholders import (
    BACK_TRANSLATION_TAG,
    NAME_PLACEHOLDERS,
    PLACEHOLDERS,
    without_reserved,
)
from llm_from_scratch.data.sources import DataSourceError, fetch_dataset
from llm_from_scratch.decoding.lines import clean
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.tokenizer.bpe import BPETokenizer

NEWS = [
    "東京で会議が開かれた。",
    "読売新聞、2008年1月24日。",
    "",
    "読売新聞『会議が開かれる』。",
    "首相は記者団に語った。",
]
SKIP = r"、\d{4}年\d{1,2}月\d{1,2}日。$|^[^。]{0,60}『.*』。$"


def monolingual(tmp_path: Path, lines: list[str], skip: str | None = SKIP) -> DataConfig:
    folder = tmp_path / "data" / "raw" / "news_mono"
    folder.mkdir(parents=True)
    with gzip.open(folder / "train.ja.gz", "wt", encoding="utf-8") as file:
        file.write("".join(f"{line}\n" for line in lines))
    corpus = CorpusConfig(
        format="monolingual",
        splits={"train": "train.{lang}.gz"},
        dev_fraction=0.0,
        test_fraction=0.0,
        skip_lines=skip,
    )
    return DataConfig(name="news_mono", source="local", corpus=corpus)


def paths_in(tmp_path: Path) -> PathsConfig:
    return PathsConfig(root=str(tmp_path))


def test_monolingual_text_skips_blank_lines_and_those_the_pattern_matches(tmp_path):
    data = monolingual(tmp_path, NEWS)
    assert data.corpus.file_names == ["train.ja.gz"]
    assert read_monolingual(data, paths_in(tmp_path)) == [NEWS[0], NEWS[4]]


def test_monolingual_corpus_has_no_pairs_to_train_on(tmp_path):
    data = monolingual(tmp_path, NEWS)
    with pytest.raises(CorpusError, match=r"monolingual .*back-translate"):
        read_split(data, "train", paths_in(tmp_path))


def test_a_mixture_refuses_a_monolingual_member():
    corpus = CorpusConfig(format="monolingual", splits={"train": "train.{lang}.gz"})
    member = MixtureMember(name="news_mono", source="local", corpus=corpus)
    with pytest.raises(ConfigError, match="news_mono is monolingual"):
        DataConfig(name="mix", source="local", mixture={"news_mono": member})


def test_a_skip_pattern_that_is_no_regular_expression_is_refused():
    with pytest.raises(ConfigError, match="skip_lines"):
        CorpusConfig(format="monolingual", skip_lines="(unclosed")


def test_a_derived_corpus_not_written_yet_names_the_command_that_writes_it(tmp_path):
    corpus = CorpusConfig(splits={"train": "train.{lang}.gz"}, dev_fraction=0, test_fraction=0)
    data = DataConfig(name="news_bt", source="derived", corpus=corpus)
    with pytest.raises(DataSourceError, match=r"make back-translate .*--name news_bt"):
        fetch_dataset(data, paths_in(tmp_path))
    assert not (tmp_path / "data" / "raw" / "news_bt").exists()  # nothing made in its place


def test_user_input_loses_the_tag_and_the_placeholders():
    reserved = "".join(PLACEHOLDERS + NAME_PLACEHOLDERS) + BACK_TRANSLATION_TAG
    assert without_reserved(f"a{reserved}b") == "ab"
    assert clean(f"{BACK_TRANSLATION_TAG} Hello.") == "Hello."


def test_the_tokenizer_learns_the_tag_as_one_piece_before_the_text():
    sources = [tagged(text) for text in ("The talks began.", "He spoke to reporters.")] * 20
    tok = BPETokenizer.train([*sources, "The talks began."] * 5, vocab_size=300)
    ids = tok.encode(sources[0])
    assert tok.decode(ids[:1]) == BACK_TRANSLATION_TAG
    assert BACK_TRANSLATION_TAG not in tok.decode(ids[1:])
    assert tok.decode(ids[1:]).strip() == "The talks began."


def test_an_empty_translation_stays_empty_for_cleaning_to_drop():
    assert tagged("  ") == ""
    assert tagged("Hi.") == f"{BACK_TRANSLATION_TAG} Hi."


def corpus_in(directory: Path, **lineage) -> SyntheticCorpus:
    return SyntheticCorpus(directory, "en", "ja", {"model": "m1", "text": "t1", **lineage})


def written(corpus: SyntheticCorpus, lang: str) -> list[str]:
    return gzip.decompress(corpus.train_file(lang).read_bytes()).decode().splitlines()


PAIRS = [(f"{BACK_TRANSLATION_TAG} s{k}", f"t{k}") for k in range(5)]


def test_written_in_pieces_and_resumed_equals_written_at_once(tmp_path):
    whole = corpus_in(tmp_path / "whole")
    with whole.append() as writer:
        writer.write(PAIRS)
    whole.finish({"pairs": 5})

    pieces = corpus_in(tmp_path / "pieces")
    with pieces.append() as writer:
        writer.write(PAIRS[:2])
    # Killed mid-pair: one side has a third line, the other half of one.
    (tmp_path / "pieces" / "partial.en").open("a").write(f"{PAIRS[2][0]}\n")
    (tmp_path / "pieces" / "partial.ja").open("a").write("t")
    resumed = corpus_in(tmp_path / "pieces")
    assert resumed.written_pairs() == 2
    with resumed.append() as writer:
        writer.write(PAIRS[2:])
    resumed.finish({"pairs": 5})

    for lang in ("en", "ja"):
        assert written(resumed, lang) == written(whole, lang)
        assert resumed.train_file(lang).read_bytes() == whole.train_file(lang).read_bytes()
    assert sorted(path.name for path in (tmp_path / "pieces").iterdir()) == [
        "lineage.json",
        "train.en.gz",
        "train.ja.gz",
    ]


def test_a_finished_corpus_is_reused_only_with_the_same_lineage(tmp_path):
    corpus = corpus_in(tmp_path)
    assert not corpus.is_written()
    with corpus.append() as writer:
        writer.write(PAIRS)
    corpus.finish({"pairs": 5, "seconds": 1.0})
    assert corpus_in(tmp_path).is_written()
    assert not corpus_in(tmp_path, model="m2").is_written()


def test_another_lineages_partial_pairs_are_not_continued(tmp_path):
    first = corpus_in(tmp_path)
    with first.append() as writer:
        writer.write(PAIRS[:3])
    assert corpus_in(tmp_path).written_pairs() == 3
    other = corpus_in(tmp_path, model="m2")
    assert other.written_pairs() == 0
    with other.append() as writer:
        writer.write(PAIRS[3:])
    other.finish({"pairs": 2})
    assert written(other, "ja") == ["t3", "t4"]


def test_the_documented_commands_compose(train_config):
    general = train_config("experiment=general", "data=general_bt", "name=general_bt").data
    assert general.mixture["wikinews_ja_bt"].source == "derived"
    assert general.mixture["news_ja_origin"].weight == 2.0  # the general mixture's, kept
    reverse = train_config("experiment=general", "data.direction=ja-en").data
    assert (reverse.source_lang, reverse.target_lang) == ("ja", "en")
    finetune = train_config(
        "experiment=finetune", "data=news_bt_replay", "data.mixture.wikinews_ja_bt.weight=1.0"
    ).data
    assert (finetune.dev_corpus, finetune.mixture["wikinews_ja_bt"].weight) == ("wmt_news", 1.0)
