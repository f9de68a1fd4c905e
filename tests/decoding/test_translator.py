"""Text in, text out: sentences and lines, splitting, batching and hostile input (tiny copy
model, builders.py)."""

from __future__ import annotations

import dataclasses
import gzip
import sys
import unicodedata

import pytest
import torch

from llm_from_scratch import precision as precision_module
from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from llm_from_scratch.data.sentences import split_sentences
from llm_from_scratch.decoding import torch_engine
from llm_from_scratch.decoding.batched import decode_pieces, length_batches
from llm_from_scratch.decoding.common import Hypothesis
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.lines import InputError, one_line
from llm_from_scratch.decoding.translator import Candidate, Translation, Translator
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.programs import evaluate as evaluate_cli
from llm_from_scratch.programs.model_choice import decoding_overrides, load_translator
from tests.decoding.builders import answering

from .builders import save_tiny_checkpoint, torch_translator

GREEDY = DecodingConfig(beam_size=1, length_penalty=0.0, max_len_a=1.0, max_len_b=5)


@pytest.fixture
def translator(copy_model, tokenizer) -> Translator:
    return torch_translator(copy_model, tokenizer, GREEDY)


def test_one_translation_per_text_and_empty_stays_empty(translator):
    translations = translator.translate(["the cat sat.", "", "   ", "a dog"])
    assert len(translations) == 4
    assert translations[1].text == translations[2].text == ""
    assert translations[1].candidates == []
    assert all(t.candidates for t in (translations[0], translations[3]))


def test_split_input_joins_the_translations_of_its_pieces(translator, copy_model, tokenizer):
    text = "the cat sat on the mat, " * 8  # one sentence, too long for the model: cut at commas
    pieces = [piece for sentence in translator.sentences(text) for piece in sentence.pieces]
    assert len(pieces) > 1
    whole = translator.translate([text])[0].candidates[0]
    per_piece = [
        decode_pieces(copy_model, [piece], tokenizer, tokenizer, GREEDY)[0][0] for piece in pieces
    ]
    assert whole.tokens == [token for hyp in per_piece for token in hyp.tokens]


@pytest.mark.parametrize(
    ("target_lang", "answer", "expected"),
    [
        ("ja", "猫が座った。", "猫が座った、猫が座った、猫が座った。猫が座った。"),
        ("ja", "猫が、。", "猫が、猫が、猫が、。猫が、。"),  # no second comma
        ("en", "A cat sat.", "A cat sat, A cat sat, A cat sat. A cat sat."),
        ("en", "A cat sat?", "A cat sat? A cat sat? A cat sat? A cat sat?"),  # not a full stop
    ],
)
def test_a_clause_translated_alone_goes_on_after_a_comma_not_a_full_stop(
    copy_model, tokenizer, monkeypatch, target_lang, answer, expected
):
    monkeypatch.setattr(torch_engine, "decode_pieces", answering(tokenizer, answer))
    decode = dataclasses.replace(GREEDY, clause_split_tokens=4)
    translator = torch_translator(copy_model, tokenizer, decode, target_lang=target_lang)
    text = "the cat sat on the mat, the dog sat on the rug; a bird sang on the roof. The cat ran."
    assert len(translator.sentences(text)[0].pieces) == 3
    assert translator.translate([text])[0].text == expected


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
    small = torch_translator(copy_model, tokenizer, DecodingConfig(beam_size=3, batch_tokens=1))
    large = torch_translator(copy_model, tokenizer, DecodingConfig(beam_size=3))
    assert [t.text for t in small.translate(texts)] == [t.text for t in large.translate(texts)]


def test_nbest_candidates_are_best_first(copy_model, tokenizer):
    decode = DecodingConfig(beam_size=4, nbest=3)
    translation = torch_translator(copy_model, tokenizer, decode).translate(["the cat"])[0]
    scores = [c.score for c in translation.candidates]
    assert len(scores) == 3
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    "text",
    ["😀🎌 cat", "a\x00b\x1bc\x7f", "line\nbreak\u2028here", "\u200b", "ｆｕｌｌ　ｗｉｄｔｈ"],
)
def test_odd_characters_give_the_lines_of_the_input(translator, text):
    (translation,) = translator.translate([text])
    if translation.candidates:  # "\u200b" normalizes to nothing
        assert translation.text.count("\n") == text.count("\n")  # U+2028 is no line break
    assert "\u2028" not in translation.text


