"""Text in, text out: splitting, batching and hostile input (tiny copy model, builders.py)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from llm_from_scratch import precision as precision_module
from llm_from_scratch.decoding.batched import decode_pieces, length_batches
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.translator import InputError, Translator
from llm_from_scratch.errors import ConfigError

GREEDY = DecodingConfig(beam_size=1, length_penalty=0.0, max_len_a=1.0, max_len_b=5)


@pytest.fixture
def translator(copy_model, tokenizer) -> Translator:
    return Translator(copy_model, tokenizer, tokenizer, GREEDY)


def test_one_translation_per_text_and_empty_stays_empty(translator):
    translations = translator.translate(["the cat sat.", "", "   ", "a dog"])
    assert len(translations) == 4
    assert translations[1].text == translations[2].text == ""
    assert translations[1].candidates == []
    assert all(t.candidates for t in (translations[0], translations[3]))


def test_long_input_is_split_into_fitting_pieces_never_cut(translator, tokenizer):
    text = "The cat sat on the mat. " * 6 + "a" + "x" * 200 + " end."
    pieces = translator._pieces(text)
    assert len(pieces) > 1
    assert all(len(piece) <= translator.max_src_tokens for piece in pieces)
    assert "".join(tokenizer.decode(piece) for piece in pieces) == tokenizer.normalize(text)


def test_piece_limit_keeps_output_limit_within_positions(copy_model, tokenizer):
    translator = Translator(copy_model, tokenizer, tokenizer, GREEDY)
    longest_source = translator.max_src_tokens + 1  # with its EOS
    assert GREEDY.max_len_a * longest_source + GREEDY.max_len_b <= copy_model.cfg.max_positions


def test_split_input_joins_the_translations_of_its_pieces(translator, copy_model, tokenizer):
    text = "the cat sat on the mat. " * 8
    pieces = translator._pieces(text.strip())
    assert len(pieces) > 1
    whole = translator.translate([text])[0].candidates[0]
    per_piece = [
        decode_pieces(copy_model, [piece], tokenizer, tokenizer, GREEDY)[0][0] for piece in pieces
    ]
    assert whole.tokens == [token for hyp in per_piece for token in hyp.tokens]


def test_batches_respect_the_token_budget():
    decode = DecodingConfig(beam_size=2, nbest=1, batch_tokens=60)
    pieces = [[5] * n for n in (3, 9, 1, 14, 6, 2, 30, 7)]
    batches = length_batches(pieces, decode.beam_size, decode.batch_tokens)
    assert sorted(i for batch in batches for i in batch) == list(range(len(pieces)))
    for batch in batches:
        padded = max(len(pieces[i]) for i in batch) + 1
        assert len(batch) == 1 or len(batch) * padded * decode.beam_size <= decode.batch_tokens


def test_batch_size_does_not_change_translations(copy_model, tokenizer):
    texts = ["the cat sat.", "a dog ran to the park.", "これはテストです。", "mat", "the the"]
    small = Translator(
        copy_model, tokenizer, tokenizer, DecodingConfig(beam_size=3, batch_tokens=1)
    )
    large = Translator(copy_model, tokenizer, tokenizer, DecodingConfig(beam_size=3))
    assert [t.text for t in small.translate(texts)] == [t.text for t in large.translate(texts)]


def test_nbest_candidates_are_best_first(copy_model, tokenizer):
    decode = DecodingConfig(beam_size=4, nbest=3)
    translation = Translator(copy_model, tokenizer, tokenizer, decode).translate(["the cat"])[0]
    scores = [c.score for c in translation.candidates]
    assert len(scores) == 3
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    "text",
    ["😀🎌 cat", "a\x00b\x1bc\x7f", "line\nbreak\u2028here", "\u200b", "ｆｕｌｌ　ｗｉｄｔｈ"],
)
def test_odd_characters_give_one_line_of_output(translator, text):
    (translation,) = translator.translate([text])
    assert "\n" not in translation.text
    assert "\u2028" not in translation.text


def test_invalid_unicode_is_a_clear_error(translator):
    with pytest.raises(InputError, match="not valid UTF-8"):
        translator.translate(["ok", "bad \udcff byte"])


def test_input_is_put_in_the_training_corpus_source_style(copy_model, tokenizer):
    styled = Translator(
        copy_model, tokenizer, tokenizer, GREEDY, source_style="lowercase_tokenized"
    )
    raw = Translator(copy_model, tokenizer, tokenizer, GREEDY)
    as_typed, as_in_corpus = styled.translate(["The Cat."])[0], raw.translate(["the cat ."])[0]
    assert as_typed.candidates[0].tokens == as_in_corpus.candidates[0].tokens
    assert raw.translate(["The Cat."])[0].candidates[0].tokens != as_typed.candidates[0].tokens


def test_streamed_translations_equal_the_batch_ones_in_order(copy_model, tokenizer):
    texts = ["the cat sat.", "", "a dog ran to the park.", "これはテストです。", "mat", "the the"]
    translator = Translator(copy_model, tokenizer, tokenizer, DecodingConfig(beam_size=3, nbest=2))

    def outputs(translations):  # scores may differ in the last bit with the batch's make-up
        return [
            [(c.text, c.tokens, pytest.approx(c.score)) for c in t.candidates] for t in translations
        ]

    expected = outputs(translator.translate(texts))
    for batch_lines in (1, 4, 100):
        assert outputs(translator.translate_iter(iter(texts), batch_lines)) == expected


def test_streaming_translates_a_group_only_when_asked_for_it(translator, monkeypatch):
    groups = []
    translate = translator.translate
    monkeypatch.setattr(
        translator, "translate", lambda texts: groups.append(texts) or translate(texts)
    )
    stream = translator.translate_iter(["a", "b", "c", "d", "e"], batch_lines=2)
    assert next(stream).candidates is not None
    assert groups == [["a", "b"]]  # the first translation comes before the rest is translated
    assert len(list(stream)) == 4
    assert groups == [["a", "b"], ["c", "d"], ["e"]]


@pytest.mark.parametrize(
    ("precision", "bf16_faster", "expected"),
    [("auto", True, torch.bfloat16), ("auto", False, None), ("fp32", True, None)],
)
def test_decoding_autocasts_to_the_precision_chosen(
    copy_model, tokenizer, monkeypatch, precision, bf16_faster, expected
):
    monkeypatch.setattr(precision_module, "cpu_bf16_is_faster", lambda: bf16_faster)
    autocast = []
    decode = copy_model.decode

    def spy(*args, **kwargs):
        enabled = torch.is_autocast_enabled("cpu")
        autocast.append(torch.get_autocast_dtype("cpu") if enabled else None)
        return decode(*args, **kwargs)

    monkeypatch.setattr(copy_model, "decode", spy)
    config = dataclasses.replace(GREEDY, precision=precision)
    Translator(copy_model, tokenizer, tokenizer, config).translate(["the cat sat."])
    assert set(autocast) == {expected}


def test_fp16_decoding_on_a_cpu_is_a_config_error(copy_model, tokenizer):
    with pytest.raises(ConfigError, match=r"decoding\.precision=fp16 needs a GPU"):
        Translator(copy_model, tokenizer, tokenizer, dataclasses.replace(GREEDY, precision="fp16"))
