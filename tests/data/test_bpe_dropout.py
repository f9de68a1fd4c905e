"""BPE-dropout in the training loader: exact text, reproducible and resumable, bounded length."""

from __future__ import annotations

import pytest
import torch

from llm_from_scratch.data.batch import Batch, BPEDropout
from llm_from_scratch.data.cleaning import column
from llm_from_scratch.data.datamodule import DataModule, build_data
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers


@pytest.fixture
def data(tiny_enja, tiny_paths) -> DataModule:
    # Several batches, so that resuming at the second one skips something.
    tiny_enja.cleaning.max_tokens, tiny_enja.cleaning.max_length_ratio = 40, 9.0
    tiny_enja.loading.batch_tokens, tiny_enja.loading.bpe_dropout = 128, 0.3
    tokenizers = load_or_train_tokenizers(tiny_enja, TokenizerConfig(vocab_size=400), tiny_paths)
    return build_data(tiny_enja, *tokenizers, tiny_paths)


def rows_of(batches: list[Batch]) -> dict[int, tuple[list[int], list[int]]]:
    """index -> (source ids with EOS, target ids with EOS), the padding removed."""
    rows = {}
    for batch in batches:
        for row, index in enumerate(batch.indices.tolist()):
            src = batch.src[row][batch.src_mask[row]].tolist()
            rows[index] = (src, batch.tgt_out[row][batch.tgt_mask[row]].tolist())
    return rows


def test_resampled_pairs_decode_to_their_text_and_differ_from_the_cache(data):
    train = data.splits["train"]
    rows = rows_of(list(data.train_loader(epoch=0)))
    assert len(rows) == len(train)
    changed = 0
    for index, (src, tgt) in rows.items():
        assert data.src_tok.decode(src[:-1]) == data.src_tok.normalize(train[index]["src"])
        assert data.tgt_tok.decode(tgt[:-1]) == data.tgt_tok.normalize(train[index]["tgt"])
        changed += (src[:-1], tgt[:-1]) != (train[index]["src_ids"], train[index]["tgt_ids"])
    assert changed > len(train) // 2


def test_an_epoch_is_reproducible_and_resumable_and_the_next_one_differs(data):
    epoch0 = list(data.train_loader(epoch=0))
    again = list(data.train_loader(epoch=0))
    assert all(torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)
               for a, b in zip(epoch0, again, strict=True))  # fmt: skip
    resumed = list(data.train_loader(epoch=0, start_batch=1))
    assert 0 < len(resumed) < len(epoch0)
    resumed_rows, epoch0_rows = rows_of(resumed), rows_of(epoch0)
    assert resumed_rows == {i: epoch0_rows[i] for i in resumed_rows}
    assert rows_of(list(data.train_loader(epoch=1))) != rows_of(epoch0)


def test_batches_are_planned_on_the_resampled_lengths(data):
    # Planned on the cached lengths, the same batches held the longer samples and overran it.
    budget = data.cfg.loading.batch_tokens
    batches = list(data.train_loader(epoch=0))
    for batch in batches:
        assert batch.src.numel() + batch.tgt_in.numel() <= budget or len(batch.indices) == 1
    cached = column(data.splits["train"], "src_len") + column(data.splits["train"], "tgt_len")
    resampled = {i: len(src) + len(tgt) - 2 for i, (src, tgt) in rows_of(batches).items()}
    assert sum(resampled.values()) > cached.sum()  # the samples are longer than the cache


def test_a_sample_over_max_tokens_keeps_the_cached_ids(data):
    row = dict(data.splits["train"][0])
    cached_length = max(len(row["src_ids"]), len(row["tgt_ids"]))
    bounded = BPEDropout(rate=1.0, seed=0, epoch=0, max_tokens=cached_length)
    assert bounded.resample(row, data.src_tok, data.tgt_tok) == row  # characters are longer
    loose = BPEDropout(rate=1.0, seed=0, epoch=0, max_tokens=1000)
    assert len(loose.resample(row, data.src_tok, data.tgt_tok)["src_ids"]) > cached_length


def test_without_bpe_dropout_the_loader_serves_the_cached_ids(data):
    data.cfg.loading.bpe_dropout = 0.0
    train = data.splits["train"]
    for index, (src, tgt) in rows_of(list(data.train_loader(epoch=0))).items():
        assert (src[:-1], tgt[:-1]) == (train[index]["src_ids"], train[index]["tgt_ids"])
