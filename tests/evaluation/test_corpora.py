"""Splits of several corpora: the even spread of the rows scored, and the scores per corpus."""

from __future__ import annotations

import random

import pytest

from llm_from_scratch.evaluation.corpora import (
    even_shares,
    rows_by_corpus,
    rows_first_of,
    scores_by_corpus,
    spread_rows,
)
from llm_from_scratch.evaluation.metrics import corpus_scores


def round_robin_shares(sizes: list[int], total: int) -> list[int]:
    """The reference: one item at a time to each group that has one left, in group order."""
    shares = [0] * len(sizes)
    while total > 0 and any(share < size for share, size in zip(shares, sizes, strict=True)):
        for group, size in enumerate(sizes):
            if total > 0 and shares[group] < size:
                shares[group] += 1
                total -= 1
    return shares


@pytest.mark.parametrize(
    ("sizes", "total", "shares"),
    [
        ([500, 500], 500, [250, 250]),
        ([1000, 2000], 500, [250, 250]),
        ([60, 2000], 500, [60, 440]),  # the small corpus takes all and leaves the rest
        ([10, 3, 100], 20, [9, 3, 8]),  # the remainder goes to the first
        ([100, 100, 100], 10, [4, 3, 3]),
        ([5], 500, [5]),
        ([800], 500, [500]),
        ([7, 9], 100, [7, 9]),
        ([7, 9], 0, [0, 0]),
        ([], 500, []),
    ],
)
def test_even_shares(sizes, total, shares):
    assert even_shares(sizes, total) == shares


def test_even_shares_equal_handing_out_one_at_a_time():
    rng = random.Random(0)
    for _ in range(500):
        sizes = [rng.randint(0, 40) for _ in range(rng.randint(1, 6))]
        total = rng.randint(0, 150)
        assert even_shares(sizes, total) == round_robin_shares(sizes, total), (sizes, total)


def test_spread_rows_takes_the_first_rows_of_each_corpus_in_order():
    corpora = ["a"] * 600 + ["b"] * 300 + ["c"] * 40
    rows = spread_rows(corpora, 500)
    assert rows == [*range(0, 230), *range(600, 830), *range(900, 940)]
    assert rows == sorted(rows)
    assert spread_rows(["a"] * 900, 500) == list(range(500))  # one corpus: the first rows
    assert spread_rows(["a", "b", "a", "b", "a"], 3) == [0, 1, 2]
    assert spread_rows(["a", "b"], 10) == [0, 1]


def test_rows_by_corpus_keeps_the_order_of_first_appearance():
    assert rows_by_corpus(["b", "a", "b", "c", "a"]) == {"b": [0, 2], "a": [1, 4], "c": [3]}


def test_scores_by_corpus_equal_each_corpus_scored_alone():
    references = ["猫がマットに座った。", "彼は学生だ。", "今日は雨だ。", "私は本を読む。"]
    hypotheses = ["猫がマットに座った。", "彼は先生だ。", "明日は雨だ。", "私は本を読む。"]
    corpora = ["enja", "tanaka", "enja", "tanaka"]
    scores = scores_by_corpus(hypotheses, references, corpora, "ja")
    assert list(scores) == ["enja", "tanaka"]
    for corpus, own in (("enja", [0, 2]), ("tanaka", [1, 3])):
        alone = corpus_scores([hypotheses[i] for i in own], [references[i] for i in own], "ja")
        assert scores[corpus] == alone
    assert scores["enja"].bleu != scores["tanaka"].bleu
    assert scores_by_corpus(hypotheses, references, ["enja"] * 4, "ja") == {}


def test_rows_first_of_takes_all_of_one_corpus_and_shares_the_rest():
    corpora = ["dom"] * 5 + ["a"] * 10 + ["b"] * 10
    rows = rows_first_of(corpora, "dom", 11)
    assert [corpora[index] for index in rows] == ["dom"] * 5 + ["a"] * 3 + ["b"] * 3
    assert rows == [0, 1, 2, 3, 4, 5, 6, 7, 15, 16, 17]
    assert rows_first_of(corpora, "dom", 3) == [0, 1, 2]  # fewer than the corpus holds
