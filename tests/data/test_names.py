"""Name placeholders: which names a train pair and an input mask, and how outputs get them back
(data/names.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.names import (
    SEEN_TIMES,
    UNSEEN_PIECES,
    mask_pair,
    mask_unseen_names,
    name_lexicon,
    render_names,
    restore_names,
    unknown_words,
)
from llm_from_scratch.data.placeholders import NAME_PLACEHOLDERS, keeps_placeholders
from llm_from_scratch.name_dictionary import load_dictionary
from llm_from_scratch.tokenizer.bpe import BPETokenizer

N0, N1 = NAME_PLACEHOLDERS[:2]
PAIRS = [
    *[(f"I saw Tom at {n}.", f"{n}時にトムを見た。") for n in range(5)],
    *[(f"Is Mary {n}?", f"メアリーは{n}歳？") for n in range(4)],
    ("Mary likes tea.", "メアリーはお茶が好き。"),  # a first word: not counted, still masked
    *[(f"They went to Chicago {n} times.", f"シカゴに{n}回行った。") for n in range(2)],
    *[(f"Yesterday was {n}.", f"昨日はテスト{n}だった。") for n in range(5)],
    ("I use Windows.", "Windowsを使う。"),
]
LEXICON = {"Tom": "トム", "Mary": "メアリー"}


def test_the_lexicon_pairs_a_name_with_the_katakana_that_translates_it():
    # Chicago occurs twice, too few to pair; a sentence's first word (Yesterday) is not a name.
    assert name_lexicon(PAIRS) == LEXICON


def test_two_runs_as_frequent_give_the_same_lexicon_in_every_process():
    # Both katakana runs are in every pair of Tom's: a tie, which the order a pair's set of runs
    # iterates in (string hashing, seeded per process) must not break.
    code = (
        "from llm_from_scratch.data.names import name_lexicon\n"
        "pairs = [(f'I saw Tom at {n}.', f'{n}時にトムとサムを見た。') for n in range(4)]\n"
        "print(name_lexicon(pairs))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(6)
    }
    assert len(outputs) == 1


def test_half_the_train_pairs_mask_their_names_on_both_sides_alike():
    masked = [mask_pair(src, tgt, LEXICON) for src, tgt in PAIRS]
    changed = [(pair, new) for pair, new in zip(PAIRS, masked, strict=True) if pair != new]
    assert 0 < len(changed) < len(PAIRS)
    for (source, target), (new_source, new_target) in changed:
        assert N0 in new_source and N0 in new_target
        name = next(name for name in ("Tom", "Mary", "Windows") if name in source)
        assert new_source == source.replace(name, N0, 1)
        assert new_target == target.replace(LEXICON.get(name, name), N0, 1)
    many = [(f"Tom and Mary met {n}.", f"トムとメアリーは{n}回会った。") for n in range(200)]
    masked = [mask_pair(src, tgt, LEXICON) for src, tgt in many]
    assert 60 < sum(pair != new for pair, new in zip(many, masked, strict=True)) < 140
    assert (f"{N0} and {N1} met 0.", f"{N0}と{N1}は0回会った。") in masked


def test_a_name_the_target_does_not_write_stays_on_both_sides():
    pairs = [(f"Tom is {n}.", f"彼は{n}歳だ。") for n in range(50)]
    assert [mask_pair(src, tgt, LEXICON) for src, tgt in pairs] == pairs


class StandIn:
    """A stand-in source tokenizer: one piece per three letters, a leading space free, and the
    word counts given (None: a tokenizer trained before words were counted)."""

    def __init__(self, counts: dict[str, int] | None) -> None:
        self.counts = counts

    def word_count(self, word: str) -> int | None:
        return None if self.counts is None else self.counts.get(word.lower(), 0)

    def encode(self, text: str) -> list[int]:
        return [0] * (1 if text == " unfortunately" else -(-len(text.strip()) // 3))


COUNTS = {"ask": 50, "mr": 40, "about": 90, "tom": 30, "called": 20, "unfortunately": 8}


@pytest.mark.parametrize("counts", [COUNTS, None], ids=["counted", "pieces"])
@pytest.mark.parametrize(
    ("text", "masked", "names"),
    [
        ("Ask Mr. Quixbury about Zanzibar.", f"Ask Mr. {N0} about {N1}.", ["Quixbury", "Zanzibar"]),
        ("Tom met Quixbury.", f"Tom met {N0}.", ["Quixbury"]),  # Tom: seen often, one piece
        # A first word counts too; a lowercase word is no name.
        ("Quixbury called.", f"{N0} called.", ["Quixbury"]),
        ("Unfortunately it rained.", "Unfortunately it rained.", []),
        ("the quixbury case", "the quixbury case", []),
        (f"stray {N1} Quixbury", f"stray  {N0}", ["Quixbury"]),  # the input's own: dropped
    ],
)
def test_an_input_masks_the_capitalized_words_the_model_rarely_saw(counts, text, masked, names):
    tokenizer = StandIn(counts)
    assert mask_unseen_names(text, tokenizer) == (masked, names)
    assert restore_names(masked, names) == text.replace(N1, "")


def test_a_word_seen_often_is_translated_however_many_pieces_spell_it():
    # `Ask` and `About` take one or two pieces, `Zanzibar` three: the counts decide alone.
    tokenizer = StandIn({"zanzibar": SEEN_TIMES, "ask": SEEN_TIMES - 1})
    assert len(tokenizer.encode(" Zanzibar")) >= UNSEEN_PIECES > len(tokenizer.encode(" Ask"))
    assert mask_unseen_names("Ask about Zanzibar.", tokenizer) == (f"{N0} about Zanzibar.", ["Ask"])


def test_an_input_masks_at_most_as_many_names_as_there_are_placeholders():
    text = ", ".join(f"Quixbury{chr(97 + k)}" for k in range(len(NAME_PLACEHOLDERS) + 1))
    masked, names = mask_unseen_names(text, StandIn({}))
    assert len(names) == len(NAME_PLACEHOLDERS)
    assert masked.endswith(f", Quixbury{chr(97 + len(NAME_PLACEHOLDERS))}")
    assert restore_names(masked, names) == text


def test_unseen_words_next_to_each_other_are_one_name_behind_one_placeholder():
    text = "Ask Larry Quixbury and Zanzibar Quixland, Quixton."
    masked, names = mask_unseen_names(text, StandIn({"ask": 50, "and": 50}))
    assert masked == f"Ask {N0} and {N1}, {NAME_PLACEHOLDERS[2]}."
    assert names == ["Larry Quixbury", "Zanzibar Quixland", "Quixton"]
    assert restore_names(masked, names) == text


def test_a_name_of_several_words_is_rendered_whole_else_word_by_word():
    dictionary = load_dictionary()
    names = ["George Floyd", "Floyd George", "Tamil Quixbury", "Tamil NASA"]
    assert render_names(names, dictionary) == [
        "ジョージ・フロイド",  # the dictionary's entry for the whole name
        "フロイド・ジョージ",  # its words' entries
        "Tamil Quixbury",  # a word it cannot render: the name stays as written
        "Tamil NASA",
    ]
    transliterated = render_names(names, dictionary, {"Quixbury": "クイックスベリー"})
    assert transliterated[2] == "タミル・クイックスベリー"


def test_the_words_a_transliteration_could_render_are_unknown_one_word_names():
    names = ["Larry Quixbury", "NASA", "Abe", "McDonald", "George Floyd", "Tamil"]
    # NASA an acronym, Abe a name the dictionary knows in kanji, McDonald capitals inside.
    assert unknown_words(names, load_dictionary()) == ["Larry", "Quixbury"]


# A small source side where `Hello` and `Tuesday` are everyday words, though a few times only:
# a small vocabulary spells them in several pieces. `Quixbury` never occurs.
EVERYDAY = [
    "I think that the weather will be better in the afternoon.",
    "She was reading a letter from her brother in the kitchen.",
    "There are three apples and seven oranges on the table.",
    "We were waiting for the train when it started to rain.",
    "He is interested in learning another language this winter.",
    "They went shopping together after dinner with their parents.",
    "Could you tell me where the nearest station is, please?",
    "The children are playing in the garden behind the house.",
    "My mother bought a new umbrella yesterday at the store.",
    "It is important to drink water every morning and evening.",
]
TRAIN_SOURCE = [
    *EVERYDAY * 4,
    *[f"Hello, {who}. See you on Tuesday." for who in ("Tom", "Mary", "Ken", "everyone")],
    "He said hello to me on Tuesday.",
    "HELLO! The shop is closed on Tuesday.",
]
TEXT = "Hello. I will see Quixbury on Tuesday."


@pytest.mark.parametrize("vocab_size", [320, 1000])
def test_common_words_are_never_masked_whatever_the_vocabulary_size(vocab_size):
    tokenizer = BPETokenizer.train(TRAIN_SOURCE, vocab_size)
    assert tokenizer.word_count("Hello") >= SEEN_TIMES and tokenizer.word_count("Quixbury") == 0
    assert mask_unseen_names(TEXT, tokenizer) == (TEXT.replace("Quixbury", N0), ["Quixbury"])


def without_word_counts(tokenizer: BPETokenizer) -> BPETokenizer:
    """`tokenizer` as a file written before words were counted (version 1) loads it."""
    data = json.loads(tokenizer.to_json())
    del data["word_counts"]
    return BPETokenizer.from_json(json.dumps({**data, "version": 1}))


def test_without_word_counts_the_words_a_tokenizer_spells_in_many_pieces_are_masked():
    small, large = (without_word_counts(BPETokenizer.train(TRAIN_SOURCE, v)) for v in (320, 1000))
    assert small.word_count("Hello") is None
    # Which words that copies depends on the vocabulary size: the fault word counts remove.
    assert mask_unseen_names(TEXT, small)[1] == ["Hello", "Quixbury", "Tuesday"]
    assert mask_unseen_names(TEXT, large)[1] == ["Quixbury"]


def test_outputs_get_each_name_back_once_and_lose_a_placeholder_without_one():
    assert restore_names(f"{N1}と{N0}は会った。", ["Quixbury", "Zanzibar"]) == (
        "ZanzibarとQuixburyは会った。"
    )
    assert restore_names(f"{N0}と{N1}。", ["Quixbury"]) == "Quixburyと。"
    assert restore_names(f"{N0}と、{N0}は{N1}。", ["Toyota", "Sony"]) == "Toyotaと、はSony。"
    assert keeps_placeholders(f"Ask {N0}.", f"{N0}に聞く。")
    assert not keeps_placeholders(f"Ask {N0}.", "聞く。")


def test_a_foreign_name_the_dictionary_knows_is_rendered_in_katakana_and_others_copied():
    names = ["George", "Floyd", "Abe", "NASA", "Quixbury"]
    renderings = render_names(names, load_dictionary())
    assert renderings == ["ジョージ", "フロイド", "Abe", "NASA", "Quixbury"]
    n2, n3 = NAME_PLACEHOLDERS[2:4]
    # Two katakana names with only spaces between are one name's parts: a middle dot joins them.
    joined = restore_names(f"{N0} {N1}が{n2}と会った。", renderings)
    assert joined == "ジョージ・フロイドがAbeと会った。"
    assert restore_names(f"{N0}{N1}。", renderings) == "ジョージ・フロイド。"
    assert restore_names(f"{N0}と{N1}。", renderings) == "ジョージとフロイド。"
    assert restore_names(f"{n2} {N1}、{n3}。", renderings) == "Abe フロイド、NASA。"


def test_only_the_train_split_is_masked_and_only_when_asked(tmp_path, local_config, paths):
    (tmp_path / "names").mkdir()
    lines = "".join(f"{src}\t{tgt}\n" for src, tgt in PAIRS)
    for split in ("train", "dev"):
        (tmp_path / "names" / f"{split}.tsv").write_text(lines)
    corpus = {"format": "tsv", "splits": {"train": "train.tsv", "dev": "dev.tsv"}}
    cfg = local_config("names", corpus={**corpus, "test_fraction": 0.0})
    masked_cfg = dataclasses.replace(cfg, name_placeholders=True)
    train = load_split(masked_cfg, "train", paths)
    assert list(zip(train["src"], train["tgt"], strict=True)) == [
        mask_pair(src, tgt, LEXICON) for src, tgt in PAIRS
    ]
    assert load_split(masked_cfg, "dev", paths)[:] == load_split(cfg, "dev", paths)[:]
    assert load_split(cfg, "train", paths)[:] == {
        "src": [src for src, _ in PAIRS],
        "tgt": [tgt for _, tgt in PAIRS],
    }
