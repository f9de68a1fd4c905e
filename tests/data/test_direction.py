"""`data.direction`: a corpus read backwards (ja-en from en/ja files), its pairs swapped after
reading, its tokenizers trained on the sides the model reads and writes, its caches apart."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from llm_from_scratch.data.config import DataConfig, ExtraPairs
from llm_from_scratch.data.corpus import load_extra_train, load_split
from llm_from_scratch.data.datamodule import cache_key
from llm_from_scratch.data.source_style import prepare_source
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers, tokenizer_paths


def backwards(data: DataConfig) -> DataConfig:
    return dataclasses.replace(data, direction="ja-en")


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_ja_en_swaps_each_pair_after_reading(split, tiny_enja, tiny_paths):
    forward = load_split(tiny_enja, split, tiny_paths)
    reverse = load_split(backwards(tiny_enja), split, tiny_paths)
    assert reverse.column_names == ["src", "tgt"]
    assert reverse["src"] == forward["tgt"] and reverse["tgt"] == forward["src"]
    assert "私は緑茶が好きだ。" in load_split(backwards(tiny_enja), "train", tiny_paths)["src"]


def test_the_default_and_the_corpus_order_spelled_out_read_alike(tiny_enja, tiny_paths):
    explicit = dataclasses.replace(tiny_enja, direction="en-ja")
    assert (
        load_split(explicit, "dev", tiny_paths)["src"]
        == load_split(tiny_enja, "dev", tiny_paths)["src"]
    )
    assert (tiny_enja.source_lang, tiny_enja.target_lang, tiny_enja.reversed) == ("en", "ja", False)
    reverse = backwards(tiny_enja)
    assert (reverse.source_lang, reverse.target_lang, reverse.reversed) == ("ja", "en", True)


def test_a_direction_outside_the_corpus_languages_is_one_line(tiny_enja):
    with pytest.raises(ConfigError) as error:
        dataclasses.replace(tiny_enja, direction="fr-en")
    assert str(error.value) == (
        "data.direction='fr-en' must be en-ja or ja-en: the corpus's languages "
        "(data.corpus.src_lang, data.corpus.tgt_lang)"
    )


def test_a_styled_english_side_becomes_the_styled_target_and_input_stays_raw(
    local_config, paths, tmp_path
):
    (tmp_path / "styled").mkdir()
    (tmp_path / "styled" / "train.en").write_text("I can't tell.\n", encoding="utf-8")
    (tmp_path / "styled" / "train.ja").write_text("わからない。\n", encoding="utf-8")
    corpus = {"splits": {"train": "train", "dev": "train", "test": "train"}}
    styled = local_config("styled", {**corpus, "source_style": "lowercase_tokenized"})
    reverse = backwards(styled)
    pairs = load_split(reverse, "train", paths)
    # The corpus's style describes its English side, now the target: written as the corpus has it.
    assert pairs[0] == {
        "src": "わからない。",
        "tgt": prepare_source("I can't tell.", "lowercase_tokenized"),
    }
    assert pairs[0]["tgt"] == "i can 't tell ."
    assert (styled.input_style, reverse.input_style) == ("lowercase_tokenized", "raw")


def test_extra_train_pairs_are_written_like_the_corpus_and_swapped_too(
    local_config, paths, tmp_path
):
    source, target = tmp_path / "extra.en", tmp_path / "extra.ja"
    source.write_text("good night .\n", encoding="utf-8")
    target.write_text("おやすみ 。\n", encoding="utf-8")
    data = local_config(
        "tiny", {"detokenize_ja": True}, extra_train=[ExtraPairs(str(source), str(target))]
    )
    pairs = load_extra_train(backwards(data), paths)
    assert pairs[0] == {"src": "おやすみ。", "tgt": "good night ."}


def test_direction_keys_the_tokenized_cache(tiny_enja, tiny_paths, word_tokenizer):
    key = cache_key(tiny_enja, word_tokenizer, word_tokenizer, tiny_paths)
    assert cache_key(backwards(tiny_enja), word_tokenizer, word_tokenizer, tiny_paths) != key


def test_tokenizer_files_are_named_by_the_side_the_model_reads(tiny_enja):
    paths = PathsConfig(root="/project")
    forward = tokenizer_paths(tiny_enja, TokenizerConfig(), paths)
    reverse = tokenizer_paths(backwards(tiny_enja), TokenizerConfig(), paths)
    assert [p.name.split(".")[1] for p in forward] == ["en", "ja"]
    assert [p.name.split(".")[1] for p in reverse] == ["ja", "en"]
    # Each language's tokenizer is normalized as its side's: ja-en's ja file is not en-ja's.
    assert reverse[0] != forward[1] and reverse[1] != forward[0]
    explicit = dataclasses.replace(tiny_enja, direction="en-ja")
    assert tokenizer_paths(explicit, TokenizerConfig(), paths) == forward


def test_ja_en_tokenizers_learn_japanese_for_the_source_and_english_for_the_target(
    tiny_enja, tiny_paths
):
    tok_cfg = TokenizerConfig(vocab_size=400, normalization="nfkc", target_normalization="none")
    src_tok, tgt_tok = load_or_train_tokenizers(backwards(tiny_enja), tok_cfg, tiny_paths)
    assert (src_tok.normalization, tgt_tok.normalization) == ("nfkc", "none")

    def byte_tokens(tok, text: str) -> int:
        return sum(map(tok.is_byte_token, tok.encode(text)))

    japanese, english = "私は緑茶が好きだ。", "the train was crowded ."
    assert byte_tokens(src_tok, japanese) == 0 < byte_tokens(src_tok, english)
    assert byte_tokens(tgt_tok, english) == 0 < byte_tokens(tgt_tok, japanese)
    assert Path(tokenizer_paths(backwards(tiny_enja), tok_cfg, tiny_paths)[0]).is_file()