def test_the_characters_made_spaces_are_unicodes_controls_and_line_and_paragraph_separators():
    every_character = "".join(map(chr, range(sys.maxunicode + 1)))
    expected = "".join(
        " " if unicodedata.category(char) in ("Cc", "Zl", "Zp") else char
        for char in every_character
    )
    assert one_line(every_character) == expected


FIVE_SENTENCES = "the cat sat. a dog ran. the mat. これはテストです。 the park!"


def test_every_sentence_is_decoded_in_one_batch_and_joined(translator, monkeypatch):
    """Sentences in against sentences out: a line of five gives five decoded sentences, all
    decoded in one call with the other texts', and its translation joins their five results."""
    calls = []
    decode = torch_engine.decode_pieces
    monkeypatch.setattr(
        torch_engine,
        "decode_pieces",
        lambda model, pieces, *args, **kwargs: (
            calls.append(len(pieces)) or decode(model, pieces, *args, **kwargs)
        ),
    )
    sentences = split_sentences(FIVE_SENTENCES)
    assert len(sentences) == 5
    whole, other = translator.translate([FIVE_SENTENCES, "the mat."])
    assert calls == [5 + 1]
    assert [source.text for source in whole.sentences] == sentences
    assert len(whole.candidates[0].sentences) == 5
    one_by_one = translator.translate(sentences)
    assert whole.text == "".join(t.text for t in one_by_one)  # the Japanese joiner: no space
    assert [s.text for s in whole.candidates[0].sentences] == [t.text for t in one_by_one]
    assert other.text == translator.translate(["the mat."])[0].text


def test_line_breaks_are_kept_and_empty_lines_stay_empty(copy_model, tokenizer):
    translator = torch_translator(copy_model, tokenizer, GREEDY, target_lang="en")
    lines = ["the cat sat. a dog ran.", "", "  ", "the mat.\r", "the park!"]
    (translation,) = translator.translate(["\n".join(lines)])
    expected = [t.text for t in translator.translate(lines)]
    assert translation.text.split("\n") == expected
    # A final line break, as a file's lines end, starts no line.
    assert translator.translate(["\n".join(lines) + "\n"])[0].text == translation.text
    assert expected[1] == expected[2] == "" and all(expected[i] for i in (0, 3, 4))
    assert [source.line for source in translation.sentences] == [0, 0, 3, 4]
    first = translator.translate(["the cat sat.", "a dog ran."])
    assert expected[0] == " ".join(t.text for t in first)  # the joiner of a spaced language


def test_nbest_candidates_of_several_sentences_join_hypotheses_of_the_same_rank(
    copy_model, tokenizer
):
    translator = torch_translator(copy_model, tokenizer, DecodingConfig(beam_size=3, nbest=2))
    (whole,) = translator.translate(["the cat sat. a dog ran."])
    first, second = translator.translate(["the cat sat.", "a dog ran."])
    for rank, candidate in enumerate(whole.candidates):
        assert candidate.text == first.candidates[rank].text + second.candidates[rank].text
        assert candidate.score == pytest.approx(
            first.candidates[rank].score + second.candidates[rank].score
        )


def test_invalid_unicode_is_a_clear_error(translator):
    with pytest.raises(InputError, match="not valid UTF-8"):
        translator.translate(["ok", "bad \udcff byte"])


def test_input_is_put_in_the_training_corpus_source_style(copy_model, tokenizer):
    styled = torch_translator(copy_model, tokenizer, GREEDY, source_style="lowercase_tokenized")
    raw = torch_translator(copy_model, tokenizer, GREEDY)
    as_typed, as_in_corpus = styled.translate(["The Cat."])[0], raw.translate(["the cat ."])[0]
    assert as_typed.candidates[0].tokens == as_in_corpus.candidates[0].tokens
    assert raw.translate(["The Cat."])[0].candidates[0].tokens != as_typed.candidates[0].tokens


