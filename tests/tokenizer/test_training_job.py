"""`make tokenizer`: reading the train split, tokenizer paths, load-or-train, the report."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_from_scratch.config import TokenizerJobConfig
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.programs.train_tokenizer import (
    compression_stats,
    load_or_train_tokenizers,
    read_train_texts,
    run,
    tokenizer_paths,
)

REPO = Path(__file__).resolve().parents[2]
CORPORA = Path(os.environ.get("DATA_MIRROR", REPO.parent / "shared" / "corpora"))


def local_dataset(root: Path, files: dict[str, str], name: str = "tiny") -> DataConfig:
    for file_name, text in files.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / file_name).write_text(text, encoding="utf-8")
    return DataConfig(name=name, source="local", raw_dir=str(root))


def test_train_texts_come_from_the_data_module(tmp_path: Path) -> None:
    data = local_dataset(
        tmp_path,
        {
            "train.en": "i like new york .\nhello\n",
            "train.ja": "私 は New York が 好き だ 。\n今日 は\n",
        },
    )
    data = dataclasses.replace(data, splits={"train": "train", "dev": "train", "test": "train"})
    src, tgt = read_train_texts(dataclasses.replace(data, detokenize_ja=True))
    assert src == ["i like new york .", "hello"]
    assert tgt == ["私はNew Yorkが好きだ。", "今日は"]
    assert read_train_texts(data)[1] == ["私 は New York が 好き だ 。", "今日 は"]


def test_detokenization_changes_the_tokenizer_path() -> None:
    data = DataConfig(name="small_parallel_enja", source="local")
    segmented = tokenizer_paths(data, TokenizerConfig())
    raw = tokenizer_paths(dataclasses.replace(data, detokenize_ja=True), TokenizerConfig())
    assert segmented[1] != raw[1]


def test_paths_differ_by_language_and_setting_and_coincide_when_shared() -> None:
    data = DataConfig(name="tanaka_graded", source="local")
    separate = tokenizer_paths(data, TokenizerConfig(vocab_size=8000))
    assert separate[0] != separate[1]
    assert separate[0].name.startswith("tanaka_graded.en.bpe8000.")
    assert separate[0].parent == Path("data/tokenizers")
    shared = tokenizer_paths(data, TokenizerConfig(vocab_size=8000, shared=True))
    assert shared[0] == shared[1] and ".en-ja." in shared[0].name
    other = tokenizer_paths(data, TokenizerConfig(vocab_size=8000, pretokenizer="script"))
    assert other[0] != separate[0]


TEXTS_EN = ["the cat sat on the mat", "a dog ran after the cat"] * 5
TEXTS_JA = ["猫がマットの上に座った。", "犬が猫を追いかけた。"] * 5


def test_load_or_train_trains_once_then_loads(tmp_path: Path) -> None:
    data = DataConfig(name="tiny", source="local")
    tok_cfg = TokenizerConfig(vocab_size=300, dir=str(tmp_path))
    src, tgt = load_or_train_tokenizers(data, tok_cfg, TEXTS_EN, TEXTS_JA)
    assert src.hash != tgt.hash
    assert all(path.is_file() for path in tokenizer_paths(data, tok_cfg))
    again = load_or_train_tokenizers(data, tok_cfg, ["ignored"], ["ignored"])
    assert (again[0].hash, again[1].hash) == (src.hash, tgt.hash)


def test_shared_tokenizer_covers_both_languages(tmp_path: Path) -> None:
    data = DataConfig(name="tiny", source="local")
    tok_cfg = TokenizerConfig(vocab_size=320, shared=True, dir=str(tmp_path))
    src, tgt = load_or_train_tokenizers(data, tok_cfg, TEXTS_EN, TEXTS_JA)
    assert src is tgt
    assert {"c", "猫"} <= set(src.alphabet)


def test_run_reports_vocab_compression_fallback_and_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "".join(f"{en}\t{ja}\n" for en, ja in zip(TEXTS_EN, TEXTS_JA, strict=True))
    data = local_dataset(tmp_path / "raw", {"train.tsv": text})
    data = dataclasses.replace(data, format="tsv", splits={"train": "train.tsv"})
    config = TokenizerJobConfig(
        data=data, tokenizer=TokenizerConfig(vocab_size=300, dir=str(tmp_path / "tok"))
    )
    run(config)
    report = capsys.readouterr().out
    assert report.startswith("trained in ")
    for lang in ("en", "ja"):
        line = rf"^{lang}: .*vocab size \d+ +chars/token [\d.]+ +byte fallback [\d.]+% of tokens"
        assert re.search(line, report, re.MULTILINE)
    run(config)
    assert capsys.readouterr().out.startswith("loaded in ")


def test_compression_stats_count_byte_tokens() -> None:
    tok = BPETokenizer.train(["aaaa bbbb"], 300, character_coverage=1.0)
    stats = compression_stats(tok, ["ab", "€"])  # "€" falls back to three byte tokens
    assert stats.byte_fallback_rate == pytest.approx(3 / 5)
    assert stats.chars_per_token == pytest.approx(3 / 5)


@pytest.mark.parametrize("yaml", sorted((REPO / "configs" / "tokenizer").glob("*.yaml")))
def test_every_yaml_lists_every_field_and_validates(yaml: Path) -> None:
    values = OmegaConf.load(yaml)
    assert set(values) == {field.name for field in dataclasses.fields(TokenizerConfig)}
    OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TokenizerConfig), values))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"vocab_size": 100}, "tokenizer.vocab_size=100"),
        ({"character_coverage": 0.0}, "tokenizer.character_coverage=0.0"),
        ({"normalization": "nfd"}, "tokenizer.normalization='nfd'"),
        ({"pretokenizer": "words"}, "tokenizer.pretokenizer='words'"),
        ({"special_tokens": [""]}, "tokenizer.special_tokens: ''"),
    ],
)
def test_config_errors_name_key_and_value(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TokenizerConfig(**changes)


@pytest.mark.skipif(not (CORPORA / "small_parallel_enja").is_dir(), reason="corpora not present")
def test_every_split_encodes_without_unknowns_and_round_trips(tmp_path: Path) -> None:
    root = CORPORA / "small_parallel_enja"
    train = (root / "train.ja").read_text(encoding="utf-8").splitlines()[:3000]
    # A low coverage leaves characters to the byte fallback, which must still round-trip.
    tok = BPETokenizer.train(train, 1200, character_coverage=0.99)
    for split in ("train", "dev", "test"):
        for lang in ("en", "ja"):
            for text in (root / f"{split}.{lang}").read_text(encoding="utf-8").splitlines():
                ids = tok.encode(text)
                assert all(len(tok.special_tokens) <= i < tok.vocab_size for i in ids)
                assert tok.decode(ids) == tok.normalize(text)
