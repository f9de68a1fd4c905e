"""Names rendered (evaluation/names.py): golden counts on sentences written for it, with the
test session's name dictionary (tests/conftest.py)."""

from __future__ import annotations

from llm_from_scratch.evaluation.names import name_fidelity, source_names
from llm_from_scratch.name_dictionary import load_dictionary


def test_a_name_is_the_longest_span_of_capitalized_words_the_dictionary_knows():
    dictionary = load_dictionary()
    source = "In Tamil Nadu, Biden met George Floyd's family and Biden left Tamil."
    assert source_names(source, dictionary) == ["Tamil Nadu", "Biden", "George Floyd", "Tamil"]
    assert source_names("The coronavirus and Coronavirus.", dictionary) == []  # loanwords


def test_names_count_where_the_reference_renders_them_and_score_where_the_output_does():
    dictionary = load_dictionary()
    sources = [
        "Biden met Abe in Tamil Nadu on Sunday.",
        "White House says Biden will go.",
        "Quixbury and NASA.",
    ]
    references = [
        "バイデン氏は日曜日にタミル・ナードゥで安倍氏と会った。",  # Sunday: サンデー is not in it
        "ホワイト・ハウスはバイデン氏が行くと言う。",
        "クイックスベリーとＮＡＳＡ。",  # no dictionary rendering of either occurs
    ]
    hypotheses = [
        "バイデンは日曜日にTamil NaduでAbeと会った。",  # 1 of 3
        "ホワイトハウス、バイデン。",  # 2 of 2: the middle dot is ignored
        "",
    ]
    fidelity = name_fidelity(sources, hypotheses, references, dictionary)
    assert (fidelity.names, fidelity.rendered) == (5, 3)
    assert fidelity.to_dict() == {"share": 0.6, "names": 5, "rendered": 3}
    assert name_fidelity(sources, references, references, dictionary).share == 1.0
    assert name_fidelity(sources[2:], hypotheses[2:], references[2:], dictionary).share is None
