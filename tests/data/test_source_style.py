"""User input is put in the corpus's source style; corpus text in that style passes unchanged;
lowercased, tokenized English converts back to raw text."""

from __future__ import annotations

import pytest

from llm_from_scratch.data.config import CorpusConfig
from llm_from_scratch.data.raw_style import Truecaser, to_raw
from llm_from_scratch.data.source_style import prepare_source
from llm_from_scratch.errors import ConfigError


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Hello.", "hello ."),
        ("How are you?", "how are you ?"),
        ("I can't tell who'll arrive first.", "i can 't tell who 'll arrive first ."),
        ("It's 8 o’clock!", "it 's 8 o 'clock !"),
        ("It costs $3.50, or 1,000 yen.", "it costs $ 3.50 , or 1,000 yen ."),
        ("She is good-natured; he isn't.", "she is good-natured ; he isn 't ."),
        ("  spaced   out  ", "spaced out"),
    ],
)
def test_lowercase_tokenized_style(text, expected):
    assert prepare_source(text, "lowercase_tokenized") == expected


def test_raw_style_changes_nothing():
    assert prepare_source("Hello,  World!", "raw") == "Hello,  World!"


def test_small_parallel_enja_english_is_already_in_its_style(corpus_mirror):
    lines = (corpus_mirror / "small_parallel_enja" / "train.en").read_text().splitlines()
    changed = [line for line in lines if prepare_source(line, "lowercase_tokenized") != line]
    # The corpus has a few leftovers its tokenizer missed (e.g. "$" glued to a number).
    assert len(changed) / len(lines) < 0.001, changed[:5]


def test_unknown_style_is_refused():
    with pytest.raises(ConfigError, match=r"data\.corpus\.source_style='shouty'"):
        CorpusConfig(source_style="shouty")


CASINGS = Truecaser.learn(["I met Tom and Mary in Japan.", "The cat sat.", "We saw the cat."])


@pytest.mark.parametrize(
    "text,expected",
    [
        ("i can 't tell who 'll arrive first .", "I can't tell who'll arrive first."),
        ("tom went to japan with mary .", "Tom went to Japan with Mary."),
        ("the cat likes tom", "The cat likes Tom"),
        ("here 's $ 5 , or 1,000 yen !", "Here's $5, or 1,000 yen!"),
        ("he said to me , ' let 's play catch . '", "He said to me, 'Let's play catch.'"),
        ("it is ten minutes ' walk .", "It is ten minutes' walk."),
        ("the policemen said to them , '' stop . ''", 'The policemen said to them, "Stop."'),
        ("it is 8 o 'clock ; i 'm late ...", "It is 8 o'clock; I'm late..."),
        ("she ( my sister ) is good-natured ?", "She (my sister) is good-natured?"),
        ("mr. smith came . he left .", "Mr. smith came. He left."),
    ],
)
def test_lowercase_tokenized_english_back_to_raw(text, expected):
    assert to_raw(text, CASINGS) == expected


def test_casing_is_learned_away_from_sentence_starts():
    # "The" starts both sentences it is capitalized in; inside one it is lowercase.
    assert CASINGS.case("the") == "the" and CASINGS.case("tom") == "Tom"
    assert CASINGS.case("i") == "I" and CASINGS.case("unseen") == "unseen"


@pytest.mark.slow
def test_raw_small_parallel_enja_tokenizes_back_to_itself(corpus_mirror):
    lines = (corpus_mirror / "small_parallel_enja" / "train.en").read_text().splitlines()
    # Left out: lines the tokenizing rules do not reproduce themselves (a quote that ends a
    # word, `''` for a double quote, corpus leftovers like "i."); their raw form is right, the
    # round trip cannot be.
    stable = [
        line
        for line in lines
        if prepare_source(line, "lowercase_tokenized") == line
        and " ' " not in f"{line} "
        and "''" not in line
    ]
    assert len(stable) / len(lines) > 0.995
    changed = [
        line
        for line in stable
        if prepare_source(to_raw(line, CASINGS), "lowercase_tokenized") != line
    ]
    assert changed == []
