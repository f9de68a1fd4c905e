"""User input is put in the corpus's source style; corpus text in that style passes unchanged."""

from __future__ import annotations

import pytest

from llm_from_scratch.data.config import CorpusConfig
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
