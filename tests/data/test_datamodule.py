import dataclasses

import pytest
import torch

from llm_from_scratch.data.batch import Batch
from llm_from_scratch.data.batching import batch_cost
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.datamodule import DataModule, cache_key, prepare_splits
from llm_from_scratch.errors import UserError

SPLITS = ("train", "dev", "test")


def module(cfg, tok):
    raw = {split: load_split(cfg, split) for split in SPLITS}
    splits, report = prepare_splits(cfg, raw, tok, tok)
    return DataModule(cfg, tok, tok, splits, report)


def test_train_split_is_cleaned_and_held_out_splits_are_kept_whole(tiny_enja, word_tokenizer):
    tiny_enja.max_tokens = 6  # drops the longer training pairs
    data = module(tiny_enja, word_tokenizer)
    train = data.splits["train"]
    assert data.report.total == 12 and 0 < data.report.kept == len(train) < 12
    assert max(list(train["src_len"]) + list(train["tgt_len"])) <= 6
    assert list(train["index"]) == list(range(len(train)))
    assert [len(data.splits[s]) for s in ("dev", "test")] == [3, 2]


def test_second_preparation_is_read_from_the_cache(tiny_enja, word_tokenizer):
    first = module(tiny_enja, word_tokenizer)
    encoded = word_tokenizer.encoded_texts
    second = module(tiny_enja, word_tokenizer)
    assert word_tokenizer.encoded_texts == encoded  # nothing re-tokenized
    assert second.splits["train"].to_dict() == first.splits["train"].to_dict()
    assert second.report == first.report


def test_cache_key_changes_with_content_settings_and_not_with_batching(tiny_enja, word_tokenizer):
    key = cache_key(tiny_enja, word_tokenizer, word_tokenizer)
    for change in ({"max_tokens": 11}, {"detokenize_ja": False}, {"split_seed": 7}):
        changed = dataclasses.replace(tiny_enja, **change)
        assert cache_key(changed, word_tokenizer, word_tokenizer) != key
    for change in ({"batch_tokens": 128}, {"num_proc": 2}):
        changed = dataclasses.replace(tiny_enja, **change)
        assert cache_key(changed, word_tokenizer, word_tokenizer) == key


def test_train_loader_yields_batches_within_budget_covering_the_split(tiny_enja, word_tokenizer):
    data = module(tiny_enja, word_tokenizer)
    batches = list(data.train_loader(epoch=0))
    assert all(isinstance(b, Batch) for b in batches)
    for b in batches:
        assert b.src.shape[0] * (b.src.shape[1] + b.tgt_in.shape[1]) <= tiny_enja.batch_tokens
    seen = torch.cat([b.indices for b in batches]).sort().values
    assert seen.tolist() == list(range(len(data.splits["train"])))
    resumed = list(data.train_loader(epoch=0, start_batch=1))
    assert [b.indices.tolist() for b in resumed] == [b.indices.tolist() for b in batches[1:]]


def test_eval_loader_indices_point_back_at_the_references(tiny_enja, word_tokenizer):
    data = module(tiny_enja, word_tokenizer)
    dev = data.splits["dev"]
    for batch in data.eval_loader("dev"):
        for row, index in enumerate(batch.indices.tolist()):
            expected = word_tokenizer.encode_batch([dev[index]["tgt"]])[0] + [word_tokenizer.eos_id]
            assert batch.tgt_out[row][batch.tgt_mask[row]].tolist() == expected


def test_loaders_pin_memory_only_for_cuda(tiny_enja, word_tokenizer):
    data = module(tiny_enja, word_tokenizer)
    assert data.train_loader(0, device="cuda").pin_memory
    assert not data.eval_loader("dev", device="cpu").pin_memory


def test_batch_cost_counts_specials_on_both_sides():
    assert batch_cost([3, 5], [4, 1]) == 2 * (5 + 1 + 4 + 1)


def test_cleaning_away_every_training_pair_is_a_clear_error(tiny_enja, word_tokenizer):
    tiny_enja.max_tokens = 1
    with pytest.raises(UserError, match=r"dropped every training pair .*kept 0 of 12"):
        module(tiny_enja, word_tokenizer)


def test_tokenizing_in_two_processes_gives_the_same_splits(tiny_enja, word_tokenizer, tmp_path):
    single = module(tiny_enja, word_tokenizer)
    parallel_cfg = dataclasses.replace(tiny_enja, num_proc=2, cache_dir=str(tmp_path / "two"))
    parallel = module(parallel_cfg, word_tokenizer)
    for split in SPLITS:
        assert parallel.splits[split].to_dict() == single.splits[split].to_dict()
