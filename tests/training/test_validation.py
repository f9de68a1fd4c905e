"""Validation decodes dev like the translator does: one batching, one greedy search; with several
corpora in dev and test, it scores each one too."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from llm_from_scratch.data.corpus import CORPUS_COLUMN
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.evaluation.curves import read_scalars
from llm_from_scratch.evaluation.metrics import corpus_scores
from llm_from_scratch.training import validation as validation_module
from llm_from_scratch.training.stats import RunLogger
from llm_from_scratch.training.trainer import Trainer
from llm_from_scratch.training.validation import Validator
from tests.decoding.builders import answering

from .test_trainer import fp32


@pytest.mark.slow
def test_validation_greedy_equals_the_translator_with_beam_size_one(copy_task, tmp_path):
    config, data, _ = copy_task
    # A budget of a few sources per batch, so that both sides decode dev in several batches.
    decoding = dataclasses.replace(config.decoding, batch_tokens=60)
    config = dataclasses.replace(config, decoding=decoding)
    settings = {"max_steps": 150, "warmup_steps": 30, "eval_every": 1000, "save_every": 150}
    trainer = Trainer(fp32(config, tmp_path, dev_bleu_sentences=8, **settings), data)
    trainer.fit()
    dev = data.splits["dev"]
    # The translator tokenizes the texts itself; dev's cached ids are the same encoding.
    assert list(dev["src_ids"]) == [data.src_tok.encode(text) for text in dev["src"]]

    hypotheses = Validator(trainer.model, data, trainer.precision, trainer.config).translate(
        dev["src_ids"], dev["src"]
    )
    # At the precision validation decoded at (training's), not the translator's own choice, and
    # like validation without the no-repeat constraint, nor a second search of a runaway piece.
    greedy = dataclasses.replace(
        decoding,
        beam_size=1,
        nbest=1,
        no_repeat_ngram_size=0,
        split_runaways=False,
        precision=trainer.precision.name,
    )
    translator = Translator.from_checkpoint(tmp_path / "last.pt", "cpu", greedy)
    translations = translator.translate(list(dev["src"]))
    assert [t.text for t in translations] == hypotheses
    # Outputs of several lengths, some ending at EOS: not every one runs to the length limit.
    assert len({len(t.candidates[0].tokens) for t in translations}) > 1
    assert not all(t.candidates[0].hit_max_len for t in translations)


def with_corpora(data, corpora_of: dict[str, list[str]]):
    """`data` with a `corpus` column in the splits named, as a mixture's splits hold."""
    splits = dict(data.splits)
    for split, corpora in corpora_of.items():
        splits[split] = splits[split].add_column(CORPUS_COLUMN, corpora)
    return dataclasses.replace(data, splits=splits)


def two_corpora(data):
    """dev and test (60 pairs each) as 40 pairs of copy_a followed by 20 of copy_b."""
    corpora = ["copy_a"] * 40 + ["copy_b"] * 20
    return with_corpora(data, {"dev": corpora, "test": corpora})


def untrained_validator(config, data, run_dir, sentences: int) -> Validator:
    trainer = Trainer(fp32(config, run_dir, dev_bleu_sentences=sentences), data)
    return Validator(trainer.model, data, trainer.precision, trainer.config)


def imperfect(references: list[str], corpora: list[str]) -> list[str]:
    """copy_a's references as they are, copy_b's without their last word: two BLEU scores."""
    return [
        ref if corpus == "copy_a" else ref.rsplit(" ", 1)[0]
        for ref, corpus in zip(references, corpora, strict=True)
    ]


def test_the_bleu_sentences_are_spread_over_the_corpora(copy_task, tmp_path, monkeypatch):
    config, data, _ = copy_task
    data = two_corpora(data)
    dev = data.splits["dev"]
    validator = untrained_validator(config, data, tmp_path, sentences=10)
    expected = [*range(0, 5), *range(40, 45)]
    assert validator.bleu_subset["src"] == dev.select(expected)["src"]
    assert validator.subset_corpora == ["copy_a"] * 5 + ["copy_b"] * 5
    # copy_b has 20: a budget of 50 takes them all and copy_a's first 30.
    wide = untrained_validator(config, data, tmp_path, sentences=50)
    assert wide.bleu_subset["src"] == dev.select([*range(0, 30), *range(40, 60)])["src"]

    # What the budget planner times and charges is what a validation decodes.
    decoded: list[list[list[int]]] = []
    original = validation_module.decode_pieces

    def recording(model, src_ids, *args, **kwargs):
        decoded.append([list(ids) for ids in src_ids])
        return original(model, src_ids, *args, **kwargs)

    monkeypatch.setattr(validation_module, "decode_pieces", recording)
    validator.rehearse_decoding()
    validator.run(1, RunLogger(None))
    assert len(decoded) == 2 and decoded[0] == decoded[1] == [
        list(ids) for ids in dev.select(expected)["src_ids"]
    ]
    test_tokens = sum(data.splits["test"]["tgt_len"])
    assert validator.test_share() == test_tokens / sum(dev.select(expected)["tgt_len"])


