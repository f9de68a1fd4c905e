"""Validation decodes dev like the translator does: one batching, one greedy search."""

from __future__ import annotations

import dataclasses

import pytest

from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.training import validation
from llm_from_scratch.training.trainer import Trainer
from llm_from_scratch.training.validation import Validator
from tests.decoding.builders import answering

from .test_trainer import fp32


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
    # like validation without the no-repeat constraint.
    greedy = dataclasses.replace(
        decoding,
        beam_size=1,
        nbest=1,
        no_repeat_ngram_size=0,
        precision=trainer.precision.name,
    )
    translator = Translator.from_checkpoint(tmp_path / "last.pt", "cpu", greedy)
    translations = translator.translate(list(dev["src"]))
    assert [t.text for t in translations] == hypotheses
    # Outputs of several lengths, some ending at EOS: not every one runs to the length limit.
    assert len({len(t.candidates[0].tokens) for t in translations}) > 1
    assert not all(t.candidates[0].hit_max_len for t in translations)


@pytest.mark.parametrize("repair", [True, False])
def test_validation_repairs_numbers_as_the_translator_does(
    copy_task, tmp_path, monkeypatch, repair
):
    config, data, _ = copy_task
    decoding = dataclasses.replace(config.decoding, repair_numbers=repair)
    trainer = Trainer(fp32(dataclasses.replace(config, decoding=decoding), tmp_path), data)
    monkeypatch.setattr(validation, "decode_pieces", answering(data.tgt_tok, "1959年。"))
    validator = Validator(trainer.model, data, trainer.precision, trainer.config)
    hypotheses = validator.translate([[5], [6]], ["in 1995", "no number"])
    assert hypotheses == ["1995年。" if repair else "1959年。", "1959年。"]
