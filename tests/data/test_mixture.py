"""Several corpora in one run: one source style, deduplication, held-out overlap, resampling."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import datasets
import pytest

from llm_from_scratch.data.config import (
    CleaningConfig,
    CorpusConfig,
    DataConfig,
    MixtureMember,
)
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.datamodule import build_data
from llm_from_scratch.data.mixture import normalize, resample, sample_sizes, unique_train
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.schema import to_data, to_schema
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.tokenizers import sample_train_texts, tokenizer_paths

# alpha is written like small_parallel_enja (lowercased, tokenized, segmented Japanese); beta is
# raw. Comments say what becomes of each train pair.
ALPHA = {
    "train.en": "i can 't tell .\ntom likes japan .\nit 's $ 5 .\nhe is here .\n",
    "train.ja": "分から ない 。\nトム は 日本 が 好き だ 。\n５ドル です 。\n"
    "彼 は ここ に いる 。\n",
    # kept; kept; kept; its English is beta's dev English: held_out_overlap
    "dev.en": "good morning .\n",
    "dev.ja": "おはよう 。\n",
    "test.en": "she is tall .\n",
    "test.ja": "彼女 は 背 が 高い 。\n",
}
BETA = {
    "train.tsv": (
        "I can't tell.\t分からない。\n"  # alpha's first pair, raw: duplicate
        "Tom lives in Japan.\tトムは日本に住んでいる。\n"  # 4 words to 1: length_ratio (beta's)
        "She is tall.\t彼女は本当に背が高い。\n"  # English of alpha's test: held_out_overlap
        "Tom lives in Japan.\tトムは日本に住んでいる。\n"  # duplicate
        "Good night.\tおはよう。\n"  # Japanese of alpha's dev: held_out_overlap
        "Where is Tom?\tトムはどこ？\n"  # kept
    ),
    "dev.tsv": "He is here.\t彼はここにいる。\n",
    "test.tsv": "Where are you?\tどこにいるの？\n",
}


def write(root: Path, name: str, files: dict[str, str]) -> None:
    (root / name).mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (root / name / file_name).write_text(text, encoding="utf-8")


def mixture(alpha_weight: float = 1.0, beta_weight: float = 1.0, **top: object) -> DataConfig:
    alpha = MixtureMember(
        name="alpha",
        source="local",
        corpus=CorpusConfig(
            splits={"train": "train", "dev": "dev", "test": "test"},
            detokenize_ja=True,
            source_style="lowercase_tokenized",
        ),
        cleaning=CleaningConfig(max_length_ratio=10.0),
        weight=alpha_weight,
    )
    beta = MixtureMember(
        name="beta",
        source="local",
        corpus=CorpusConfig(
            format="tsv", splits={"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
        ),
        weight=beta_weight,  # its cleaning keeps the default ratio of 3
    )
    return DataConfig(
        name="mix",
        source="local",
        cleaning=CleaningConfig(max_length_ratio=10.0),
        mixture={"alpha": alpha, "beta": beta},
        **top,
    )


@pytest.fixture
def two_corpora(paths):
    write(Path(paths.raw_dir), "alpha", ALPHA)
    write(Path(paths.raw_dir), "beta", BETA)
    return paths


@pytest.mark.slow  # over 5 s on 2 cores
def test_members_are_read_in_one_style_and_tagged_by_corpus(two_corpora):
    train = load_split(mixture(), "train", two_corpora)
    # Deduplicated and cleared of held-out overlap, not yet cleaned: the tokenizers' text.
    assert train["src"][:] == [
        "I can't tell.",
        "Tom likes Japan.",  # cased as beta's raw English has the words
        "It's $5.",
        "Tom lives in Japan.",
        "Where is Tom?",
    ]
    assert train["tgt"][:3] == ["分からない。", "トムは日本が好きだ。", "５ドルです。"]
    assert train["corpus"][:] == ["alpha"] * 3 + ["beta"] * 2
    dev = load_split(mixture(), "dev", two_corpora)
    assert dev.to_dict() == {
        "src": ["Good morning.", "He is here."],
        "tgt": ["おはよう。", "彼はここにいる。"],
        "corpus": ["alpha", "beta"],
    }


@pytest.mark.slow
def test_build_counts_every_removal_resamples_and_caches_the_corpus_column(
    two_corpora, word_tokenizer
):
    cfg = mixture(alpha_weight=0.34, beta_weight=3.0)
    data = build_data(cfg, word_tokenizer, word_tokenizer, two_corpora)
    report = data.report
    assert report.dropped == {
        "duplicate": 2,
        "held_out_overlap": 3,
        "empty": 0,
        "too_long": 0,
        "length_ratio": 1,  # beta's own ratio, tighter than the mixture's
    }
    assert (report.total, report.kept) == (10, 4)
    assert report.corpora == {"alpha": {"kept": 3, "sampled": 1}, "beta": {"kept": 1, "sampled": 3}}
    train = data.splits["train"]
    assert train["corpus"][:] == ["alpha", "beta", "beta", "beta"]
    assert train["src"][1:] == ["Where is Tom?"] * 3
    assert [len(data.splits[split]) for split in ("dev", "test")] == [2, 2]  # never filtered
    encoded = word_tokenizer.encoded_texts
    again = build_data(cfg, word_tokenizer, word_tokenizer, two_corpora)
    assert word_tokenizer.encoded_texts == encoded  # read from the cache
    assert again.report == report
    for split in ("train", "dev", "test"):
        assert again.splits[split]["corpus"][:] == data.splits[split]["corpus"][:]


def test_normalization_matches_tokenized_and_raw_text():
    assert normalize("i can 't tell .") == normalize("I can't tell.") == "icanttell"
    assert normalize("分から ない 。") == normalize("分からない。")
    assert normalize("ＡＢＣ１２３") == "abc123"


def corpus_pairs(counts: dict[str, int]) -> datasets.Dataset:
    names = [name for name, count in counts.items() for _ in range(count)]
    return datasets.Dataset.from_dict(
        {"src": [f"{name} {i}" for i, name in enumerate(names)], "corpus": names}
    )


def test_weights_repeat_each_pair_and_draw_the_fraction_seeded():
    train = corpus_pairs({"a": 4, "b": 2})
    sampled, counts = resample(train, {"a": 10, "b": 1}, seed=3)
    assert counts == {"a": {"kept": 4, "sampled": 10}, "b": {"kept": 2, "sampled": 1}}
    copies = {text: sampled["src"][:].count(text) for text in train["src"][:4]}
    assert sorted(copies.values()) == [2, 2, 3, 3]  # 10 = 4 x 2 + 2 drawn once more
    assert resample(train, {"a": 10, "b": 1}, seed=3)[0]["src"][:] == sampled["src"][:]
    assert resample(train, {"a": 4, "b": 2}, seed=3)[0] is train  # weights of 1: unchanged


def test_sample_sizes_follow_weights_or_a_temperature(two_corpora):
    kept = {"alpha": 900, "beta": 100}
    assert sample_sizes(mixture(2.0, 0.5), kept) == {"alpha": 1800, "beta": 50}
    # Shares proportional to n ** (1 / T) of the same 1,000 pairs: T=1 keeps the sizes,
    # T=2 gives 30:10, a very high T equal shares.
    assert sample_sizes(mixture(temperature=1.0), kept) == kept
    assert sample_sizes(mixture(temperature=2.0), kept) == {"alpha": 750, "beta": 250}
    assert sample_sizes(mixture(temperature=1e9), kept) == {"alpha": 500, "beta": 500}


@pytest.mark.slow  # over 5 s on 2 cores
def test_tokenizers_learn_the_pairs_in_their_weights_proportions(two_corpora):
    tok = TokenizerConfig(vocab_size=300)
    union = load_split(mixture(), "train", two_corpora)["src"][:]
    assert sample_train_texts(mixture(), tok, two_corpora)[0] == union
    src, tgt = sample_train_texts(mixture(alpha_weight=0.0, beta_weight=3.0), tok, two_corpora)
    assert src == [text for text in union[3:] for _ in range(3)]  # beta's two pairs, 3 times
    assert len(tgt) == 6
    weighted = tokenizer_paths(mixture(beta_weight=4.0), tok, two_corpora)
    assert weighted != tokenizer_paths(mixture(), tok, two_corpora)
    changed = mixture()
    changed.mixture["alpha"].corpus.detokenize_ja = False
    assert tokenizer_paths(changed, tok, two_corpora) != tokenizer_paths(
        mixture(), tok, two_corpora
    )


def member_dict(**changes: object) -> dict:
    return {"name": "alpha", "source": "local", **changes}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"mixture": {"alpha": {"source": "local"}}}, "data.mixture.alpha names no corpus"),
        ({"mixture": {"beta": member_dict()}}, "holds the corpus 'alpha'"),
        ({"mixture": {"alpha": member_dict(weight=-1)}}, "data.mixture.alpha.weight=-1.0 must be"),
        ({"mixture": {"alpha": member_dict(weight=0)}}, "every weight is 0, which leaves no train"),
        (
            {"mixture": {"alpha": member_dict()}, "dev_corpus": "beta"},
            "data.dev_corpus='beta' is not a corpus of the mixture (alpha)",
        ),
        ({"mixture": {"alpha": member_dict()}, "temperature": 0}, "data.temperature=0.0 must be"),
        (
            {"mixture": {"alpha": member_dict(weight=2)}, "temperature": 2},
            "weights or a temperature, not both",
        ),
        ({"mixture": {"alpha": member_dict(mixture={})}}, "mixture"),
        (
            {"mixture": {"alpha": member_dict(corpus={"tgt_lang": "de"})}},
            "data.mixture.alpha translates en-de, the mixture en-ja",
        ),
        (
            {"mixture": {"alpha": member_dict(source="urls")}},
            "data.mixture.alpha.source=urls needs a url",
        ),
    ],
)
def test_bad_mixtures_are_refused_in_one_line(data, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as error:
        to_schema({"name": "mix", **data}, DataConfig)
    assert "\n" not in str(error.value)


def test_everyday_mix_composes_its_members_from_their_configs(train_config):
    data = train_config("data=everyday_mix").data
    assert data.name == "everyday_mix" and data.corpus.source_style == "raw"
    small, tanaka = data.mixture["small_parallel_enja"], data.mixture["tanaka_graded"]
    assert small.corpus.source_style == "lowercase_tokenized" and small.corpus.detokenize_ja
    assert small.cleaning.max_tokens == 64 and small.files[0].name == "train.en"
    assert tanaka.corpus.format == "tsv" and (small.weight, tanaka.weight) == (1.0, 1.0)
    # The resolved config, as a checkpoint stores it, holds everything to rebuild the data.
    assert to_schema(to_data(data), DataConfig) == data
    assert dataclasses.asdict(data)["mixture"]["tanaka_graded"]["files"][0]["bytes"] == 14386032


@pytest.mark.slow
def test_sentence_pairs_join_train_before_deduplication(two_corpora):
    write(
        Path(two_corpora.raw_dir),
        "beta",
        {
            **BETA,
            "train.tsv": (
                "Hello. I like cats.\tこんにちは。猫が好きです。\n"  # two sentence pairs more
                "Stop it! Why?\tやめて！\n"  # two sentences, one: no sentence pairs
                # Sentences of alpha's test and beta's dev: held_out_overlap, as whole pairs are.
                "She is tall. He is here.\t彼女は背が高い。彼はここにいる。\n"
            ),
        },
    )
    plain = load_split(mixture(), "train", two_corpora)
    train = load_split(mixture(sentence_pairs=True), "train", two_corpora)
    assert train["src"][: len(plain)] == plain["src"][:]  # the whole pairs stay
    assert list(zip(train["src"][len(plain) :], train["tgt"][len(plain) :], strict=True)) == [
        ("Hello.", "こんにちは。"),
        ("I like cats.", "猫が好きです。"),
    ]
    assert train["corpus"][len(plain) :] == ["beta", "beta"]
    dev = load_split(mixture(sentence_pairs=True), "dev", two_corpora)
    assert dev["src"][:] == ["Good morning.", "He is here."]  # held-out splits as written


def test_a_weight_of_zero_trains_none_of_a_corpus_and_scores_it(two_corpora, word_tokenizer):
    data = build_data(mixture(beta_weight=0.0), word_tokenizer, word_tokenizer, two_corpora)
    assert set(data.splits["train"]["corpus"][:]) == {"alpha"}
    assert data.report.corpora["beta"] == {"kept": 1, "sampled": 0}
    for split in ("dev", "test"):  # held out as with any weight: scored beside alpha's
        assert sorted(set(data.splits[split]["corpus"][:])) == ["alpha", "beta"]


def test_an_empty_held_out_split_removes_nothing():
    train = datasets.Dataset.from_dict({"src": ["a b", "a b", "c"], "tgt": ["x", "x", "y"]})
    empty = train.select([])  # a corpus whose test split is held back
    kept, counts = unique_train(train, [empty])
    assert kept["src"][:] == ["a b", "c"] and counts == {"duplicate": 1, "held_out_overlap": 0}
