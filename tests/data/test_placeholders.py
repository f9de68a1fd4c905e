"""Number placeholders: what a train pair and an input become, and how outputs get their numbers
back (data/placeholders.py)."""

from __future__ import annotations

import dataclasses

import pytest

from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.datamodule import cache_key, content_settings
from llm_from_scratch.data.placeholders import (
    PLACEHOLDERS,
    keeps_placeholders,
    mask_numbers,
    mask_pair,
    restore_numbers,
)
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.tokenizers import tokenizer_settings

P0, P1, P2, P3, P4, P5 = PLACEHOLDERS[:6]


@pytest.mark.parametrize(
    ("source", "target", "masked"),
    [
        # Only the number both sides write is masked; 二人 keeps the 2 a digit.
        (
            "I have 2 brothers and 1 sister.",
            "私には兄弟が二人と姉妹が１人いる。",
            (f"I have 2 brothers and {P0} sister.", f"私には兄弟が二人と姉妹が{P0}人いる。"),
        ),
        # Values match across forms and word order; a repeated number is masked once per match.
        (
            "It cost 1,200 yen in 1995 and 1995.",
            "１９９５年には１２００円だった。",
            (f"It cost {P0} yen in {P1} and 1995.", f"{P1}年には{P0}円だった。"),
        ),
        ("No numbers.", "数字はない。", ("No numbers.", "数字はない。")),
        # A phone number, whatever dashes the target writes it with.
        (
            "Call 1-800-446-2581 today.",
            "今日１―８００―４４６―２５８１に電話して。",
            (f"Call {P0} today.", f"今日{P0}に電話して。"),
        ),
        ("2 million", "200万", ("2 million", "200万")),  # scaled: not the same digits
    ],
)
def test_a_train_pair_masks_the_numbers_both_sides_write(source, target, masked):
    assert mask_pair(source, target) == masked


def test_an_input_masks_every_number_and_gets_each_back_as_written():
    text = "Call 03-1234-5678 at 7:45 for 4.50 dollars on 2024-05-01."
    masked, numbers = mask_numbers(text)
    # A phone number is one placeholder, a date's numbers one each.
    assert masked == f"Call {P0} at {P1}:{P2} for {P3} dollars on {P4}-{P5}-{PLACEHOLDERS[6]}."
    assert numbers == ["03-1234-5678", "7", "45", "4.50", "2024", "05", "01"]
    assert restore_numbers(masked, numbers, "en", "full_width") == text
    assert restore_numbers(
        f"{P1}と{P0}、{P2}に{P3}", ["1,200", "3.5", "7", "03-1234"], "ja", "full_width"
    ) == ("３．５と１，２００、７に０３－１２３４")


def test_a_run_whose_corpus_writes_ascii_digits_gets_its_numbers_back_as_the_source_writes_them():
    output = f"{P1}と{P0}、{P2}に{P3}"
    numbers = ["1,200", "3.5", "7", "03-1234"]
    assert restore_numbers(output, numbers, "ja", "ascii") == "3.5と1,200、7に03-1234"
    phone = "090-1234-5678"
    assert restore_numbers(f"{P0}歳です。", [phone], "ja", "ascii") == "090-1234-5678です。"


def test_a_phone_number_written_back_loses_the_unit_the_model_wrote_after_it():
    # "My phone number is 090-1234-5678.": a phone number takes no unit.
    phone = "090-1234-5678"
    assert restore_numbers(f"私の電話番号は{P0}歳です。", [phone], "ja", "full_width") == (
        "私の電話番号は０９０－１２３４－５６７８です。"
    )
    assert (
        restore_numbers(f"{P0}メートル", [phone], "ja", "full_width")
        == "０９０－１２３４－５６７８"
    )
    # Other numbers keep theirs, and text after a unitless number stays.
    assert restore_numbers(f"{P0}歳です。", ["25"], "ja", "full_width") == "２５歳です。"
    assert (
        restore_numbers(f"{P0}に電話して。", [phone], "ja", "full_width")
        == "０９０－１２３４－５６７８に電話して。"
    )


def test_placeholders_without_a_number_and_in_the_input_itself_are_dropped():
    assert restore_numbers(f"{P0}と{P2}。", ["5"], "en", "full_width") == "5と。"
    masked, numbers = mask_numbers(f"a {P1} b 7")
    assert (masked, numbers) == (f"a  b {P0}", ["7"])


def test_numbers_past_the_last_placeholder_stay_digits():
    text = " ".join(str(n) for n in range(1, len(PLACEHOLDERS) + 3))
    masked, numbers = mask_numbers(text)
    assert len(numbers) == len(PLACEHOLDERS)
    assert masked.endswith(f"{len(PLACEHOLDERS) + 1} {len(PLACEHOLDERS) + 2}")
    assert restore_numbers(masked, numbers, "en", "full_width") == text


def test_an_output_keeps_the_placeholders_only_with_each_as_often():
    assert keeps_placeholders(f"{P0} to {P1}", f"{P1}から{P0}")
    assert not keeps_placeholders(f"{P0} and {P0}", f"{P0}だけ")
    assert keeps_placeholders("none", "")


def test_only_the_train_split_is_masked_and_only_when_asked(tiny_enja, tiny_paths):
    plain = load_split(tiny_enja, "train", tiny_paths)
    masked_cfg = dataclasses.replace(tiny_enja, number_placeholders=True)
    masked = load_split(masked_cfg, "train", tiny_paths)
    assert plain[11] == {"src": "this river is 200 km long .", "tgt": "この川は長さ200 kmだ。"}
    assert masked[11] == {"src": f"this river is {P0} km long .", "tgt": f"この川は長さ{P0} kmだ。"}
    assert masked[4] == {"src": f"we will meet at {P0} o'clock .", "tgt": f"{P0}時に会いましょう。"}
    assert [masked[i] for i in (0, 1, 2)] == [plain[i] for i in (0, 1, 2)]  # no numbers
    for split in ("dev", "test"):  # held out: scored on the text as written
        assert (
            load_split(masked_cfg, split, tiny_paths)[:]
            == load_split(tiny_enja, split, tiny_paths)[:]
        )


@pytest.mark.parametrize("setting", ["number_placeholders", "name_placeholders", "sentence_pairs"])
def test_train_text_settings_change_the_cache_key_and_tokenizers_and_leave_them_as_they_were(
    tiny_enja, tiny_paths, word_tokenizer, setting
):
    key = cache_key(tiny_enja, word_tokenizer, word_tokenizer, tiny_paths)
    masked = dataclasses.replace(tiny_enja, **{setting: True})
    assert cache_key(masked, word_tokenizer, word_tokenizer, tiny_paths) != key
    assert setting not in content_settings(tiny_enja)  # a cache built before
    assert setting not in tokenizer_settings(tiny_enja, TokenizerConfig())
    assert tokenizer_settings(masked, TokenizerConfig())[setting]
    # What number masking does is in both keys, so a change to it rebuilds both.
    with_numbers = setting == "number_placeholders"
    assert ("number_masking" in content_settings(masked)) == with_numbers
    assert ("number_masking" in tokenizer_settings(masked, TokenizerConfig())) == with_numbers