def test_streamed_translations_equal_the_batch_ones_in_order(copy_model, tokenizer):
    texts = ["the cat sat.", "", "a dog ran to the park.", "これはテストです。", "mat", "the the"]
    translator = torch_translator(copy_model, tokenizer, DecodingConfig(beam_size=3, nbest=2))

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
    torch_translator(copy_model, tokenizer, config).translate(["the cat sat."])
    assert set(autocast) == {expected}


def test_fp16_decoding_on_a_cpu_is_a_config_error(copy_model, tokenizer):
    with pytest.raises(ConfigError, match=r"decoding\.precision=fp16 needs a GPU"):
        torch_translator(copy_model, tokenizer, dataclasses.replace(GREEDY, precision="fp16"))


@pytest.mark.parametrize("repair", [True, False])
def test_each_sentence_gets_its_own_numbers_back_unless_switched_off(
    copy_model, tokenizer, monkeypatch, repair
):
    monkeypatch.setattr(torch_engine, "decode_pieces", answering(tokenizer, "1959年に3人。"))
    decode = dataclasses.replace(GREEDY, repair_numbers=repair)
    translator = torch_translator(copy_model, tokenizer, decode)
    text = "We met in 1995, the 4 of us. I was 20 in 2015. I was 20.\nNo numbers here."
    [translation] = translator.translate([text])
    if repair:
        # The third sentence has one number for the output's two: left as it is.
        assert translation.text == "1995年に4人。20年に2015人。1959年に3人。\n1959年に3人。"
    else:  # the decoded text as it is
        assert translation.text == "1959年に3人。" * 3 + "\n1959年に3人。"
    assert translation.candidates[0].tokens == tokenizer.encode("1959年に3人。") * 4


@pytest.mark.parametrize(
    ("numbers_first", "beam_size", "nbest", "expected"),
    [
        (True, 2, 1, ["1995年に生まれた。"]),  # the second keeps the number
        (True, 2, 2, ["1995年に生まれた。", "年に生まれた。"]),  # the rest in score order
        (False, 2, 2, ["年に生まれた。", "1995年に生まれた。"]),  # score order alone
        (True, 1, 1, ["年に生まれた。"]),  # greedy search has one hypothesis
    ],
)
def test_the_best_hypothesis_that_keeps_the_numbers_comes_first(
    copy_model, tokenizer, monkeypatch, numbers_first, beam_size, nbest, expected
):
    searched = []

    def search(model, pieces, src_tok, tgt_tok, cfg, use_cache):
        searched.append(cfg.nbest)
        outputs = ["年に生まれた。", "1995年に生まれた。"][: cfg.beam_size]
        return [
            [Hypothesis(tokenizer.encode(text), -rank, False) for rank, text in enumerate(outputs)]
            for _ in pieces
        ]

    monkeypatch.setattr(torch_engine, "decode_pieces", search)
    decode = dataclasses.replace(
        GREEDY, beam_size=beam_size, nbest=nbest, numbers_first=numbers_first
    )
    translator = torch_translator(copy_model, tokenizer, decode)
    [translation] = translator.translate(["I was born in 1995."])
    assert [candidate.text for candidate in translation.candidates] == expected
    assert searched == [beam_size if numbers_first else nbest]
    # A source without numbers is searched and ranked as without the option.
    [plain] = translator.translate(["I was born."])
    assert plain.candidates[0].text == "年に生まれた。"
    assert searched[-1] == nbest


@pytest.mark.parametrize(
    ("target_lang", "expected"), [("ja", "１，２００人から３人。"), ("en", "1,200人から3人。")]
)
def test_a_placeholder_model_reads_masked_numbers_and_writes_them_back(
    copy_model, tokenizer, monkeypatch, target_lang, expected
):
    searched = []

    def search(model, pieces, *args):
        searched.extend(pieces)
        return answering(tokenizer, "\ue001人から\ue000人。")(model, pieces)

    monkeypatch.setattr(torch_engine, "decode_pieces", search)
    translator = torch_translator(
        copy_model, tokenizer, GREEDY, target_lang=target_lang, number_placeholders=True
    )
    [translation] = translator.translate(["From 3 to 1,200 people."])
    assert searched == [tokenizer.encode("From \ue000 to \ue001 people.")]
    assert translation.text == expected  # full-width digits in Japanese


