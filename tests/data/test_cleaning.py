import datasets
import numpy as np
import pytest

from llm_from_scratch.data.cleaning import clean, drop_masks, tokenize
from llm_from_scratch.data.config import CleaningConfig


@pytest.mark.parametrize(
    ("src_len", "tgt_len", "reason"),
    [
        (0, 5, "empty"),
        (5, 0, "empty"),
        (11, 3, "too_long"),  # too long wins over the ratio it also breaks
        (10, 10, None),  # exactly max_tokens is allowed
        (3, 10, "length_ratio"),
        (3, 9, None),  # exactly the maximum ratio is allowed
    ],
)
def test_each_pair_is_charged_to_the_first_reason_that_applies(src_len, tgt_len, reason):
    cfg = CleaningConfig(max_tokens=10, max_length_ratio=3.0)
    masks = drop_masks(np.array([src_len]), np.array([tgt_len]), cfg)
    assert [name for name, mask in masks.items() if mask[0]] == ([reason] if reason else [])


def test_tokenize_normalizes_strips_and_records_lengths(word_tokenizer):
    pairs = datasets.Dataset.from_dict({"src": ["  two words ", "　"], "tgt": ["ｏｎｅ", "a b c"]})
    tokenized = tokenize(pairs, word_tokenizer, word_tokenizer)
    assert list(tokenized["src_len"]) == [2, 0]  # the full-width space normalizes to nothing
    assert list(tokenized["tgt_len"]) == [1, 3]
    assert tokenized[0]["tgt_ids"] == word_tokenizer.encode_batch(["one"])[0]


def test_clean_drops_and_reports_each_reason_and_keeps_the_rest_in_order(word_tokenizer):
    pairs = datasets.Dataset.from_dict(
        {
            "src": ["keep me", "", "w " * 20, "a", "fine pair here"],
            "tgt": ["ok ok", "x", "y", "b c d e", "ok"],
        }
    )
    cfg = CleaningConfig(max_tokens=10, max_length_ratio=3.0)
    kept, report = clean(tokenize(pairs, word_tokenizer, word_tokenizer), cfg, "train")
    assert list(kept["src"]) == ["keep me", "fine pair here"]
    assert report.dropped == {"empty": 1, "too_long": 1, "length_ratio": 1}
    assert (report.total, report.kept) == (5, 2)
    assert report.summary().startswith("train: kept 2 of 5 pairs")
