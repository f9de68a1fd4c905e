"""`make tokenizer`: reading the train split, tokenizer paths, load-or-train, the report."""

from __future__ import annotations

import dataclasses
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_from_scratch.data.config import CorpusConfig, DataConfig, ExtraPairs
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.train_tokenizer import TokenizerJobConfig, compression_stats, run
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.tokenizer.pretokenize import SHIPPED_PATTERNS
from llm_from_scratch.training import tokenizers
from llm_from_scratch.training.tokenizers import (
    load_or_train_tokenizers,
    read_train_texts,
    tokenizer_paths,
)
from tests.settings import DATA_VALUES, other_value

REPO = Path(__file__).resolve().parents[2]
CORPORA = Path(os.environ.get("DATA_MIRROR", REPO.parent / "shared" / "corpora"))
PATHS = PathsConfig(root="/project")


def local_dataset(root: Path, files: dict[str, str], name: str = "tiny") -> DataConfig:
    for file_name, text in files.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / file_name).write_text(text, encoding="utf-8")
    return DataConfig(name=name, source="local")


def with_corpus(data: DataConfig, **changes: object) -> DataConfig:
    return dataclasses.replace(data, corpus=dataclasses.replace(data.corpus, **changes))


def test_train_texts_come_from_the_data_module(tmp_path: Path) -> None:
    data = local_dataset(
        tmp_path,
        {
            "train.en": "i like new york .\nhello\n",
            "train.ja": "私 は New York が 好き だ 。\n今日 は\n",
        },
    )
    data = with_corpus(data, splits={"train": "train", "dev": "train", "test": "train"})
    paths = PathsConfig(root=str(tmp_path), raw_dir=str(tmp_path))
    src, tgt = read_train_texts(with_corpus(data, detokenize_ja=True), paths)
    assert src == ["i like new york .", "hello"]
    assert tgt == ["私はNew Yorkが好きだ。", "今日は"]
    assert read_train_texts(data, paths)[1] == ["私 は New York が 好き だ 。", "今日 は"]


def test_detokenization_changes_the_tokenizer_path() -> None:
    data = DataConfig(name="small_parallel_enja", source="local")
    segmented = tokenizer_paths(data, TokenizerConfig(), PATHS)
    raw = tokenizer_paths(with_corpus(data, detokenize_ja=True), TokenizerConfig(), PATHS)
    assert segmented[1] != raw[1]


def test_paths_differ_by_language_and_setting_and_coincide_when_shared() -> None:
    data = DataConfig(name="tanaka_graded", source="local")
    separate = tokenizer_paths(data, TokenizerConfig(vocab_size=8000), PATHS)
    assert separate[0] != separate[1]
    assert separate[0].name.startswith("tanaka_graded.en.bpe8000.")
    assert separate[0].parent == Path("/project/data/tokenizers") == Path(PATHS.tokenizer_dir)
    joint = TokenizerConfig(vocab_size=8000, shared=True, target_normalization="nfkc")
    shared = tokenizer_paths(data, joint, PATHS)
    assert shared[0] == shared[1] and ".en-ja." in shared[0].name
    other = tokenizer_paths(data, TokenizerConfig(vocab_size=8000, pretokenizer="script"), PATHS)
    assert other[0] != separate[0]


TOKENIZER_VALUES = {
    "tokenizer": {
        "vocab_size": 16000,
        "shared": True,
        "character_coverage": 1.0,
        "normalization": "none",
        "target_normalization": "nfkc",
        "pretokenizer": "script",
        "special_tokens": ["<sep>"],
        "max_sentences": 1000,
        "sample_seed": 7,
    },
    **DATA_VALUES,
}
DATA = DataConfig(name="tiny", source="local")


def fields_of(*sections: str) -> list:
    configs = {"tokenizer": TokenizerConfig(), "corpus": DATA.corpus}
    configs |= {"cleaning": DATA.cleaning, "loading": DATA.loading}
    return [
        pytest.param(section, field.name, id=f"{section}.{field.name}")
        for section in sections
        for field in dataclasses.fields(configs[section])
    ]


