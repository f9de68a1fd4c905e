"""The metrics are sacreBLEU's, with the tokenization the target language needs (MeCab for
Japanese, 13a for English), and never silently another."""

from __future__ import annotations

import pytest
import sacrebleu.tokenizers.tokenizer_ja_mecab as sacrebleu_mecab
from sacrebleu.metrics import BLEU, CHRF

from llm_from_scratch.evaluation.metrics import MetricError, bleu, bleu_tokenizer, corpus_scores

HYP, REF = "これはテストです。", "あれがテストです。"


def test_bleu_is_sacrebleus_ja_mecab_figure():
    ours = corpus_scores([HYP], [REF], "ja")
    theirs = BLEU(tokenize="ja-mecab").corpus_score([HYP], [[REF]])
    assert ours.bleu == pytest.approx(theirs.score)
    assert "tok:ja-mecab" in ours.bleu_signature


def test_bleu_segments_with_mecab_not_13a():
    # MeCab: これ/は/テスト/です/。 vs あれ/が/テスト/です/。 -> n-gram matches 3/5, 2/4, 1/3 and
    # 0/2, the last smoothed by sacreBLEU's "exp" method to 1/(2*2). 13a would see one
    # unmatched "word" per sentence and score 0.
    expected = 100 * (3 / 5 * 2 / 4 * 1 / 3 * 1 / 4) ** 0.25
    assert corpus_scores([HYP], [REF], "ja").bleu == pytest.approx(expected)
    assert BLEU(tokenize="13a").corpus_score([HYP], [[REF]]).score == 0.0


def test_character_bleu_counts_character_ngrams():
    # 9 characters each: matching 1- to 4-grams 7/9, 5/8, 4/7, 3/6; same length, so no penalty.
    expected = 100 * (7 / 9 * 5 / 8 * 4 / 7 * 3 / 6) ** 0.25
    assert corpus_scores([HYP], [REF], "ja").char_bleu == pytest.approx(expected)


def test_chrf_is_sacrebleus():
    scores = corpus_scores([HYP, "猫が好き"], [REF, "犬が好き"], "ja")
    assert scores.chrf == pytest.approx(
        CHRF().corpus_score([HYP, "猫が好き"], [[REF, "犬が好き"]]).score
    )
    assert corpus_scores([HYP], [HYP], "ja").chrf == pytest.approx(100.0)


def test_missing_mecab_fails_loudly(monkeypatch):
    monkeypatch.setattr(sacrebleu_mecab, "MeCab", None)
    with pytest.raises(MetricError, match="MeCab"):
        corpus_scores([HYP], [REF], "ja")
    with pytest.raises(MetricError, match="MeCab"):
        bleu([HYP], [REF], "ja-mecab")


def test_mismatched_lengths_are_an_error():
    with pytest.raises(MetricError, match="2 hypotheses for 1 references"):
        corpus_scores([HYP, HYP], [REF], "ja")


def test_segmented_bleu_uses_the_given_spaces():
    # tokenize="none" takes the corpus's own word segmentation as it is: matches 4/5, 2/4, 0/3
    # and 0/2, the zeros smoothed to 1/(2*3) and 1/(4*2).
    score = bleu(["彼 は 学生 だ 。"], ["彼 は 先生 だ 。"], tokenize="none")
    assert score.score == pytest.approx(100 * (4 / 5 * 2 / 4 * 1 / 6 * 1 / 8) ** 0.25)


EN_HYP, EN_REF = "The cat sat on the mat, didn't it?", "The cat is on the mat, isn't it?"


def test_english_bleu_is_sacrebleus_13a_figure():
    ours = corpus_scores([EN_HYP], [EN_REF], "en")
    theirs = BLEU().corpus_score([EN_HYP], [[EN_REF]])  # sacreBLEU's default tokenizer: 13a
    assert ours.bleu == pytest.approx(theirs.score) and 0 < ours.bleu < 100
    assert "tok:13a" in ours.bleu_signature
    assert ours.chrf == pytest.approx(CHRF().corpus_score([EN_HYP], [[EN_REF]]).score)
    # MeCab cuts this English into other words than 13a does: the choice matters.
    assert corpus_scores([EN_HYP], [EN_REF], "ja").bleu != pytest.approx(ours.bleu)


def test_the_bleu_tokenizer_follows_the_language():
    assert bleu_tokenizer("ja") == "ja-mecab"
    assert bleu_tokenizer("en") == "13a"


def test_english_bleu_needs_no_mecab(monkeypatch):
    monkeypatch.setattr(sacrebleu_mecab, "MeCab", None)
    assert corpus_scores([EN_REF], [EN_REF], "en").bleu == pytest.approx(100.0)
