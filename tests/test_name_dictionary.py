"""The name dictionary: EDRDG's files read into English keys and Japanese renderings
(name_dictionary.py), from the test session's small copies of them (tests/conftest.py)."""

from __future__ import annotations

import gzip
import json

from llm_from_scratch.name_dictionary import (
    NameDictionary,
    NameUsage,
    encode_table,
    load_dictionary,
    parse_entries,
)

# Support as the dictionary gives it: a rare spelling ahead (ターリバーン), or equal (Abe's
# katakana ahead of its kanji, unlike the installed files, so that usage has to decide).
TABLE = encode_table(
    {
        "Taliban": [("ターリバーン", 2), ("タリバーン", 2), ("タリバン", 2)],
        "Abe": [("エイブ", 3), ("安倍", 1)],
        "Tom": [("トム", 1)],
    }
)


def test_a_name_has_every_rendering_its_entries_give_the_best_supported_first():
    dictionary = load_dictionary()
    assert [r.text for r in dictionary.renderings("Abe")] == ["安倍", "阿部", "エイブ"]
    assert [r.text for r in dictionary.renderings("Tamil Nadu")] == [
        "タミル・ナド",
        "タミルナードゥ",
    ]
    # A compound's parts pair with the name's words: George Floyd gives Floyd フロイド, and
    # George twice (its own entry and the compound's part).
    assert [(r.text, r.support) for r in dictionary.renderings("George")] == [("ジョージ", 2)]
    assert [r.text for r in dictionary.renderings("Floyd")] == ["フロイド"]
    assert dictionary.renderings("Tamil")[0].text == "タミル"  # tags in parentheses dropped


def test_loanwords_are_found_by_their_lowercase_form_only_when_asked():
    dictionary = load_dictionary()
    assert [r.text for r in dictionary.renderings("Coronavirus")] == ["コロナウイルス"]
    assert dictionary.renderings("Coronavirus", loanwords=False) == []
    # JMdict's kanji words translate a gloss; only its katakana headwords render one.
    assert [r.text for r in dictionary.renderings("Sunday")] == ["サンデー"]


def test_katakana_is_given_for_foreign_names_only():
    dictionary = load_dictionary()
    assert dictionary.katakana("Biden") == "バイデン"
    assert dictionary.katakana("Weyden") == "バイデン"
    assert dictionary.katakana("Abe") is None  # a Japanese name: 安倍 and 阿部 outweigh エイブ
    assert dictionary.katakana("NASA") is None  # an acronym stays in Latin letters
    assert dictionary.katakana("Quixbury") is None  # unknown


def test_hiragana_and_one_character_headwords_and_the_header_give_no_pair():
    lines = [
        "\u3000？？？ /ENAMDICT/",
        "あべ /(u) Abe/",
        "林 [はやし] /(s) Hayashi/",
        "林田 /(s) Hayashida/",
    ]
    assert list(parse_entries(lines, words=False)) == [("Hayashida", "林田", 1)]


def test_the_table_is_cached_and_read_back_alike(tmp_path, name_dictionary_files):
    built = load_dictionary(name_dictionary_files, tmp_path)
    [cached] = tmp_path.glob("name_table-*.json")
    assert "CC BY-SA" in cached.read_text(encoding="utf-8")

    table = json.loads(cached.read_text(encoding="utf-8"))["table"]
    assert len(NameDictionary(table)) == len(built)
    assert NameDictionary(table).renderings("Abe") == built.renderings("Abe")


def test_without_the_installed_files_there_is_no_dictionary(tmp_path):
    assert load_dictionary([tmp_path / "enamdict", tmp_path / "edict"], tmp_path) is None


def test_news_usage_picks_the_spelling_news_writes_most():
    news = NameUsage("タリバンは声明を出した。\nタリバン政権。\nターリバーンとも書く。")
    assert NameDictionary(TABLE).katakana("Taliban") == "ターリバーン"  # support alone
    assert NameDictionary(TABLE, news).katakana("Taliban") == "タリバン"


def test_a_name_news_writes_in_kanji_is_not_given_katakana():
    assert NameDictionary(TABLE).katakana("Abe") == "エイブ"
    news = NameUsage("安倍首相は述べた。安倍氏。")
    assert NameDictionary(TABLE, news).katakana("Abe") is None


def test_too_few_uses_leave_the_choice_to_the_dictionary():
    once = NameUsage("タリバンは声明を出した。")
    assert NameDictionary(TABLE, once).katakana("Taliban") == "ターリバーン"


def test_a_katakana_spelling_is_counted_as_a_whole_word_only():
    usage = NameUsage("トムソンとトムソン。ジョージ・トム。")
    rendering = NameDictionary(TABLE).renderings("Tom")[0]
    assert usage.uses(rendering) == 1  # the part of ジョージ・トム, not トムソン's


def test_usage_is_read_from_gzip_text(tmp_path, name_dictionary_files):
    news = tmp_path / "train.ja.gz"
    news.write_bytes(gzip.compress("安倍首相は述べた。\n安倍氏。\n".encode()))
    assert load_dictionary(name_dictionary_files, tmp_path).katakana("Weyden") == "バイデン"
    reading = load_dictionary(name_dictionary_files, tmp_path, usage=[news])
    assert reading.usage is not None
    assert reading.usage.uses(reading.renderings("Abe")[0]) == 2
