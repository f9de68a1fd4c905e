"""A tokenized cache that cannot be used is rebuilt with one log line; a full disk while caching
is a one-line error; two runs sharing a fresh cache build it once."""

from __future__ import annotations

import errno
import json
import logging
import threading
from pathlib import Path

import datasets
import pytest

from llm_from_scratch.atomic import DiskFullError
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.datamodule import build_data, prepare_splits

SPLITS = ("train", "dev", "test")


def prepare(cfg, tok, paths):
    raw = {split: load_split(cfg, split, paths) for split in SPLITS}
    return prepare_splits(cfg, raw, tok, tok, paths)


def cache_dir(paths) -> Path:
    (directory,) = (Path(paths.cache_dir) / "tokenized").glob("tiny_enja-*")
    return directory


def truncate_arrow(directory: Path) -> None:
    (arrow,) = (directory / "train").glob("*.arrow")
    arrow.write_bytes(arrow.read_bytes()[: arrow.stat().st_size // 2])


def garble_arrow(directory: Path) -> None:
    (arrow,) = (directory / "train").glob("*.arrow")
    arrow.write_bytes(b"\xff" * arrow.stat().st_size)


def garble_state(directory: Path) -> None:
    (directory / "dev" / "state.json").write_text("{garbled")


def garble_report(directory: Path) -> None:
    (directory / "report.json").write_text(json.dumps({"split": "train", "total": "x"}))


DAMAGES = {
    truncate_arrow: "(train: ",
    garble_arrow: "(train: ",
    garble_state: "(dev: JSONDecodeError",
    garble_report: "(report.json: ",
}


@pytest.mark.slow  # over 5 s on 2 cores
@pytest.mark.parametrize("damage", list(DAMAGES), ids=lambda damage: damage.__name__)
def test_a_damaged_cache_is_rebuilt_with_one_log_line(
    tiny_enja, tiny_paths, word_tokenizer, caplog, damage
):
    first, report = prepare(tiny_enja, word_tokenizer, tiny_paths)
    expected = {split: data.to_dict() for split, data in first.items()}
    damage(cache_dir(tiny_paths))
    encoded = word_tokenizer.encoded_texts
    with caplog.at_level(logging.INFO, logger="llm_from_scratch.data.datamodule"):
        again, again_report = prepare(tiny_enja, word_tokenizer, tiny_paths)
    assert word_tokenizer.encoded_texts > encoded  # tokenized anew
    assert {split: data.to_dict() for split, data in again.items()} == expected
    assert again_report == report
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert warnings[0].startswith(f"the tokenized cache {cache_dir(tiny_paths)} cannot be used (")
    assert DAMAGES[damage] in warnings[0] and warnings[0].endswith("): rebuilding it")
    # and the rebuilt cache loads as it should
    caplog.clear()
    prepare(tiny_enja, word_tokenizer, tiny_paths)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_token_ids_outside_the_vocabulary_rebuild_the_cache(
    tiny_enja, tiny_paths, word_tokenizer, caplog, monkeypatch
):
    prepare(tiny_enja, word_tokenizer, tiny_paths)
    monkeypatch.setattr(type(word_tokenizer), "vocab_size", 10)  # same hash, smaller vocabulary
    with caplog.at_level(logging.WARNING, logger="llm_from_scratch.data.datamodule"):
        prepare(tiny_enja, word_tokenizer, tiny_paths)
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "src_ids run " in warning and "outside 0 to 9" in warning


@pytest.mark.slow  # over 5 s on 2 cores
def test_a_full_disk_while_saving_the_cache_is_one_line_and_leaves_nothing(
    tiny_enja, tiny_paths, word_tokenizer, monkeypatch
):
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(datasets.Dataset, "save_to_disk", full)
    with pytest.raises(DiskFullError) as error:
        prepare(tiny_enja, word_tokenizer, tiny_paths)
    message = str(error.value)
    assert message.startswith("cannot save the tokenized cache ") and "the disk is full" in message
    assert "\n" not in message
    tokenized = Path(tiny_paths.cache_dir) / "tokenized"
    assert [path.name for path in tokenized.iterdir() if not path.name.endswith(".lock")] == []


@pytest.mark.parametrize("where", ["reading", "mapping"])
def test_a_full_disk_in_datasets_own_cache_is_not_blamed_on_the_raw_files(
    tiny_enja, tiny_paths, word_tokenizer, monkeypatch, where
):
    def full(*args, **kwargs):
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as cause:
            if where == "mapping":
                raise
            raise datasets.exceptions.DatasetGenerationError("generating") from cause

    if where == "reading":
        monkeypatch.setattr(datasets, "load_dataset", full)
    else:
        monkeypatch.setattr(datasets.Dataset, "map", full)
    with pytest.raises(DiskFullError) as error:
        build_data(tiny_enja, word_tokenizer, word_tokenizer, tiny_paths)
    assert str(error.value).startswith(
        f"cannot write the data caches in {tiny_paths.cache_dir}: the disk is full ("
    )


@pytest.mark.slow
def test_two_runs_sharing_a_fresh_cache_tokenize_once(tiny_enja, tiny_paths, word_tokenizer):
    raw = {split: load_split(tiny_enja, split, tiny_paths) for split in SPLITS}
    results = []

    def run() -> None:
        results.append(prepare_splits(tiny_enja, raw, word_tokenizer, word_tokenizer, tiny_paths))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 2
    assert word_tokenizer.encoded_texts == sum(len(raw[split]) for split in SPLITS) * 2  # src, tgt
    assert results[0][0]["train"].to_dict() == results[1][0]["train"].to_dict()
