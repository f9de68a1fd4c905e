"""Japanese word segmentation: removing it, and telling segmented text from raw."""

from __future__ import annotations

import pytest

from llm_from_scratch.word_segmentation import detokenize_ja, is_segmented


@pytest.mark.parametrize(
    ("segmented", "expected"),
    [
        ("彼 は 12 歳 に な っ た 。", "彼は12歳になった。"),
        ("彼 は New York に 住 ん で い る 。", "彼はNew Yorkに住んでいる。"),
        ("この 川 は 長さ 200 km だ 。", "この川は長さ200 kmだ。"),
        ("３ 時 に 会 う 。", "３時に会う。"),
        ("Ｔｏｍ Ｓｍｉｔｈ が 来 た", "Ｔｏｍ Ｓｍｉｔｈが来た"),
        ("  前後 の 空白  ", "前後の空白"),
    ],
)
def test_detokenize_ja_removes_segmentation_but_not_spaces_between_latin_words(segmented, expected):
    assert detokenize_ja(segmented) == expected


def test_segmented_japanese_is_told_from_raw():
    assert is_segmented(["彼 は 12 歳 だ 。", "猫 が い る 。", "New York だ 。"])
    assert not is_segmented(["彼は12歳だ。", "猫がいる。", "彼はNew Yorkに住んでいる。"])
    assert not is_segmented(["彼 は 12 歳 だ 。", "猫がいる。", "犬だ。"])  # a stray space
