"""The parts of metrics.json that are computed here rather than by sacreBLEU."""

from __future__ import annotations

import json

import pytest

from llm_from_scratch.evaluation.metrics import bleu
from llm_from_scratch.evaluation.report import (
    bleu_by_source_length,
    has_repeated_ngram,
    length_bucket,
    write_evaluation,
)


@pytest.mark.parametrize(
    "words,label", [(1, "1-5"), (5, "1-5"), (6, "6-10"), (30, "21-30"), (31, "31+")]
)
def test_length_buckets_are_inclusive_ranges(words, label):
    assert length_bucket(words) == label


def test_bleu_by_source_length_scores_each_bucket_on_its_own():
    sources = ["a b", "a b c d e f g", "x y"]
    hyps = ["これはテストです。", "猫が好きです。", "あれがテストです。"]
    refs = ["これはテストです。", "犬が好きです。", "これはテストです。"]
    buckets = bleu_by_source_length(sources, hyps, refs, "ja")
    assert list(buckets) == ["1-5", "6-10"]
    assert buckets["1-5"]["sentences"] == 2
    assert buckets["1-5"]["bleu"] == pytest.approx(
        bleu([hyps[0], hyps[2]], [refs[0], refs[2]], "ja-mecab").score
    )
    assert buckets["6-10"]["bleu"] == pytest.approx(bleu([hyps[1]], [refs[1]], "ja-mecab").score)


def test_repeated_ngram_detection():
    assert has_repeated_ngram([1, 2, 3, 4, 9, 1, 2, 3, 4])
    assert not has_repeated_ngram([1, 2, 3, 4, 1, 2, 3, 5])
    assert has_repeated_ngram([7, 7, 7, 7, 7])
    assert not has_repeated_ngram([1, 2, 3])


def test_write_evaluation_keeps_lines_and_unicode(tmp_path):
    write_evaluation(tmp_path / "eval", ["猫です。", "", "犬"], {"bleu": 12.5, "note": "日本語"})
    lines = (tmp_path / "eval" / "hypotheses.txt").read_text(encoding="utf-8").split("\n")
    assert lines == ["猫です。", "", "犬", ""]
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text(encoding="utf-8")) == {
        "bleu": 12.5,
        "note": "日本語",
    }