def test_dev_and_test_scores_per_corpus_equal_each_corpus_scored_alone(
    copy_task, tmp_path, monkeypatch
):
    config, data, _ = copy_task
    data = two_corpora(data)
    validator = untrained_validator(config, data, tmp_path, sentences=30)
    translated = {}

    def translate(src_ids, sources):
        split = "test" if len(src_ids) == len(data.splits["test"]) else "dev"
        rows = data.splits["test"] if split == "test" else validator.bleu_subset
        translated[split] = imperfect(rows["tgt"], rows[CORPUS_COLUMN])
        return translated[split]

    monkeypatch.setattr(validator, "translate", translate)
    log = RunLogger(tmp_path / "tensorboard")
    dev = validator.run(7, log)
    test = validator.score_test(7, log)
    log.close()

    for metrics, rows, split in (
        (dev, validator.bleu_subset, "dev"),
        (test, data.splits["test"], "test"),
    ):
        references, corpora = rows["tgt"], rows[CORPUS_COLUMN]
        overall = corpus_scores(translated[split], references, "ja")
        assert (metrics["bleu"], metrics["chrf"]) == (overall.bleu, overall.chrf)
        for corpus in ("copy_a", "copy_b"):
            own = [i for i, name in enumerate(corpora) if name == corpus]
            alone = corpus_scores(
                [translated[split][i] for i in own], [references[i] for i in own], "ja"
            )
            assert metrics[f"{corpus}/bleu"] == alone.bleu
            assert metrics[f"{corpus}/chrf"] == alone.chrf
        assert metrics["copy_a/bleu"] == pytest.approx(100.0)
        assert metrics["copy_b/bleu"] < 90.0

    scalars = read_scalars(tmp_path)
    for tag in ("dev/copy_a/bleu", "dev/copy_b/chrf", "test/copy_a/chrf", "test/copy_b/bleu"):
        split, corpus, name = tag.split("/")
        metrics = dev if split == "dev" else test
        assert scalars[tag] == [(7, pytest.approx(metrics[f"{corpus}/{name}"]))]
    # The examples come from both corpora, each row naming its corpus.
    table = validator._examples_table(translated["dev"]).splitlines()
    assert table[0] == "| corpus | source | reference | hypothesis |"
    assert [row.split(" | ")[0] for row in table[2:]] == ["| copy_a"] * 3 + ["| copy_b"] * 2


def test_a_domain_that_fills_the_bleu_sentences_is_still_scored_under_its_name(
    copy_task, tmp_path, monkeypatch
):
    """A fine-tuning run's `data.dev_corpus` with as many dev pairs as `dev_bleu_sentences`
    leaves the other corpora none: its BLEU, which picks best.pt, keeps its key."""
    config, data, _ = copy_task
    data = two_corpora(data)
    domain_config = dataclasses.replace(config, data=copy.copy(config.data))
    domain_config.data.dev_corpus = "copy_a"  # a mixture's, set past the one-corpus check
    validator = untrained_validator(domain_config, data, tmp_path, sentences=30)
    assert validator.subset_corpora == ["copy_a"] * 30
    rows = validator.bleu_subset
    imperfect_rows = imperfect(rows["tgt"], ["copy_b"] * len(rows))  # a BLEU below 100
    monkeypatch.setattr(validator, "translate", lambda src_ids, sources: imperfect_rows)
    dev = validator.run(1, RunLogger(None))
    assert (dev["copy_a/bleu"], dev["copy_a/chrf"]) == (dev["bleu"], dev["chrf"])
    assert "copy_b/bleu" not in dev


@pytest.mark.parametrize("column", [False, True])
def test_one_corpus_validates_as_before(copy_task, tmp_path, column):
    """Without a `corpus` column, or with one value in it: the first BLEU sentences, the
    overall scores only, no other TensorBoard tag."""
    config, data, _ = copy_task
    if column:
        data = with_corpora(data, {split: ["copy"] * 60 for split in ("dev", "test")})
    validator = untrained_validator(config, data, tmp_path, sentences=30)
    assert validator.bleu_subset["src"] == data.splits["dev"]["src"][:30]
    log = RunLogger(tmp_path / "tensorboard")
    dev = validator.run(3, log)
    test = validator.score_test(3, log)
    log.close()
    assert set(dev) == {"loss", "perplexity", "bleu", "chrf"}
    assert test is not None and set(test) == {"bleu", "chrf"}
    scalars = set(read_scalars(tmp_path))
    assert scalars == {
        "dev/loss",
        "dev/perplexity",
        "dev/bleu",
        "dev/chrf",
        "test/bleu",
        "test/chrf",
    }
    table = validator._examples_table(["x"] * 30).splitlines()
    assert table[0] == "| source | reference | hypothesis |" and len(table) == 7


@pytest.mark.parametrize("repair", [True, False])
def test_validation_repairs_numbers_as_the_translator_does(
    copy_task, tmp_path, monkeypatch, repair
):
    config, data, _ = copy_task
    decoding = dataclasses.replace(config.decoding, repair_numbers=repair)
    trainer = Trainer(fp32(dataclasses.replace(config, decoding=decoding), tmp_path), data)
    monkeypatch.setattr(validation_module, "decode_pieces", answering(data.tgt_tok, "1959年。"))
    validator = Validator(trainer.model, data, trainer.precision, trainer.config)
    hypotheses = validator.translate([[5], [6]], ["in 1995", "no number"])
    assert hypotheses == ["1995年。" if repair else "1959年。", "1959年。"]
