"""Number fidelity and the loop counter, on hand-checked sentences."""

from __future__ import annotations

import pytest

from llm_from_scratch.evaluation.fidelity import has_loop, looping_outputs, number_fidelity


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
