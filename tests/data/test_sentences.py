"""Sentence splitting (data/sentences.py): English and Japanese rules, and the cases where a
period does not end a sentence."""

from __future__ import annotations

import pytest

from llm_from_scratch.data.sentences import split_sentences


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "I like cats. I have a dog. My sister likes birds.",
            ["I like cats.", "I have a dog.", "My sister likes birds."],
        ),
        ("i like cats. i have a dog.", ["i like cats.", "i have a dog."]),  # typed lowercase
        ("i like cats . i have a dog .", ["i like cats .", "i have a dog ."]),  # tokenized
        ("Hello!!! How are you?! Fine.", ["Hello!!!", "How are you?!", "Fine."]),
        ("no terminator at all", ["no terminator at all"]),
        ("  Padded.   Twice.  ", ["Padded.", "Twice."]),
        ("", []),
        ("   ", []),
    ],
)
def test_sentences_end_at_terminators(line, expected):
    assert split_sentences(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Mr. and Mrs. Smith met Dr. Jones.", ["Mr. and Mrs. Smith met Dr. Jones."]),
        (
            "Use a pen, e.g. this one, i.e. a blue one.",
            ["Use a pen, e.g. this one, i.e. a blue one."],
        ),
        ("We meet at 3 p.m. tomorrow.", ["We meet at 3 p.m. tomorrow."]),
        (
            "We met at 5 p.m. The next day it rained.",
            ["We met at 5 p.m.", "The next day it rained."],
        ),
        ("He left at 7 a.m. and came back.", ["He left at 7 a.m. and came back."]),
        ("Cats, dogs, etc. are pets. Fish too.", ["Cats, dogs, etc. are pets.", "Fish too."]),
        (
            "I bought apples, pears, etc. Then I left.",
            ["I bought apples, pears, etc.", "Then I left."],
        ),
        ("See No. 5 on Jan. 5 in St. Louis.", ["See No. 5 on Jan. 5 in St. Louis."]),
        ("The answer is no. I won't go.", ["The answer is no.", "I won't go."]),
        ("She lives in the U.S. She likes it.", ["She lives in the U.S.", "She likes it."]),
        ("J. K. Rowling wrote it.", ["J. K. Rowling wrote it."]),
        ("1. Buy milk. 2. Call mom.", ["1. Buy milk.", "2. Call mom."]),
        ("I have 3. You have 2.", ["I have 3.", "You have 2."]),
    ],
)
def test_abbreviations_initials_and_list_numbers(line, expected):
    assert split_sentences(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "It costs 1,200.50 yen. That is 3.5 times more.",
            ["It costs 1,200.50 yen.", "That is 3.5 times more."],
        ),
        (
            "Write to john.smith@example.com today. Thanks!",
            ["Write to john.smith@example.com today.", "Thanks!"],
        ),
        ("Visit example.com. It is free.", ["Visit example.com.", "It is free."]),
        ("See https://example.com/a.html?x=1 now.", ["See https://example.com/a.html?x=1 now."]),
    ],
)
def test_numbers_urls_and_emails_stay_whole(line, expected):
    assert split_sentences(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('He said "Hello." Then he left.', ['He said "Hello."', "Then he left."]),
        (
            '"Really?" he asked. "Yes!" She nodded.',
            ['"Really?" he asked.', '"Yes!"', "She nodded."],
        ),
        ("It was fun (really.) Next time.", ["It was fun (really.)", "Next time."]),
        ("Wait... What? I see... maybe not.", ["Wait...", "What?", "I see... maybe not."]),
        ("Well… Yes.", ["Well…", "Yes."]),
    ],
)
def test_quotes_brackets_and_ellipses(line, expected):
    assert split_sentences(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("今日は晴れ。明日は雨！本当？", ["今日は晴れ。", "明日は雨！", "本当？"]),
        ("「行こう！」「うん。」", ["「行こう！」", "「うん。」"]),
        (
            "「はい。」と彼は言った。それから帰った。",
            ["「はい。」と彼は言った。", "それから帰った。"],
        ),
        ("すごい!次は何？", ["すごい!", "次は何？"]),
        ("Hello.こんにちは。 Bye.", ["Hello.", "こんにちは。", "Bye."]),
        ("３．５キロ歩いた。", ["３．５キロ歩いた。"]),
    ],
)
def test_japanese_punctuation(line, expected):
    assert split_sentences(line) == expected


def test_nothing_is_left_out():
    line = 'Dr. Who? "Yes!" he said... at 3 p.m. 今日は晴れ。Go to example.com. 1. Done'
    assert "".join(split_sentences(line)).replace(" ", "") == line.replace(" ", "")
