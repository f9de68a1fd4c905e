import dataclasses
import shutil
from dataclasses import is_dataclass
from pathlib import Path

import pytest
import torch

from llm_from_scratch.data import cleaning
from llm_from_scratch.data.batch import Batch
from llm_from_scratch.data.batching import batch_cost
from llm_from_scratch.data.config import (
    CleaningConfig,
    CorpusConfig,
    DataConfig,
    ExtraPairs,
    LoadingConfig,
)
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.datamodule import DataModule, cache_key, prepare_splits
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import PathsConfig
from tests.settings import DATA_VALUES, other_value

SPLITS = ("train", "dev", "test")
FIXTURES = Path(__file__).parent / "fixtures"


def module(cfg, tok, paths):
    raw = {split: load_split(cfg, split, paths) for split in SPLITS}
    splits, report = prepare_splits(cfg, raw, tok, tok, paths)
    return DataModule(cfg, tok, tok, splits, report)


@pytest.mark.slow
def test_train_split_is_cleaned_and_held_out_splits_are_kept_whole(
    tiny_enja, tiny_paths, word_tokenizer
):
    tiny_enja.cleaning.max_tokens = 6  # drops the longer training pairs
    data = module(tiny_enja, word_tokenizer, tiny_paths)
    train = data.splits["train"]
    assert data.report.total == 12 and 0 < data.report.kept == len(train) < 12
    assert max(list(train["src_len"]) + list(train["tgt_len"])) <= 6
    assert list(train["index"]) == list(range(len(train)))
    assert [len(data.splits[s]) for s in ("dev", "test")] == [3, 2]


@pytest.mark.slow  # over 5 s on 2 cores
def test_second_preparation_is_read_from_the_cache(tiny_enja, tiny_paths, word_tokenizer):
    first = module(tiny_enja, word_tokenizer, tiny_paths)
    encoded = word_tokenizer.encoded_texts
    second = module(tiny_enja, word_tokenizer, tiny_paths)
    assert word_tokenizer.encoded_texts == encoded  # nothing re-tokenized
    assert second.splits["train"].to_dict() == first.splits["train"].to_dict()
    assert second.report == first.report


SECTIONS = {"corpus": CorpusConfig, "cleaning": CleaningConfig, "loading": LoadingConfig}


def section_fields(*sections: str) -> list:
    return [
        pytest.param(section, field.name, id=f"{section}.{field.name}")
        for section in sections
        for field in dataclasses.fields(SECTIONS[section])
    ]


def changed(cfg: DataConfig, section: str, name: str) -> DataConfig:
    """`cfg` with `<section>.<name>` set to another valid value."""
    old = getattr(cfg, section)
    value = other_value(DATA_VALUES, section, name, getattr(old, name))
    return dataclasses.replace(cfg, **{section: dataclasses.replace(old, **{name: value})})


def test_the_sections_are_the_nested_dataclasses_of_data_config(tiny_enja):
    nested = {
        f.name for f in dataclasses.fields(DataConfig) if is_dataclass(getattr(tiny_enja, f.name))
    }
    assert nested == set(SECTIONS) == set(DATA_VALUES)
    assert all(isinstance(getattr(tiny_enja, name), SECTIONS[name]) for name in SECTIONS)


@pytest.mark.parametrize(("section", "name"), section_fields("corpus", "cleaning"))
def test_every_corpus_and_cleaning_field_changes_the_cache_key(
    section, name, tiny_enja, tiny_paths, word_tokenizer
):
    key = cache_key(tiny_enja, word_tokenizer, word_tokenizer, tiny_paths)
    other = changed(tiny_enja, section, name)
    assert cache_key(other, word_tokenizer, word_tokenizer, tiny_paths) != key


@pytest.mark.parametrize(("section", "name"), section_fields("loading"))
def test_no_loading_field_changes_the_cache_key(
    section, name, tiny_enja, tiny_paths, word_tokenizer
):
    key = cache_key(tiny_enja, word_tokenizer, word_tokenizer, tiny_paths)
    other = changed(tiny_enja, section, name)
    assert cache_key(other, word_tokenizer, word_tokenizer, tiny_paths) == key


def test_dataset_name_and_extra_train_change_the_cache_key(tiny_enja, tmp_path, word_tokenizer):
    # Two identical copies of the raw files (copytree keeps their times), so that only the
    # name itself can tell the keys apart.
    raw = tmp_path / "raw"
    for name in ("tiny_enja", "tiny_enja_copy"):
        shutil.copytree(FIXTURES / "tiny_enja", raw / name)
    paths = PathsConfig(root=str(tmp_path), raw_dir=str(raw), cache_dir=str(tmp_path / "cache"))
    key = cache_key(tiny_enja, word_tokenizer, word_tokenizer, paths)
    renamed = dataclasses.replace(tiny_enja, name="tiny_enja_copy")
    assert cache_key(renamed, word_tokenizer, word_tokenizer, paths) != key

    (tmp_path / "extra.en").write_text("ok .\n")
    (tmp_path / "extra.ja").write_text("はい 。\n")
    extra = [ExtraPairs(str(tmp_path / "extra.en"), str(tmp_path / "extra.ja"))]
    with_extra = dataclasses.replace(tiny_enja, extra_train=extra)
    assert cache_key(with_extra, word_tokenizer, word_tokenizer, paths) != key


