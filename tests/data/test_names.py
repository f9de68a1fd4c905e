"""Name placeholders: which names a train pair and an input mask, and how outputs get them back
(data/names.py)."""

from __future__ import annotations

import dataclasses

import pytest

from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.names import (
    UNSEEN_PIECES,
    mask_pair,
    mask_unseen_names,
    name_lexicon,
    restore_names,
)
from llm_from_scratch.data.placeholders import NAME_PLACEHOLDERS, keeps_placeholders

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


def pieces(word: str) -> int:
    """A stand-in tokenizer: one piece per three letters, a leading space free."""
    return -(-len(word.strip()) // 3)


@pytest.mark.parametrize(
    ("text", "masked", "names"),
    [
        ("Ask Mr. Quixbury about Zanzibar.", f"Ask Mr. {N0} about {N1}.", ["Quixbury", "Zanzibar"]),
        ("Tom met Quixbury.", f"Tom met {N0}.", ["Quixbury"]),  # Tom: one piece
        # A first word counts too, as spelled after a space; a long lowercase word is no name.
        ("Quixbury called.", f"{N0} called.", ["Quixbury"]),
        ("Unfortunately it rained.", "Unfortunately it rained.", []),
        ("the quixbury case", "the quixbury case", []),
        (f"stray {N1} Quixbury", f"stray  {N0}", ["Quixbury"]),  # the input's own: dropped
    ],
)
def test_an_input_masks_the_capitalized_words_the_model_rarely_saw(text, masked, names):
    assert pieces(" Quixbury") >= UNSEEN_PIECES > pieces(" Tom")
    common = {" unfortunately"}  # a word the tokenizer knows whole
    assert mask_unseen_names(text, lambda w: 1 if w in common else pieces(w)) == (masked, names)
    assert restore_names(masked, names) == text.replace(N1, "")


def test_an_input_masks_at_most_as_many_names_as_there_are_placeholders():
    text = " ".join(f"Quixbury{chr(97 + k)}" for k in range(len(NAME_PLACEHOLDERS) + 1))
    masked, names = mask_unseen_names(text, pieces)
    assert len(names) == len(NAME_PLACEHOLDERS)
    assert masked.endswith(f" Quixbury{chr(97 + len(NAME_PLACEHOLDERS))}")
    assert restore_names(masked, names) == text


def test_outputs_get_each_name_back_once_and_lose_a_placeholder_without_one():
    assert restore_names(f"{N1}と{N0}は会った。", ["Quixbury", "Zanzibar"]) == (
        "ZanzibarとQuixburyは会った。"
    )
    assert restore_names(f"{N0}と{N1}。", ["Quixbury"]) == "Quixburyと。"
    assert restore_names(f"{N0}と、{N0}は{N1}。", ["Toyota", "Sony"]) == "Toyotaと、はSony。"
    assert keeps_placeholders(f"Ask {N0}.", f"{N0}に聞く。")
    assert not keeps_placeholders(f"Ask {N0}.", "聞く。")


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