def changed_paths(section: str, name: str) -> tuple[Path, Path]:
    """The tokenizer paths with `<section>.<name>` set to another valid value."""
    data, tok_cfg = DATA, TokenizerConfig()
    if section == "tokenizer":
        value = other_value(TOKENIZER_VALUES, section, name, getattr(tok_cfg, name))
        changes = {name: value}
        if name == "shared":  # one tokenizer: one normalization for both sides
            changes["target_normalization"] = tok_cfg.normalization
        tok_cfg = dataclasses.replace(tok_cfg, **changes)
    else:
        old = getattr(data, section)
        value = other_value(TOKENIZER_VALUES, section, name, getattr(old, name))
        data = dataclasses.replace(data, **{section: dataclasses.replace(old, **{name: value})})
    return tokenizer_paths(data, tok_cfg, PATHS)


def test_data_config_sections_are_corpus_cleaning_and_loading() -> None:
    nested = {
        f.name for f in dataclasses.fields(DATA) if dataclasses.is_dataclass(getattr(DATA, f.name))
    }
    assert nested == {"corpus", "cleaning", "loading"} == set(TOKENIZER_VALUES) - {"tokenizer"}


@pytest.mark.parametrize(("section", "name"), fields_of("tokenizer", "corpus"))
def test_every_tokenizer_and_corpus_field_changes_the_tokenizer_paths(section, name) -> None:
    before = tokenizer_paths(DATA, TokenizerConfig(), PATHS)
    after = changed_paths(section, name)
    assert before[0] != after[0] and before[1] != after[1]


@pytest.mark.parametrize(("section", "name"), fields_of("cleaning", "loading"))
def test_no_cleaning_or_loading_field_changes_the_tokenizer_paths(section, name) -> None:
    assert changed_paths(section, name) == tokenizer_paths(DATA, TokenizerConfig(), PATHS)


def test_a_new_pattern_version_changes_the_tokenizer_paths(monkeypatch) -> None:
    before = tokenizer_paths(DATA, TokenizerConfig(), PATHS)
    patterns = {**tokenizers.PRETOKENIZERS, "okurigana": SHIPPED_PATTERNS["okurigana", 1]}
    monkeypatch.setattr(tokenizers, "PRETOKENIZERS", patterns)
    after = tokenizer_paths(DATA, TokenizerConfig(), PATHS)
    assert before[0] != after[0] and before[1] != after[1]


def test_dataset_name_changes_the_tokenizer_paths_and_extra_train_does_not() -> None:
    before = tokenizer_paths(DATA, TokenizerConfig(), PATHS)
    renamed = tokenizer_paths(dataclasses.replace(DATA, name="other"), TokenizerConfig(), PATHS)
    assert renamed[0] != before[0] and renamed[1] != before[1]
    # Tokenizers are trained on the corpus alone: a run with synthetic pairs shares them.
    extra = dataclasses.replace(DATA, extra_train=[ExtraPairs("x.en", "x.ja")])
    assert tokenizer_paths(extra, TokenizerConfig(), PATHS) == before


TEXTS_EN = ["the cat sat on the mat", "a dog ran after the cat"] * 5
TEXTS_JA = ["猫がマットの上に座った。", "犬が猫を追いかけた。"] * 5


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> tuple[DataConfig, PathsConfig]:
    """TEXTS_EN/TEXTS_JA as the train split of a local dataset under `tmp_path/raw`."""
    text = "".join(f"{en}\t{ja}\n" for en, ja in zip(TEXTS_EN, TEXTS_JA, strict=True))
    data = local_dataset(tmp_path / "raw", {"train.tsv": text})
    data = dataclasses.replace(
        data, corpus=CorpusConfig(format="tsv", splits={"train": "train.tsv"})
    )
    paths = PathsConfig(
        root=str(tmp_path), raw_dir=str(tmp_path / "raw"), tokenizer_dir=str(tmp_path / "tok")
    )
    return data, paths


