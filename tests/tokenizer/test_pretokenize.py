"""Pre-tokenization: pieces cover the text exactly and fall where the script changes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.tokenizer.pretokenize import PRETOKENIZERS, normalizer

ANY_STR = st.text(st.characters(blacklist_categories=()))  # surrogates and controls too


@pytest.mark.parametrize("name", sorted(PRETOKENIZERS))
@given(text=ANY_STR)
def test_pieces_join_back_to_the_text(name: str, text: str) -> None:
    assert "".join(re.findall(PRETOKENIZERS[name], text)) == text


@pytest.mark.parametrize(
    ("name", "text", "pieces"),
    [
        ("script", "私はテニス部員です。", ["私", "は", "テニス", "部員", "です", "。"]),
        ("okurigana", "私はテニス部員です。", ["私は", "テニス", "部員です", "。"]),
        ("okurigana", "東京タワーへ行きました", ["東京", "タワー", "へ", "行きました"]),
        ("okurigana", "2024年にCDを", ["2024", "年に", "CD", "を"]),
        (
            "okurigana",
            "Hello,  world! I don't\tknow 42.",
            ["Hello", ",", " ", " world", "!", " I", " don", "'t", "\t", "know", " 42", "."],
        ),
    ],
)
def test_golden_pieces(name: str, text: str, pieces: list[str]) -> None:
    assert re.findall(PRETOKENIZERS[name], text) == pieces


def test_nfkc_folds_full_width_forms_and_none_keeps_them() -> None:
    assert normalizer("nfkc")("ＡＢＣ１２３ｶﾀｶﾅ") == "ABC123カタカナ"
    assert normalizer("none")("ＡＢＣ") == "ＡＢＣ"
