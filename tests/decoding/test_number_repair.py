"""Number repair on hand-checked translations: what it sets back, how it writes it, and what it
leaves alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.decoding.number_repair import repair_numbers
from llm_from_scratch.evaluation.fidelity import number_fidelity
from llm_from_scratch.numbers import numbers


@pytest.mark.parametrize(
    ("source", "translation", "repaired"),
    [
        # A year changed; written in the translation's full-width digits.
        ("I was born in 1995.", "私は１９５９年に生まれた。", "私は１９９５年に生まれた。"),
        ("I was born in 1995.", "私は1959年に生まれた。", "私は1995年に生まれた。"),
        # A price with separators: the translation's own separator...
        ("It costs 1,200 yen.", "それは1,300円です。", "それは1,200円です。"),
        ("It costs 1,200 yen.", "それは１，３００円です。", "それは１，２００円です。"),
        # ... none where the translation writes a long number without ...
        ("It costs 85,000 yen.", "それは８０００円です。", "それは８５０００円です。"),
        # ... the source's grouping where a short number cannot show one, in its script.
        ("It costs 1,200 yen.", "それは２円です。", "それは１，２００円です。"),
        ("It costs 1200 yen.", "それは2円です。", "それは1200円です。"),
        # A kanji unit after the replaced digits goes with them.
        ("This book costs 1,200 yen.", "この本は２万円です。", "この本は１，２００円です。"),
        # Decimals keep the translation's decimal point.
        ("It is 3.5 km.", "３．２キロです。", "３．５キロです。"),
        ("It is 3.5 km.", "３キロです。", "３．５キロです。"),
        ("I paid 4.50 dollars.", "4ドル払った。", "4.50ドル払った。"),
        # Several changed numbers are replaced in order.
        (
            "From 7:45 to 9:30.",
            "４時から５時まで、９時３０分。",
            "７時から４５時まで、９時３０分。",
        ),
        ("I have 2 brothers and 1 sister.", "兄弟が２人、姉妹が２人。", "兄弟が２人、姉妹が１人。"),
        # A phone number is set back whole, in the translation's digits.
        ("Call 03-1234-5678.", "０３－１２３４－５６７９へ。", "０３－１２３４－５６７８へ。"),
        # A phone number takes no unit: the one after the digits it replaces goes.
        (
            "My phone number is 090-1234-5678.",
            "私の電話番号は２５歳です。",
            "私の電話番号は０９０－１２３４－５６７８です。",
        ),
    ],
)
def test_changed_numbers_are_set_back(source: str, translation: str, repaired: str) -> None:
    assert repair_numbers(source, translation) == repaired
    assert number_fidelity([source], [repaired]).share == 1.0


@pytest.mark.parametrize(
    ("source", "translation"),
    [
        ("It costs 1,200 yen.", "それは千二百円です。"),  # nothing to replace: never invented
        ("It costs 1,200 yen.", "それは２万円で２万円する。"),  # one missing, two extra
        ("From 3 to 5.", "５まで。"),  # one missing, none extra
        ("From 1995 to 2003.", "２００３年から１９９５年まで。"),  # swapped, but both kept
        ("In 1995.", "１９９５年、２人。"),  # an extra number, none missing: left in
        ("2 million people came.", "200万人が来た。"),  # a scale word: other digits in Japanese
        ("Hello.", "こんにちは。"),
        ("Call 03-1234-5678.", "03-1234に電話。"),  # two numbers for one: no guess
    ],
)
def test_what_cannot_be_repaired_safely_is_left_alone(source: str, translation: str) -> None:
    assert repair_numbers(source, translation) == translation


@given(
    source=st.text(st.sampled_from("0123456789,. ab"), max_size=20),
    translation=st.text(st.sampled_from("０１２９０,.，．万 あい"), max_size=20),
)
def test_a_repair_keeps_every_number_it_can_and_never_adds_one(source, translation) -> None:
    repaired = repair_numbers(source, translation)
    if repaired != translation:
        assert len(numbers(repaired)) == len(numbers(translation))
        assert number_fidelity([source], [repaired]).share == 1.0