def test_load_or_train_trains_once_then_loads(tiny_corpus) -> None:
    data, paths = tiny_corpus
    tok_cfg = TokenizerConfig(vocab_size=300)
    src, tgt = load_or_train_tokenizers(data, tok_cfg, paths)
    assert src.hash != tgt.hash
    assert all(path.is_file() for path in tokenizer_paths(data, tok_cfg, paths))
    (Path(paths.raw_dir) / data.name / "train.tsv").unlink()  # loading must not read the split
    again = load_or_train_tokenizers(data, tok_cfg, paths)
    assert (again[0].hash, again[1].hash) == (src.hash, tgt.hash)
    # The saved source tokenizer keeps its train split's word counts (data/names.py reads them).
    assert (again[0].word_count("The"), again[0].word_count("dog")) == (15, 5)


def test_two_runs_needing_a_fresh_tokenizer_train_it_once(tiny_corpus, monkeypatch) -> None:
    data, paths = tiny_corpus
    tok_cfg = TokenizerConfig(vocab_size=300)
    trained = []
    train = BPETokenizer.train.__func__

    def slow_train(cls, *args, **kwargs):
        trained.append(kwargs["normalization"])
        time.sleep(0.3)  # long enough for the other run to arrive meanwhile
        return train(cls, *args, **kwargs)

    monkeypatch.setattr(BPETokenizer, "train", classmethod(slow_train))
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(load_or_train_tokenizers, data, tok_cfg, paths) for _ in range(2)]
        (src, tgt), (src_again, tgt_again) = (run.result() for run in runs)
    assert len(trained) == 2  # source and target, once each
    assert (src.hash, tgt.hash) == (src_again.hash, tgt_again.hash)


def test_the_target_side_keeps_the_corpus_forms_and_the_source_side_folds_them(
    tmp_path: Path,
) -> None:
    text = "".join(f"{en}\t{ja}\n" for en, ja in [("ＡＢ 10", "１０時？"), ("ab 2", "２人！")] * 5)
    data = local_dataset(tmp_path / "raw", {"train.tsv": text})
    data = with_corpus(data, format="tsv", splits={"train": "train.tsv"})
    paths = PathsConfig(root=str(tmp_path), raw_dir=str(tmp_path / "raw"))
    src, tgt = load_or_train_tokenizers(data, TokenizerConfig(vocab_size=300), paths)
    assert src.decode(src.encode("ＡＢ １０")) == "AB 10"
    assert tgt.decode(tgt.encode("１０時？")) == "１０時？"
    assert {"１", "０", "？", "！"} <= set(tgt.alphabet) and "1" not in tgt.alphabet
    folded = TokenizerConfig(vocab_size=300, target_normalization="nfkc")
    nfkc_target = load_or_train_tokenizers(data, folded, paths)[1]
    assert nfkc_target.decode(nfkc_target.encode("１０時？")) == "10時?"


def test_shared_tokenizer_covers_both_languages(tiny_corpus) -> None:
    data, paths = tiny_corpus
    tok_cfg = TokenizerConfig(vocab_size=320, shared=True, target_normalization="nfkc")
    src, tgt = load_or_train_tokenizers(data, tok_cfg, paths)
    assert src is tgt
    assert {"c", "猫"} <= set(src.alphabet)


def test_run_reports_vocab_compression_fallback_and_time(
    tiny_corpus, capsys: pytest.CaptureFixture[str]
) -> None:
    data, paths = tiny_corpus
    config = TokenizerJobConfig(paths=paths, data=data, tokenizer=TokenizerConfig(vocab_size=300))
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
def test_every_preset_validates(yaml: Path) -> None:
    values = OmegaConf.load(yaml)
    OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(TokenizerConfig), values))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"vocab_size": 100}, "tokenizer.vocab_size=100"),
        ({"character_coverage": 0.0}, "tokenizer.character_coverage=0.0"),
        ({"normalization": "nfd"}, "tokenizer.normalization='nfd'"),
        ({"target_normalization": "nfd"}, "tokenizer.target_normalization='nfd'"),
        ({"shared": True}, "tokenizer.shared=true trains one tokenizer for both sides"),
        ({"pretokenizer": "words"}, "tokenizer.pretokenizer='words'"),
        ({"special_tokens": [""]}, "tokenizer.special_tokens: ''"),
    ],
)
def test_config_errors_name_key_and_value(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TokenizerConfig(**changes)


@pytest.mark.skipif(not (CORPORA / "small_parallel_enja").is_dir(), reason="corpora not present")
@pytest.mark.slow
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
