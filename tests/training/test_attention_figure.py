"""The cross-attention figures TensorBoard shows: both axes labelled with the pieces."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest
import torch

from llm_from_scratch.training import attention_figure as attention_figure_module
from llm_from_scratch.training import validation as validation_module
from llm_from_scratch.training.attention_figure import attention_figure, piece_label, render
from llm_from_scratch.training.stats import RunLogger
from llm_from_scratch.training.trainer import Trainer
from llm_from_scratch.training.validation import ATTENTION_SENTENCES, Validator

from .test_trainer import fp32

SOURCE = ["<0x48>", "ello", " ,", " world", ".", "</s>"]
TARGET = ["こんにちは", "、", "世界", "。", "</s>"]


def tick_labels(axis) -> list[str]:
    return [label.get_text() for label in axis.get_ticklabels()]


def test_both_axes_carry_the_pieces_one_panel_per_layer():
    weights = torch.softmax(torch.randn(2, len(TARGET), len(SOURCE)), dim=-1)
    figure = attention_figure(weights, SOURCE, TARGET, title="dev sentence 1")
    assert len(figure.axes) == 2
    for axes in figure.axes:
        # A word-initial space is shown as ▁: an invisible space would hide where words start.
        assert tick_labels(axes.xaxis) == ["<0x48>", "ello", "▁,", "▁world", ".", "</s>"]
        assert tick_labels(axes.yaxis) == TARGET
    image = render(figure)
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.std() > 0  # something was drawn


def test_pieces_that_do_not_match_the_weights_are_refused():
    with pytest.raises(ValueError, match="does not match 4 target and 6 source pieces"):
        attention_figure(torch.rand(1, 5, 6), SOURCE, TARGET[:4], title="")


def test_piece_labels_show_word_starts_and_empty_pieces():
    assert piece_label(" the") == "▁the"
    assert piece_label("") == "∅"


def test_validation_draws_short_dev_sentences_with_their_tokenizer_pieces(
    copy_task, tmp_path, monkeypatch
):
    config, data, _ = copy_task
    trainer = Trainer(fp32(config, tmp_path, dev_bleu_sentences=8), data)
    validator = Validator(trainer.model, data, trainer.precision, trainer.config)
    drawn = []

    def spy(weights, src_pieces, tgt_pieces, title):
        drawn.append((weights, src_pieces, tgt_pieces))
        return attention_figure(weights, src_pieces, tgt_pieces, title)

    monkeypatch.setattr(validation_module, "attention_figure", spy)
    log = RunLogger(tmp_path / "tensorboard")
    validator.run(step=1, log=log)
    log.close()

    assert len(drawn) == ATTENTION_SENTENCES
    layers = config.model.n_decoder_layers
    for index, (weights, src_pieces, tgt_pieces) in zip(
        validator.attention_examples, drawn, strict=True
    ):
        example = validator.bleu_subset[index]
        src_tok, tgt_tok = data.src_tok, data.tgt_tok
        assert src_pieces == [src_tok.token_text(i) for i in [*example["src_ids"], src_tok.eos_id]]
        assert tgt_pieces == [tgt_tok.token_text(i) for i in [*example["tgt_ids"], tgt_tok.eos_id]]
        assert weights.shape == (layers, len(tgt_pieces), len(src_pieces))
        # Each row is one target position's attention over the source: heads averaged, it sums to 1.
        torch.testing.assert_close(weights.sum(-1), torch.ones(layers, len(tgt_pieces)))


def test_long_sentences_are_drawn_only_when_no_shorter_ones_are_left(
    copy_task, tmp_path, monkeypatch
):
    config, data, _ = copy_task
    trainer = Trainer(fp32(config, tmp_path, dev_bleu_sentences=30), data)
    dev = data.splits["dev"].select(range(30))
    lengths = [max(pair) for pair in zip(dev["src_len"], dev["tgt_len"], strict=True)]
    limit = sorted(lengths[:6])[2]  # some of the first sentences are longer than this
    monkeypatch.setattr(validation_module, "ATTENTION_MAX_PIECES", limit)
    validator = Validator(trainer.model, data, trainer.precision, trainer.config)
    short = [index for index, length in enumerate(lengths) if length <= limit]
    assert validator.attention_examples == short[:ATTENTION_SENTENCES] != [0, 1, 2]

    monkeypatch.setattr(validation_module, "ATTENTION_MAX_PIECES", 0)
    validator = Validator(trainer.model, data, trainer.precision, trainer.config)
    assert validator.attention_examples == [0, 1, 2]


def render_labels(tgt_pieces: list[str]) -> np.ndarray:
    weights = torch.full((1, len(tgt_pieces), 2), 0.5)
    return render(attention_figure(weights, ["a", "b"], tgt_pieces, "attention"))


def test_japanese_is_drawn_without_a_system_font():
    # The machines this runs on may have no Japanese font (fc-list lists none): the project's
    # matplotlib-fontja dependency provides one, which holds every glyph of the labels...
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    fonts = attention_figure_module._japanese_fonts()
    assert fonts and fonts[0] == "IPAexGothic"
    charmaps = [
        FT2Font(font_manager.findfont(name, fallback_to_default=False)).get_charmap()
        for name in ("DejaVu Sans", *fonts)
    ]
    labels = "".join(TARGET) + "大阪東京▁∅"
    assert [char for char in labels if not any(ord(char) in m for m in charmaps)] == []
    # ... and the figure draws them: a missing glyph is the same box for every character.
    assert not np.array_equal(render_labels(["東京", "。"]), render_labels(["大阪", "。"]))


def test_without_a_japanese_font_the_run_says_once_what_to_install(monkeypatch, caplog):
    from matplotlib import font_manager

    manager = font_manager.fontManager
    japanese = attention_figure_module.JAPANESE_FONTS
    monkeypatch.setattr(manager, "ttflist", [f for f in manager.ttflist if f.name not in japanese])
    monkeypatch.setitem(sys.modules, "matplotlib_fontja", None)  # `import` fails
    monkeypatch.setattr(font_manager, "findSystemFonts", lambda *args, **kwargs: [])
    attention_figure_module._japanese_fonts.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            boxes = render_labels(["東京", "。"])
            assert np.array_equal(boxes, render_labels(["大阪", "。"]))  # boxes alike
        warned = [r.getMessage() for r in caplog.records]
        assert warned == [attention_figure_module.NO_JAPANESE_FONT]
        assert "matplotlib-fontja" in warned[0]
    finally:
        attention_figure_module._japanese_fonts.cache_clear()
