"""The scores of metrics.json: counts, segmented corpora, each corpus of a mixed split."""

from __future__ import annotations

import pytest

from llm_from_scratch.decoding.translator import Candidate, SentenceTranslation, Translation
from llm_from_scratch.evaluation.metrics import bleu
from llm_from_scratch.evaluation.report import summary
from llm_from_scratch.evaluation.scores import score, scores_per_corpus
from llm_from_scratch.name_dictionary import load_dictionary


def translation(text: str, tokens: list[int], hit_max_len: bool = False) -> Translation:
    return Translation([Candidate(text, -1.0, [SentenceTranslation(text, tokens, hit_max_len)])])


def test_score_counts_max_len_and_repeats():
    translations = [
        translation("猫です。", [5, 6, 7, 8, 5, 6, 7, 8], hit_max_len=True),
        translation("犬です。", [5, 6, 7, 8, 9]),
        translation("", []),
    ]
    metrics = score(
        ["a cat", "a dog", "x"],
        translations,
        ["猫です。", "犬だ。", "鳥"],
        ("en", "ja"),
        segmented=False,
    )
    assert metrics["hit_max_len"] == 1
    assert metrics["repeated_4gram"] == 1
    assert metrics["sentences"] == 3
    assert "bleu_segmented" not in metrics


def test_segmented_corpus_scores_without_spaces_and_adds_segmented_bleu():
    hyps, refs = ["彼 は 学生 だ 。"], ["彼 は 先生 だ 。"]
    metrics = score(["he"], [translation(hyps[0], [])], refs, ("en", "ja"), segmented=True)
    assert metrics["bleu"] == pytest.approx(
        bleu(["彼は学生だ。"], ["彼は先生だ。"], "ja-mecab").score
    )
    assert metrics["bleu_segmented"] == pytest.approx(bleu(hyps, refs, tokenize="none").score)


def test_scores_per_corpus_equal_each_corpus_evaluated_alone():
    sources = ["a cat", "he is a student", "it rains 3 days", "I read 2 books"]
    references = ["猫だ。", "彼 は 学生 だ 。", "3日雨だ。", "私 は 本 を 2 冊 読む 。"]
    texts = ["猫です。", "彼 は 先生 だ 。", "3日雨だ。", "私 は 本 を 読む 。"]
    translations = [translation(text, [5, 6]) for text in texts]
    corpora = ["raw", "segmented", "raw", "segmented"]
    languages = ("en", "ja")
    section = scores_per_corpus(sources, translations, references, corpora, languages)
    assert list(section["corpora"]) == ["raw", "segmented"]
    for corpus, own in (("raw", [0, 2]), ("segmented", [1, 3])):
        refs = [references[i] for i in own]
        alone = score(
            [sources[i] for i in own],
            [translations[i] for i in own],
            refs,
            languages,
            segmented=corpus == "segmented",
        )
        assert section["corpora"][corpus] == {
            key: value for key, value in alone.items() if not key.endswith("_signature")
        }
    assert section["corpora"]["raw"]["number_fidelity"]["kept"] == 1
    assert "bleu_segmented" in section["corpora"]["segmented"]
    assert scores_per_corpus(sources, translations, references, ["x"] * 4, languages) == {}


def test_names_rendered_are_scored_for_a_japanese_target_with_a_dictionary():
    sources, references = (
        ["Biden came.", "Biden went."],
        ["バイデン氏が来た。", "バイデン氏が行った。"],
    )
    translations = [translation("バイデンが来た。", [5]), translation("Bidenが行った。", [6])]
    dictionary = load_dictionary()
    metrics = score(sources, translations, references, ("en", "ja"), False, dictionary)
    assert metrics["name_fidelity"] == {"share": 0.5, "names": 2, "rendered": 1}
    assert "names rendered as the reference does: 50.0% (1 of 2)" in summary(
        {**metrics, "dataset": "d", "split": "test", "direction": "en-ja"}
        | {"sentences_per_second": 1.0}
    )
    assert score(sources, translations, references, ("en", "ja"), False)["name_fidelity"] is None
