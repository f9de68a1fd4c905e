"""A text into the pieces the model decodes: pure functions of the text, the tokenizer and the
limits, no model."""

from __future__ import annotations

import itertools
import re

import pytest

from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.conventions import TextConventions
from llm_from_scratch.decoding.segmentation import (
    halved,
    max_piece_tokens,
    packed_parts,
    source_pieces,
    source_sentences,
    split_once,
)
from tests.decoding.builders import tiny_tokenizer

MAX_TOKENS = 40


def test_long_input_is_split_into_fitting_pieces_never_cut(tokenizer):
    text = "The cat sat on the mat. " * 6 + "a" + "x" * 200 + " end."
    pieces = source_pieces(text, tokenizer, 0, MAX_TOKENS)
    assert len(pieces) > 1
    assert all(len(piece) <= MAX_TOKENS for piece in pieces)
    assert "".join(tokenizer.decode(piece) for piece in pieces) == tokenizer.normalize(text)


def test_one_character_of_more_byte_tokens_than_fit_is_cut_between_its_bytes(tokenizer):
    text = "😀"  # outside the tiny vocabulary: four byte tokens
    ids = tokenizer.encode(text)
    assert len(ids) > 2
    pieces = source_pieces(text, tokenizer, 0, 2)
    assert [token for piece in pieces for token in piece] == ids
    assert all(len(piece) <= 2 for piece in pieces)


@pytest.mark.parametrize(
    ("a", "b", "positions"), [(1.0, 5, 64), (1.5, 10, 64), (0.0, 200, 64), (2.0, 1, 512)]
)
def test_the_piece_limit_keeps_the_output_limit_within_the_positions(a, b, positions):
    longest = max_piece_tokens(positions, DecodingConfig(max_len_a=a, max_len_b=b)) + 1  # EOS
    assert longest <= positions
    assert a == 0 or a * longest + b <= positions


def test_a_sentence_over_the_clause_limit_is_decoded_in_packed_clauses(tokenizer):
    limit = 12
    text = "the cat sat on the mat, the dog sat, a bird sang; then the cat ran to the old mat"
    parts = [tokenizer.decode(piece) for piece in source_pieces(text, tokenizer, limit, 1000)]
    assert len(parts) > 1
    assert "".join(parts) == tokenizer.normalize(text)
    assert all(part.rstrip()[-1] in ",;" for part in parts[:-1])  # cut after clauses only
    clauses = [len(tokenizer.encode(clause)) for clause in re.split(r"(?<=[,;]) ", text)]
    for part, following in itertools.pairwise(parts):
        # Packed: each piece is within the limit or one clause, and would not take the next.
        assert len(tokenizer.encode(part)) <= limit or len(tokenizer.encode(part)) in clauses
        assert len(tokenizer.encode(part + re.split(r"(?<=[,;])", following)[0])) > limit
    # Within the limit, without a clause to cut at, or with the limit off: one piece.
    assert len(source_pieces("the cat sat, the dog sat", tokenizer, limit, 1000)) == 1
    unmarked = text.replace(",", "").replace(";", "")
    assert len(source_pieces(unmarked, tokenizer, limit, 1000)) == 1
    assert len(source_pieces(text, tokenizer, 0, 1000)) == 1


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("a b, c d; e", ["a b,", " c d;", " e"]),  # clauses first
        ("私は、東京に", ["私は、", "東京に"]),  # a Japanese comma needs no space after it
        ("a b c", ["a ", "b ", "c"]),  # then words
        ("abcd", ["ab", "cd"]),  # then halves
        ("a", ["a"]),
    ],
)
def test_a_sentence_is_split_at_its_coarsest_points_and_joins_back(text, parts):
    assert split_once(text) == parts


def test_parts_are_packed_in_order_into_the_fewest_groups_within_the_limit(tokenizer):
    parts = ["the cat ", "sat ", "on the mat ", "and the dog ", "ran"]
    limit = len(tokenizer.encode("the cat sat "))
    groups = packed_parts(parts, tokenizer, limit)
    assert "".join(groups) == "".join(parts)
    assert groups[0] == "the cat sat "
    assert all(len(tokenizer.encode(group)) <= limit or group in parts for group in groups)


def test_sentences_keep_their_lines_and_mask_numbers_where_the_run_does(tokenizer):
    masking = TextConventions(number_placeholders=True)
    text = "I was 20 in 2015. No numbers.\n\nThe end."
    sentences = source_sentences(text, tokenizer, masking, 0, MAX_TOKENS)
    assert [(s.text, s.line) for s in sentences] == [
        ("I was 20 in 2015.", 0),
        ("No numbers.", 0),
        ("The end.", 2),
    ]
    assert [s.numbers for s in sentences] == [["20", "2015"], [], []]
    assert sentences[0].pieces == [tokenizer.encode("I was \ue000 in \ue001.")]
    plain = source_sentences(text, tokenizer, TextConventions(), 0, MAX_TOKENS)
    assert plain[0].pieces == [tokenizer.encode("I was 20 in 2015.")] and not plain[0].numbers
    assert source_sentences("  \n ", tokenizer, TextConventions(), 0, MAX_TOKENS) == []


@pytest.mark.parametrize(
    ("text", "halves"),
    [
        # Between the words where the halves' tokens are nearest (11 and 13 of 24).
        (
            "the cat sat on the mat and the dog sat on the rug",
            ["the cat sat on the mat ", "and the dog sat on the rug"],
        ),
        # At a clause mark before any word boundary, however uneven.
        (
            "the cat, the dog sat on the mat and ran",
            ["the cat,", " the dog sat on the mat and ran"],
        ),
        ("catcatcatcat", ["catcatcatcat"]),  # a word is never cut
    ],
)
def test_a_piece_is_halved_at_its_clauses_else_between_words(text, halves):
    tokenizer = tiny_tokenizer()
    assert [tokenizer.decode(piece) for piece in halved(text, tokenizer)] == halves
