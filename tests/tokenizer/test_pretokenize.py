"""Pre-tokenization: pieces cover the text exactly and fall where the script changes."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_from_scratch.tokenizer.pretokenize import (
    PRETOKENIZERS,
    SHIPPED_PATTERNS,
    normalizer,
    shipped_version,
)

ANY_STR = st.text(st.characters(blacklist_categories=()))  # surrogates and controls too


@pytest.mark.parametrize("key", sorted(SHIPPED_PATTERNS))
@given(text=ANY_STR)
def test_pieces_join_back_to_the_text(key: tuple[str, int], text: str) -> None:
    assert "".join(re.findall(SHIPPED_PATTERNS[key], text)) == text


@pytest.mark.parametrize(
    ("key", "text", "pieces"),
    [
        (("script", 1), "私はテニス部員です。", ["私", "は", "テニス", "部員", "です", "。"]),
        (("okurigana", 1), "私はテニス部員です。", ["私は", "テニス", "部員です", "。"]),
        (("okurigana", 1), "東京タワーへ行きました", ["東京", "タワー", "へ", "行きました"]),
        (("okurigana", 1), "2024年にCDを", ["2024", "年に", "CD", "を"]),
        (
            ("okurigana", 1),
            "Hello,  world! I don't\tknow 42.",
            ["Hello", ",", " ", " world", "!", " I", " don", "'t", "\t", "know", " 42", "."],
        ),
        # Version 2: the same, but every digit is a piece, a space before it one too.
        (("script", 2), "私はテニス部員です。", ["私", "は", "テニス", "部員", "です", "。"]),
        (("okurigana", 2), "私はテニス部員です。", ["私は", "テニス", "部員です", "。"]),
        (("okurigana", 2), "2024年にCDを", ["2", "0", "2", "4", "年に", "CD", "を"]),
        (("script", 2), "１，２００円", ["１", "，", "２", "０", "０", "円"]),
        (
            ("okurigana", 2),
            "I don't\tknow 42.",
            ["I", " don", "'t", "\t", "know", " ", "4", "2", "."],
        ),
        (
            ("okurigana", 2),
            "It costs 1,200.50 yen",
            ["It", " costs", " ", "1", ",", "2", "0", "0", ".", "5", "0", " yen"],
        ),
    ],
)
def test_golden_pieces(key: tuple[str, int], text: str, pieces: list[str]) -> None:
    assert re.findall(SHIPPED_PATTERNS[key], text) == pieces


def test_nfkc_folds_full_width_forms_and_none_keeps_them() -> None:
    assert normalizer("nfkc")("ＡＢＣ１２３ｶﾀｶﾅ") == "ABC123カタカナ"
    assert normalizer("none")("ＡＢＣ") == "ＡＢＣ"


# sha256 of each pattern as it shipped (git history of pretokenize.py): a shipped pattern never
# changes, or files trained with it would encode differently.
SHIPPED_DIGESTS = {
    ("script", 1): "5ea4936122a93e15a77813351fbf7c8cea6fdeb896cb76d0e10735ced7fa99f4",
    ("okurigana", 1): "71f8b062be16253734cec7b3b9179dfa4920e2741e2e47c19b61bf6223fe7d67",
    ("script", 2): "2212ca8f4deab3a2380ee73bc74d23c792c4af44a0f9c2378419e5d4c7a20076",
    ("okurigana", 2): "45c2a569b898fa2defd9120e7d26ac44910917827845a88f0ac6051b472edc48",
}


def test_every_shipped_pattern_is_kept_unchanged() -> None:
    digests = {
        key: hashlib.sha256(pattern.encode("utf-8")).hexdigest()
        for key, pattern in SHIPPED_PATTERNS.items()
    }
    assert {key: digests.get(key) for key in SHIPPED_DIGESTS} == SHIPPED_DIGESTS


def test_new_tokenizers_use_each_names_latest_version() -> None:
    for name, pattern in PRETOKENIZERS.items():
        latest = max(version for shipped, version in SHIPPED_PATTERNS if shipped == name)
        assert shipped_version(name, pattern) == latest
    assert shipped_version("okurigana", PRETOKENIZERS["script"]) is None
