"""BPE-dropout: the exact sampling distribution, round trips, and its limits p=0 and p=1."""

from __future__ import annotations

import random
import unicodedata
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.tokenizer.test_bpe import ANY_STR, SAMPLE, sample_tokenizer


def hug_pug() -> BPETokenizer:
    # Merges in order: u+g, " "+p, h+ug, " p"+ug (see test_golden_merges_worked_out_by_hand).
    return BPETokenizer.train(["hug pug"], 1000, character_coverage=1.0, normalization="none")


@pytest.mark.parametrize("dropout", [0.2, 0.5])
def test_segmentations_of_hug_follow_the_bpe_dropout_distribution(dropout: float) -> None:
    # Step 1 can apply only u+g: skipped with probability p, which ends the piece as h|u|g.
    # Step 2 can apply only h+ug: skipped with probability p (h|ug), else "hug".
    tok, rng, samples = hug_pug(), random.Random(0), 10_000
    counts = Counter(
        tuple(tok.token_text(i) for i in tok.encode_with_dropout("hug", dropout, rng))
        for _ in range(samples)
    )
    expected = {
        ("h", "u", "g"): dropout,
        ("h", "ug"): (1 - dropout) * dropout,
        ("hug",): (1 - dropout) ** 2,
    }
    assert set(counts) == set(expected)
    for segmentation, probability in expected.items():
        assert counts[segmentation] / samples == pytest.approx(probability, abs=0.02)


@settings(deadline=None)  # the first example may train the shared tokenizer
@given(text=ANY_STR, seed=st.integers(0, 2**32))
def test_every_sample_decodes_to_the_normalized_text(text: str, seed: int) -> None:
    tok = sample_tokenizer("nfkc")
    ids = tok.encode_with_dropout(text, 0.3, random.Random(seed))
    assert tok.decode(ids) == unicodedata.normalize("NFKC", text)


@settings(deadline=None)
@given(text=st.sampled_from(SAMPLE) | ANY_STR)
def test_zero_dropout_is_plain_bpe(text: str) -> None:
    tok = sample_tokenizer("none")
    assert tok.encode_with_dropout(text, 0.0, random.Random(0)) == tok.encode(text)


def test_full_dropout_leaves_characters_and_fallback_bytes() -> None:
    tok = sample_tokenizer("none")
    text = "The train was crowded. 汽車は込んでいて€"
    ids = tok.encode_with_dropout(text, 1.0, random.Random(0))
    assert ids == [i for char in text for i in tok.encode(char)]
    assert len(ids) > len(tok.encode(text))


def test_a_seed_gives_one_sample_and_samples_vary() -> None:
    tok = sample_tokenizer("nfkc")
    text = SAMPLE[1]
    first = tok.encode_with_dropout(text, 0.1, random.Random(7))
    assert tok.encode_with_dropout(text, 0.1, random.Random(7)) == first
    samples = {tuple(tok.encode_with_dropout(text, 0.1, random.Random(s))) for s in range(50)}
    assert len(samples) > 10
    assert tuple(tok.encode(text)) in samples  # the deterministic segmentation is one of them


@pytest.mark.parametrize("dropout", [-0.1, 1.5])
def test_dropout_outside_zero_one_is_rejected(dropout: float) -> None:
    with pytest.raises(ValueError, match=f"dropout={dropout} must be in"):
        sample_tokenizer("none").encode_with_dropout("hi", dropout, random.Random(0))
