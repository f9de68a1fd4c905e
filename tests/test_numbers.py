"""Numbers as the fidelity metric and the number repair see them: found, placed, compared."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.numbers import Number, find_numbers, numbers


@pytest.mark.parametrize(
    "text,expected",
    [
        ("I was born in 1995.", ["1995"]),  # the sentence's period is not a decimal point
        ("This book costs 1,200 yen.", ["1200"]),
        ("この本は１，２００円です。", ["1200"]),  # full-width digits and separator
        ("It weighs 3.5 kg, not 12.", ["3.5", "12"]),
        ("In 1995, 20 people came.", ["1995", "20"]),  # a comma and a space: two numbers
        ("We meet at 3:05 p.m. on 2024-05-01.", ["3", "5", "2024", "5", "1"]),
        ("午後3時5分", ["3", "5"]),
        ("1,234,567.89 and 1,2,3", ["1234567.89", "1", "2", "3"]),
        # A phone number is one number, its leading zero kept, whatever dashes join its groups.
        ("Call 03-1234-5678 or ０１２０―００―００００.", ["03-1234-5678", "0120-00-0000"]),
        ("２１２ー８３６ー１７２５に電話", ["212-836-1725"]),
        ("pages 10-20, 1-800-446-2581", ["10", "20", "1-800-446-2581"]),
        ("三時に千二百円", []),  # kanji numerals are not counted
        ("no numbers here", []),
    ],
)
def test_numbers_are_found_in_one_canonical_form(text, expected):
    assert numbers(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I paid 1,200.50 yen in 1995.",
        "この本は１，２００円で、３．５キロ。",
        "①番と㍻31年と¹²",  # characters NFKC turns into digits (and more characters)
        "ﬁ 12 ｶﾞ 34 e\u0301 56",  # ligatures, half-width kana, combining marks before numbers
    ],
)
def test_each_number_is_found_where_the_text_writes_it(text):
    found = find_numbers(text)
    # As in the whole text normalized at once (normalized text is read as it is).
    assert [number.value for number in found] == numbers(unicodedata.normalize("NFKC", text))
    for number in found:  # the span, read as the metric reads text, is the number
        assert numbers(text[number.start : number.end]) == [number.value]


def test_numbers_know_their_place_and_their_grouping():
    assert find_numbers("x １，２００円 and 7") == [
        Number(2, 7, "1200", grouped=True),
        Number(13, 14, "7", grouped=False),
    ]


NUMBERISH = st.text(st.sampled_from("0129０１９,.，．、 aé\u0301ﬁ①¹㍻年円万"), max_size=30)


@given(text=NUMBERISH | st.text())
def test_reading_a_character_at_a_time_finds_what_whole_text_nfkc_finds(text):
    assert numbers(text) == numbers(unicodedata.normalize("NFKC", text))