@pytest.mark.parametrize(
    ("corpus_digits", "decoding_digits", "expected"),
    [
        ("ascii", None, "1,200人から3人。"),
        ("full_width", "ascii", "1,200人から3人。"),
        ("ascii", "full_width", "１，２００人から３人。"),
    ],
)
def test_a_copied_number_is_written_in_the_corpus_digits_unless_decoding_says_otherwise(
    copy_model, tokenizer, monkeypatch, corpus_digits, decoding_digits, expected
):
    answer = answering(tokenizer, "\ue001人から\ue000人。")
    monkeypatch.setattr(
        torch_engine, "decode_pieces", lambda model, pieces, *args: answer(model, pieces)
    )
    decode = dataclasses.replace(GREEDY, number_digits=decoding_digits)
    translator = torch_translator(
        copy_model, tokenizer, decode, number_placeholders=True, number_digits=corpus_digits
    )
    assert translator.translate(["From 3 to 1,200 people."])[0].text == expected


def test_a_name_placeholder_model_copies_the_names_it_rarely_saw(
    copy_model, tokenizer, monkeypatch
):
    searched = []

    def search(model, pieces, *args):
        searched.extend(pieces)
        return answering(tokenizer, "\ue010は\ue000時に来た。")(model, pieces)

    monkeypatch.setattr(torch_engine, "decode_pieces", search)
    translator = torch_translator(
        copy_model, tokenizer, GREEDY, number_placeholders=True, name_placeholders=True
    )
    [translation] = translator.translate(["The cat Quixbury came at 5."])
    # `The` and `cat` are pieces of the tokenizer's own; `Quixbury` it spells letter by letter.
    assert searched == [tokenizer.encode("The cat \ue010 came at \ue000.")]
    assert translation.text == "Quixburyは５時に来た。"
    without = torch_translator(copy_model, tokenizer, GREEDY, number_placeholders=True)
    assert without.sentences("The cat Quixbury came at 5.")[0].names == []


def test_a_rare_foreign_name_the_dictionary_knows_is_rendered_in_katakana(
    copy_model, tokenizer, monkeypatch
):
    monkeypatch.setattr(torch_engine, "decode_pieces", answering(tokenizer, "\ue010は来た。"))
    translator = torch_translator(copy_model, tokenizer, GREEDY, name_placeholders=True)
    # George Floyd: two rare words, one name behind one placeholder, and one katakana name in
    # the test dictionary (tests/conftest.py).
    assert translator.sentences("George Floyd came.")[0].names == ["George Floyd"]
    assert translator.translate(["George Floyd came."])[0].text == "ジョージ・フロイドは来た。"
    copying = translator.with_decoding(dataclasses.replace(GREEDY, render_names=False))
    assert copying.translate(["George Floyd came."])[0].text == "George Floydは来た。"


def test_news_usage_decides_how_a_name_is_spelled(copy_model, tokenizer, monkeypatch, tmp_path):
    monkeypatch.setattr(torch_engine, "decode_pieces", answering(tokenizer, "\ue010は来た。"))
    news = tmp_path / "mirror" / "usage_fixture" / "train.ja.gz"
    news.parent.mkdir(parents=True)
    news.write_bytes(gzip.compress("タリバンは声明を出した。\nタリバン政権。\n".encode()))
    monkeypatch.setenv("DATA_MIRROR", str(tmp_path / "mirror"))
    reading = dataclasses.replace(GREEDY, name_usage="usage_fixture")
    translator = torch_translator(copy_model, tokenizer, reading, name_placeholders=True)
    assert translator.name_usage_files == [news]
    assert translator.translate(["Taliban came."])[0].text == "タリバンは来た。"
    # The test dictionary's entries alone put ターリバーン first (tests/conftest.py).
    unread = translator.with_decoding(dataclasses.replace(GREEDY, name_usage=None))
    assert unread.translate(["Taliban came."])[0].text == "ターリバーンは来た。"


