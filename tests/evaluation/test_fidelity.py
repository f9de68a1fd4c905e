"""Number fidelity and the loop counter, on hand-checked sentences."""

from __future__ import annotations

import pytest

from llm_from_scratch.evaluation.fidelity import (
    has_loop,
    has_stutter,
    looping_outputs,
    number_fidelity,
)


def test_number_fidelity_counts_each_occurrence():
    sources = [
        "I was born in 1995.",
        "This book costs 1,200 yen.",
        "Come at 3 p.m. on May 3rd.",
        "Hello.",
    ]
    hypotheses = [
        "私は１９９０年に生まれた。",  # 1995 lost
        "この本は1200円です。",  # kept, without the separator
        "5月3日に来てください。",  # one 3 of two kept
        "こんにちは。",
    ]
    fidelity = number_fidelity(sources, hypotheses)
    assert (fidelity.source_numbers, fidelity.kept) == (4, 2)
    assert fidelity.share == pytest.approx(0.5)
    assert (fidelity.sentences_with_numbers, fidelity.sentences_all_kept) == (3, 1)


def test_number_fidelity_without_numbers_has_no_share():
    assert number_fidelity(["Hello."], ["こんにちは。"]).share is None


def test_has_loop_needs_the_ngram_three_times():
    assert has_loop(list("abcdabcdabcd"))
    assert not has_loop(list("abcdabcd"))  # twice is not a loop
    assert has_loop(list("xxxxxx"))  # overlapping occurrences count
    assert not has_loop(list("abcdabcdabcd"), times=4)


def test_looping_outputs_skip_sources_that_repeat_themselves():
    sources = ["Tokyo", "Hello.", "no no no no no no, I said no."]
    hypotheses = [
        "東京東京東京東京東京東京。",  # MeCab: 東京 x6, so (東京,)*4 three times
        "こんにちは。",
        "いやいやいやいやいやいや、いやと言った。",
    ]
    assert looping_outputs(sources, hypotheses, "en", "ja") == [0]
    characters = looping_outputs(sources, hypotheses, "en", "ja", lambda text: " ".join(text))
    assert characters == [0]


def test_looping_outputs_cut_words_in_each_sides_language():
    # A ja-en model: the English output loops in 13a words; the second source repeats a 4-gram
    # three times in MeCab's words (猫 / が / 好き / 。), so its looping output does not count.
    sources = ["猫が好き。", "猫が好き。猫が好き。猫が好き。"]
    hypotheses = [
        "I like cats. I like cats. I like cats.",
        "I like cats. I like cats. I like cats.",
    ]
    assert looping_outputs(sources, hypotheses, "ja", "en") == [0]
    # Read as English, the Japanese source is one 13a word and repeats nothing.
    assert looping_outputs(sources, hypotheses, "en", "en") == [0, 1]


@pytest.mark.parametrize(
    ("source", "hypothesis"),
    [
        # Beam outputs of the default model that a word 4-gram count lets through.
        ("Where is the nearest station?", "一番一番一番近いですか。"),  # MeCab: 一番 / 一 番 / 一番
        ("I have lived in Osaka for three years.", "私は大阪大阪大阪に住んでいた。"),
        ("The meeting has been moved to next Tuesday.", "その会は来週の来週の来週の月曜日には。"),
        ("It is very good.", "それはとてもとてもとても良い。"),
        ("We need to reduce costs by 10% this year.", "今年は１０年１０年１０年に必要です。"),
        ("Turn left at the station.", "駅の前の前の前の前で左に曲がる。"),
        ("How old are you?", "１６６６６６才です。"),  # a number the source lacks, stuttering
        ("How old are you?", "０００００００００００００００才です。"),
    ],
)
def test_stutters_are_loops(source, hypothesis):
    assert looping_outputs([source], [hypothesis], "en", "ja") == [0]


@pytest.mark.parametrize(
    ("source", "hypothesis"),
    [
        ("It costs 1,000,000 yen.", "１，０００，０００円です。"),  # a number's own zeros
        ("Ten thousand people came.", "１００００人が来た。"),
        ("I was born in 1999.", "私は１９９９年に生まれた。"),
        ("The war ended.", "戦争は１９９９年に終わった。"),  # three 9s: a year, not a stutter
        ("Call 111.", "１１１に電話して。"),
        ("Ha ha ha.", "ははは。"),  # the source stutters too
        ("Wait...", "待って………"),  # punctuation
        ("I have two brothers.", "私には２人兄弟がいる。"),
        ("It is the largest city in Japan.", "日本で一番大きい都市です。"),
    ],
)
def test_what_is_not_a_stutter(source, hypothesis):
    assert looping_outputs([source], [hypothesis], "en", "ja") == []


def test_has_stutter_compares_the_copies_as_text():
    assert has_stutter(["一番", "一", "番", "一番"])
    assert has_stutter(["a", "b", "a", "b", "a", "b"])  # a unit of two words
    assert not has_stutter(["a", "b", "a", "b"])  # twice
    assert not has_stutter(["ab", "a", "bab"])  # a copy must end between words
    assert has_stutter(list("abcdeabcdeabcde"), unit_words=5)
    assert not has_stutter(list("abcdeabcdeabcde"))  # units of at most 4 words


@pytest.mark.parametrize(
    ("hypothesis", "doubled"),
    [
        ("彼は本を持持つつてていた。", True),  # a WMT21 runaway's start
        ("ババイイデデン大統領", True),
        ("ここここで待つ。", False),  # one character four times: a stutter's to count, if any
        ("持持つていた。", False),  # one doubled character
        ("ますます良くなる。", False),
        ("The bookkeeper agreed.", False),  # English letters
        ("１１２２３３番", False),  # digits
    ],
)
def test_three_doubled_characters_in_a_row_are_a_loop(hypothesis, doubled):
    assert (looping_outputs(["He had a book."], [hypothesis], "en", "ja") == [0]) is doubled


def test_doubled_characters_the_source_writes_are_no_loop():
    assert looping_outputs(["持持つつてて"], ["持持つつてて"], "ja", "ja") == []
