"""The stand-in a time budget's probe times: random ids in the lengths of the corpus's raw lines."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from llm_from_scratch.data.config import CorpusConfig, DataConfig, MixtureMember
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.training.budget.stand_in import PIECE_CHARS, stand_in_data

TSV_SPLITS = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}


def write_corpus(root: Path, name: str, pairs: dict[str, list[tuple[str, str]]]) -> None:
    (root / name).mkdir(parents=True)
    for split, rows in pairs.items():
        text = "".join(f"{english}\t{japanese}\n" for english, japanese in rows)
        (root / name / f"{split}.tsv").write_text(text, encoding="utf-8")


def corpus(name: str, weight: float | None = None) -> DataConfig | MixtureMember:
    corpus_cfg = CorpusConfig(format="tsv", splits=TSV_SPLITS)
    if weight is None:
        return DataConfig(name=name, source="local", corpus=corpus_cfg)
    return MixtureMember(name=name, source="local", corpus=corpus_cfg, weight=weight)


@pytest.fixture
def paths(tmp_path: Path) -> PathsConfig:
    long_english = "word " * 300  # past the cleaning's limit of pieces
    write_corpus(
        tmp_path,
        "alpha",
        {
            "train": [(f"Sentence number {i}.", "文" * (i % 9 + 1)) for i in range(2000)],
            "dev": [("Good morning.", "おはよう。"), (long_english, "長い。")],
            "test": [("She is tall.", "彼女は背が高い。")],
        },
    )
    write_corpus(
        tmp_path,
        "beta",
        {
            "train": [(f"Another one, {i}.", "もう一つ。") for i in range(2000)],
            "dev": [("He is here.", "彼はここにいる。")],
            "test": [("Where are you?", "どこにいるの？")],
        },
    )
    return PathsConfig(root=str(tmp_path), raw_dir=str(tmp_path), cache_dir=str(tmp_path))


def test_each_pair_holds_the_pieces_its_characters_suggest(paths):
    stand_in = stand_in_data(corpus("alpha"), paths)
    dev = stand_in.splits["dev"]
    limit = stand_in.cfg.cleaning.max_tokens
    assert dev["src_len"] == [math.ceil(len("Good morning.") / PIECE_CHARS["en"]), limit]
    assert dev["tgt_len"] == [math.ceil(5 / PIECE_CHARS["ja"]), math.ceil(3 / PIECE_CHARS["ja"])]
    assert [len(ids) for ids in dev["src_ids"]] == dev["src_len"]
    assert len(stand_in.splits["train"]) == 2000  # fewer pairs than a sample: all of them
    # The ids are its tokenizers' bytes: whatever a validation decodes is text.
    ids = stand_in.splits["test"]["tgt_ids"][0]
    assert min(ids) >= stand_in.tgt_tok.pad_id + 3 and max(ids) < stand_in.tgt_tok.vocab_size
    assert isinstance(stand_in.tgt_tok.decode(ids), str)


def test_a_mixture_is_drawn_by_its_weights_and_scored_on_every_member(paths):
    mixture = DataConfig(
        name="both",
        source="local",
        mixture={"alpha": corpus("alpha", 3.0), "beta": corpus("beta", 1.0)},
    )
    stand_in = stand_in_data(mixture, paths)
    drawn = stand_in.splits["train"]["corpus"]
    assert len(drawn) == 4000
    # 4,000 draws at 3:1: alpha's share is 0.75 within seven standard deviations (0.007 each)
    assert abs(drawn.count("alpha") / len(drawn) - 0.75) < 0.05
    assert stand_in.splits["dev"]["corpus"] == ["alpha", "alpha", "beta"]

    mixture.mixture["beta"].weight = 0.0  # scored on, never trained on
    stand_in = stand_in_data(mixture, paths)
    assert set(stand_in.splits["train"]["corpus"]) == {"alpha"}
    assert stand_in.splits["test"]["corpus"] == ["alpha", "beta"]