class Transliterating:
    """A stand-in for the transliteration model's translator: what it was asked, and answers."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers, self.asked = answers, []

    def translate(self, names):
        self.asked.append(list(names))
        return [Translation([Candidate(self.answers[name], 0.0, [])]) for name in names]


def test_a_name_the_dictionary_does_not_know_is_transliterated(copy_model, tokenizer, monkeypatch):
    two_names = answering(tokenizer, "\ue010と\ue011は来た。")
    monkeypatch.setattr(torch_engine, "decode_pieces", two_names)
    translator = torch_translator(copy_model, tokenizer, GREEDY, name_placeholders=True)
    model = translator.transliterator = Transliterating({"Kudlow": "クドロー", "Quix": "quix"})
    texts = ["Quix and George Kudlow came.", "Kudlow and Abe came.", "Kudlow and NASA came."]
    assert [t.text for t in translator.translate(texts)] == [
        "Quixとジョージ・クドローは来た。",  # Quix's answer is not katakana: copied as written
        "クドローとAbeは来た。",  # a Japanese name the dictionary knows in kanji: copied
        "クドローとNASAは来た。",  # an acronym: copied
    ]
    assert model.asked == [["Kudlow", "Quix"]]  # each word once, whatever the texts


def test_a_piece_that_runs_to_its_limit_is_searched_again_in_halves(
    copy_model, tokenizer, monkeypatch
):
    searched: list[str] = []

    def search(model, pieces, *args):
        # A stand-in model that never ends a piece of more than 13 tokens, and writes a shorter
        # one as its number of tokens.
        searched.extend(tokenizer.decode(piece) for piece in pieces)
        return [
            [
                Hypothesis(
                    tokenizer.encode("猫" * 40 if len(piece) > 13 else f"{len(piece)}語。"),
                    0.0,
                    hit_max_len=len(piece) > 13,
                )
            ]
            for piece in pieces
        ]

    monkeypatch.setattr(torch_engine, "decode_pieces", search)
    text = "the cat sat on the mat and the dog sat on the rug"  # one clause of 24 tokens
    [translation] = torch_translator(copy_model, tokenizer, GREEDY).translate([text])
    # Cut between the words where the halves' tokens are nearest: each searched, each ending.
    assert searched == [text, "the cat sat on the mat ", "and the dog sat on the rug"]
    assert translation.text == "11語、13語。"  # the first half's full stop: the sentence goes on
    assert not translation.candidates[0].hit_max_len
    keeping = dataclasses.replace(GREEDY, split_runaways=False)
    [runaway] = torch_translator(copy_model, tokenizer, keeping).translate([text])
    assert runaway.text == "猫" * 40 and runaway.candidates[0].hit_max_len


def test_of_the_hypotheses_that_keep_the_numbers_one_without_a_placeholder_twice_comes_first(
    copy_model, tokenizer, monkeypatch
):
    outputs = ["\ue000％の\ue000％の企業。", "\ue000％の企業。", "企業。"]

    def search(model, pieces, src_tok, tgt_tok, cfg, use_cache):
        return [
            [Hypothesis(tokenizer.encode(text), -rank, False) for rank, text in enumerate(outputs)]
            for _ in pieces
        ]

    monkeypatch.setattr(torch_engine, "decode_pieces", search)
    decode = dataclasses.replace(GREEDY, beam_size=3, nbest=3)
    translator = torch_translator(copy_model, tokenizer, decode, number_placeholders=True)
    [translation] = translator.translate(["56% of firms."])
    texts = [candidate.text for candidate in translation.candidates]
    assert texts == ["５６%の企業。", "５６%の５６%の企業。", "企業。"]  # NFKC: ％ is %


LOOP = "私は" + "東京" * 6 + "に行った。"  # 東京 ×6: the word 4-gram 東京 ×4 three times


@pytest.mark.parametrize(
    ("avoid_loops", "source", "beam", "expected", "searches"),
    [
        # Searched again for all hypotheses: the best that does not loop comes first.
        (
            True,
            "I went to Tokyo.",
            [LOOP, "私は" + "東京に" * 4 + "行った。", "私は東京に行った。"],
            "私は東京に行った。",
            [(1, 3), (3, 3)],
        ),
        (False, "I went to Tokyo.", [LOOP, "私は東京に行った。"], LOOP, [(1, 3)]),  # as searched
        # A stutter, a unit of 1 to 4 words 3 times in a row, is a loop too.
        (
            True,
            "I have lived in Osaka.",
            ["私は大阪大阪大阪に住んでいた。", "私は大阪に住んでいた。"],
            "私は大阪に住んでいた。",
            [(1, 3), (2, 3)],
        ),
        # A source that repeats itself may be translated with a repeat.
        (True, "Tokyo Tokyo Tokyo Tokyo Tokyo Tokyo", [LOOP, "東京。"], LOOP, [(1, 3)]),
        # Every hypothesis loops: searched once more, banning repeated token pairs.
        (True, "I went to Tokyo.", [LOOP, LOOP + "。"], "東京へ。", [(1, 3), (2, 3), (2, 2)]),
        # Those loop too (a word of one token repeats without repeating a pair): once more,
        # banning any repeated token.
        (True, "Not tall.", [LOOP, LOOP + "。"], "東京へ。", [(1, 3), (2, 3), (2, 2), (2, 1)]),
    ],
)
def test_a_looping_best_hypothesis_gives_way_to_the_best_that_does_not_loop(
    copy_model, tokenizer, monkeypatch, avoid_loops, source, beam, expected, searches
):
    searched = []
    # What the searches banning pairs (2) and any repeated token (1) find.
    tighter = {2: [LOOP] if source == "Not tall." else ["東京へ。"], 1: ["東京へ。"]}

    def search(model, pieces, src_tok, tgt_tok, cfg, use_cache):
        searched.append((cfg.nbest, cfg.no_repeat_ngram_size))
        outputs = tighter.get(cfg.no_repeat_ngram_size, beam)
        return [
            [Hypothesis(tokenizer.encode(text), -rank, False) for rank, text in enumerate(outputs)][
                : cfg.nbest
            ]
            for _ in pieces
        ]

    monkeypatch.setattr(torch_engine, "decode_pieces", search)
    decode = dataclasses.replace(GREEDY, beam_size=len(beam), avoid_loops=avoid_loops)
    translator = torch_translator(copy_model, tokenizer, decode)
    [translation] = translator.translate([source])
    assert translation.text == expected
    assert searched == searches


CLAUSE = "ドイツでは今、ドイツでは今。"  # a word 4-gram twice: no loop alone, one joined to another
CLAUSES = "ドイツでは今、" * 3 + "ドイツでは今。"


@pytest.mark.parametrize(
    ("avoid_loops", "whole", "expected", "pieces_searched"),
    [
        # Clauses that loop only joined: the sentence searched again in one piece, translated so.
        (True, "私は東京に行った。", "私は東京に行った。", [2, 1]),
        (False, "私は東京に行った。", CLAUSES, [2]),
        # One piece loops too (searched for all hypotheses, then banning pairs, then any repeated
        # token, as any looping piece is): the clauses' translation stays.
        (True, CLAUSE * 2, CLAUSES, [2, 1, 1, 1, 1]),
    ],
)
def test_clauses_that_loop_joined_are_translated_again_as_one_sentence(
    copy_model, tokenizer, monkeypatch, avoid_loops, whole, expected, pieces_searched
):
    source = "I went to Tokyo, and I saw Tokyo."
    decode = dataclasses.replace(
        GREEDY, beam_size=2, avoid_loops=avoid_loops, numbers_first=False, clause_split_tokens=12
    )
    translator = torch_translator(copy_model, tokenizer, decode)
    [sentence] = translator.sentences(source)
    assert len(sentence.pieces) == 2
    clause_length = max(map(len, sentence.pieces))
    searched = []

    def search(model, pieces, src_tok, tgt_tok, cfg, use_cache):
        searched.append(len(pieces))
        outputs = [whole if len(piece) > clause_length else CLAUSE for piece in pieces]
        return [[Hypothesis(tokenizer.encode(text), 0.0, False)] for text in outputs]

    monkeypatch.setattr(torch_engine, "decode_pieces", search)
    [translation] = translator.translate([source])
    assert translation.text == expected
    assert [len(s.pieces) for s in translation.sentences] == [1 if expected == whole else 2]
    assert searched == pieces_searched


# ---- direction -----------------------------------------------------------------------------------


def test_a_ja_en_checkpoint_reads_raw_japanese_and_writes_spaced_english(tokenizer, tmp_path):
    spe = ["data=small_parallel_enja"]
    forward = Translator.from_checkpoint(save_tiny_checkpoint(tmp_path / "a.pt", tokenizer, spe))
    path = save_tiny_checkpoint(tmp_path / "b.pt", tokenizer, [*spe, "data.direction=ja-en"])
    backward = Translator.from_checkpoint(path)
    # small_parallel_enja's lowercased, tokenized style is its English side's: en-ja input only.
    assert (forward.source_lang, forward.target_lang) == ("en", "ja")
    assert (forward.conventions.joiner, forward.conventions.source_style) == (
        "",
        "lowercase_tokenized",
    )
    assert (backward.source_lang, backward.target_lang) == ("ja", "en")
    assert (backward.conventions.joiner, backward.conventions.source_style) == (" ", "raw")


def test_every_way_of_loading_a_placeholder_run_masks_its_numbers_and_names(tokenizer, tmp_path):
    plain = save_tiny_checkpoint(tmp_path / "a.pt", tokenizer)
    masked = save_tiny_checkpoint(tmp_path / "b.pt", tokenizer, ["data.number_placeholders=true"])
    assert not Translator.from_checkpoint(plain).conventions.number_placeholders
    translator = Translator.from_checkpoint(masked)
    assert translator.conventions.number_placeholders
    beam = translator.with_decoding(dataclasses.replace(GREEDY, beam_size=2))
    assert beam.conventions.number_placeholders
    args, _ = evaluate_cli.parse_args(["--checkpoint", str(masked)])
    assert load_translator(masked, args, {}, source_style="raw")[0].conventions.number_placeholders
    assert translator.conventions.number_digits == "full_width"
    ascii_run = ["data.number_placeholders=true", "data.number_digits=ascii"]
    ascii_digits = save_tiny_checkpoint(tmp_path / "d.pt", tokenizer, ascii_run)
    assert Translator.from_checkpoint(ascii_digits).conventions.number_digits == "ascii"
    names = save_tiny_checkpoint(tmp_path / "c.pt", tokenizer, ["data.name_placeholders=true"])
    assert not Translator.from_checkpoint(plain).conventions.name_placeholders
    assert Translator.from_checkpoint(names).with_decoding(GREEDY).conventions.name_placeholders


def test_loading_says_when_the_news_usage_of_names_is_missing(
    tokenizer, tmp_path, monkeypatch, capsys
):
    names = save_tiny_checkpoint(tmp_path / "c.pt", tokenizer, ["data.name_placeholders=true"])
    monkeypatch.setenv("DATA_MIRROR", str(tmp_path / "mirror"))  # holds no corpus
    args, _ = evaluate_cli.parse_args(["--checkpoint", str(names)])
    translator, _ = load_translator(names, args, {"name_usage": "usage_fixture"})
    assert translator.name_dictionary is not None and translator.name_dictionary.usage is None
    note = "decoding.name_usage's usage_fixture is neither fetched nor in $DATA_MIRROR"
    assert note in capsys.readouterr().err
    args, settings = evaluate_cli.parse_args(
        ["--checkpoint", str(names), "decoding.name_usage=null"]
    )
    assert decoding_overrides(args, settings) == {"name_usage": None}  # as Hydra reads null
    load_translator(names, args, decoding_overrides(args, settings))
    assert "name_usage" not in capsys.readouterr().err


def test_a_checkpoint_from_before_directions_translates_its_corpus_order(tokenizer, tmp_path):
    path = save_tiny_checkpoint(tmp_path / "old.pt", tokenizer)
    state = load_checkpoint(path)
    del state["config"]["data"]["direction"]
    save_checkpoint(path, state)
    translator = Translator.from_checkpoint(path)
    direction = (translator.source_lang, translator.target_lang)
    assert (*direction, translator.conventions.joiner) == ("en", "ja", "")


def test_an_ensemble_of_two_directions_is_refused(tokenizer, tmp_path):
    forward = save_tiny_checkpoint(tmp_path / "a.pt", tokenizer)
    backward = save_tiny_checkpoint(tmp_path / "b.pt", tokenizer, ["data.direction=ja-en"])
    with pytest.raises(CheckpointError, match="direction 'ja-en' != 'en-ja'"):
        Translator.from_checkpoint(forward, ensemble=[backward])