def test_cache_key_changes_with_the_tokenizers(tiny_enja, tiny_paths, word_tokenizer):
    key = cache_key(tiny_enja, word_tokenizer, word_tokenizer, tiny_paths)
    other = type(word_tokenizer)()
    other.hash = "word-tokenizer-v2"
    assert cache_key(tiny_enja, word_tokenizer, other, tiny_paths) != key


def test_train_loader_yields_batches_within_budget_covering_the_split(
    tiny_enja, tiny_paths, word_tokenizer
):
    data = module(tiny_enja, word_tokenizer, tiny_paths)
    batches = list(data.train_loader(epoch=0))
    assert all(isinstance(b, Batch) for b in batches)
    budget = tiny_enja.loading.batch_tokens
    for b in batches:
        assert b.src.shape[0] * (b.src.shape[1] + b.tgt_in.shape[1]) <= budget
    seen = torch.cat([b.indices for b in batches]).sort().values
    assert seen.tolist() == list(range(len(data.splits["train"])))
    resumed = list(data.train_loader(epoch=0, start_batch=1))
    assert [b.indices.tolist() for b in resumed] == [b.indices.tolist() for b in batches[1:]]


@pytest.mark.slow  # over 5 s on 2 cores
def test_eval_loader_indices_point_back_at_the_references(tiny_enja, tiny_paths, word_tokenizer):
    data = module(tiny_enja, word_tokenizer, tiny_paths)
    dev = data.splits["dev"]
    for batch in data.eval_loader("dev"):
        for row, index in enumerate(batch.indices.tolist()):
            expected = word_tokenizer.encode_batch([dev[index]["tgt"]])[0] + [word_tokenizer.eos_id]
            assert batch.tgt_out[row][batch.tgt_mask[row]].tolist() == expected


@pytest.mark.slow
def test_loaders_pin_memory_only_for_cuda(tiny_enja, tiny_paths, word_tokenizer):
    data = module(tiny_enja, word_tokenizer, tiny_paths)
    assert data.train_loader(0, device="cuda").pin_memory
    assert not data.eval_loader("dev", device="cpu").pin_memory


def test_batch_cost_counts_specials_on_both_sides():
    assert batch_cost([3, 5], [4, 1]) == 2 * (5 + 1 + 4 + 1)


def test_cleaning_away_every_training_pair_is_a_clear_error(tiny_enja, tiny_paths, word_tokenizer):
    tiny_enja.cleaning.max_tokens = 1
    with pytest.raises(UserError, match=r"dropped every training pair .*kept 0 of 12"):
        module(tiny_enja, word_tokenizer, tiny_paths)


@pytest.mark.slow  # a process pool: seconds to start, more at times under a loaded suite
def test_tokenizing_in_two_processes_gives_the_same_splits(
    tiny_enja, tiny_paths, word_tokenizer, tmp_path, monkeypatch
):
    monkeypatch.setattr(cleaning, "MIN_PAIRS_PER_PROCESS", 1)  # the fixture is tiny
    single_cfg = dataclasses.replace(tiny_enja, loading=LoadingConfig(num_proc=1))
    single = module(single_cfg, word_tokenizer, tiny_paths)
    two_procs = dataclasses.replace(tiny_enja.loading, num_proc=2)
    parallel_cfg = dataclasses.replace(tiny_enja, loading=two_procs)
    parallel_paths = dataclasses.replace(tiny_paths, cache_dir=str(tmp_path / "two"))
    parallel = module(parallel_cfg, word_tokenizer, parallel_paths)
    for split in SPLITS:
        assert parallel.splits[split].to_dict() == single.splits[split].to_dict()


@pytest.mark.slow
def test_a_corpus_without_a_test_split_is_prepared_and_read_back(
    tiny_enja, tiny_paths, word_tokenizer
):
    """A pool carved into train and dev only (test_fraction 0): `datasets` saves its empty
    test split without a data file, which must still open, built and from the cache."""
    raw = {split: load_split(tiny_enja, split, tiny_paths) for split in SPLITS}
    raw["test"] = raw["test"].select([])
    for _ in ("built", "cached"):
        splits, _ = prepare_splits(tiny_enja, raw, word_tokenizer, word_tokenizer, tiny_paths)
        assert len(splits["test"]) == 0 and len(splits["dev"]) == 3
        assert splits["test"].features == splits["dev"].features
