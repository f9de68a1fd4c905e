"""Fetching raw files: file:// downloads, mirror copies, verification, and clear failures."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from llm_from_scratch.data.config import CorpusConfig, DataConfig, DataFile
from llm_from_scratch.data.sources import (
    DataSourceError,
    corpus_files,
    dataset_dir,
    download,
    fetch_dataset,
)
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.prepare_data import PrepareDataConfig
from llm_from_scratch.schema import to_schema

CONTENTS = {"train.en": b"hello .\nhow are you ?\n", "train.ja": "こんにちは 。\n元気 ?\n".encode()}


def describe(name: str, data: bytes, url: str | None = None) -> DataFile:
    return DataFile(name=name, url=url, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    """A directory standing in for the dataset's home on the web, reached with file:// URLs."""
    root = tmp_path / "upstream"
    root.mkdir()
    for name, data in CONTENTS.items():
        (root / name).write_bytes(data)
    return root


def url_config(upstream: Path, **changes) -> DataConfig:
    files = [describe(n, d, (upstream / n).as_uri()) for n, d in CONTENTS.items()]
    return DataConfig(name="toy", source="urls", files=files, **changes)


def raw_paths(raw_dir: Path) -> PathsConfig:
    return PathsConfig(root=str(raw_dir.parent), raw_dir=str(raw_dir))


def test_download_from_file_urls(upstream, tmp_path, monkeypatch):
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    cfg, paths = url_config(upstream), raw_paths(tmp_path / "raw")
    directory = fetch_dataset(cfg, paths)
    assert directory == tmp_path / "raw" / "toy"
    for name, data in CONTENTS.items():
        assert (directory / name).read_bytes() == data
    assert sorted(p.name for p in directory.iterdir()) == sorted(CONTENTS)  # no temp files left


def test_verified_files_are_not_fetched_again(upstream, tmp_path, monkeypatch):
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    cfg, paths = url_config(upstream), raw_paths(tmp_path / "raw")
    fetch_dataset(cfg, paths)
    for name in CONTENTS:
        (upstream / name).unlink()
    fetch_dataset(cfg, paths)  # would fail if it tried to download again


def test_the_log_says_what_is_fetched_and_nothing_once_it_is_there(
    upstream, tmp_path, monkeypatch, caplog
):
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    cfg, paths = url_config(upstream), raw_paths(tmp_path / "raw")
    with caplog.at_level("INFO", logger="llm_from_scratch.data.sources"):
        fetch_dataset(cfg, paths)
        assert caplog.messages == ["fetching toy: 2 files, downloading"]
        caplog.clear()
        fetch_dataset(cfg, paths)
        assert caplog.messages == []


def test_corrupt_local_copy_is_replaced(upstream, tmp_path, monkeypatch):
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    cfg, paths = url_config(upstream), raw_paths(tmp_path / "raw")
    directory = fetch_dataset(cfg, paths)
    (directory / "train.en").write_bytes(b"truncated")
    fetch_dataset(cfg, paths)
    assert (directory / "train.en").read_bytes() == CONTENTS["train.en"]


def test_size_mismatch_fails_and_leaves_nothing(upstream, tmp_path):
    expected = DataFile(name="train.en", bytes=999)
    destination = tmp_path / "out" / "train.en"
    with pytest.raises(DataSourceError, match=r"expected 999 bytes for train\.en, got 22"):
        download((upstream / "train.en").as_uri(), destination, expected)
    assert not destination.exists()
    assert list(destination.parent.iterdir()) == []


def test_checksum_mismatch_fails(upstream, tmp_path):
    expected = DataFile(name="train.en", sha256="0" * 64)
    with pytest.raises(DataSourceError, match=r"sha256 of train\.en"):
        download((upstream / "train.en").as_uri(), tmp_path / "train.en", expected)


def test_unreachable_url_names_data_mirror(tmp_path):
    with pytest.raises(DataSourceError, match="DATA_MIRROR"):
        download((tmp_path / "absent").as_uri(), tmp_path / "x")


def test_mirror_is_used_instead_of_urls(upstream, tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    for name, data in CONTENTS.items():
        (mirror / "toy" / name).write_bytes(data)
    monkeypatch.setenv("DATA_MIRROR", str(mirror))
    cfg = url_config(upstream)
    for name in CONTENTS:
        (upstream / name).unlink()  # only the mirror can supply them now
    directory = fetch_dataset(cfg, raw_paths(tmp_path / "raw"))
    assert (directory / "train.ja").read_bytes() == CONTENTS["train.ja"]


def test_config_mirror_overrides_environment(upstream, tmp_path, monkeypatch):
    monkeypatch.setenv("DATA_MIRROR", str(tmp_path / "nowhere"))
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    for name, data in CONTENTS.items():
        (mirror / "toy" / name).write_bytes(data)
    fetch_dataset(url_config(upstream, mirror=str(mirror)), raw_paths(tmp_path / "raw"))


def test_missing_mirror_file_names_data_mirror(upstream, tmp_path, monkeypatch):
    monkeypatch.setenv("DATA_MIRROR", str(tmp_path / "empty-mirror"))
    with pytest.raises(DataSourceError, match=r"DATA_MIRROR .* must point to .*toy/train\.en"):
        fetch_dataset(url_config(upstream), raw_paths(tmp_path / "raw"))


def test_local_only_dataset_without_mirror_names_data_mirror(tmp_path, monkeypatch):
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    cfg = DataConfig(name="derived", source="local", files=[DataFile(name="train.tsv")])
    with pytest.raises(DataSourceError, match=r"local-only.*DATA_MIRROR"):
        fetch_dataset(cfg, raw_paths(tmp_path))


def test_url_source_requires_urls():
    with pytest.raises(ConfigError, match=r"needs a url for every file.*train\.tsv"):
        DataConfig(name="x", source="urls", files=[DataFile(name="train.tsv")])


def test_hub_dataset_is_copied_from_mirror(tmp_path, monkeypatch):
    import datasets

    mirror = tmp_path / "mirror"
    pairs = {"en_sentence": ["Hello."], "ja_sentence": ["こんにちは。"]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(pairs)}).save_to_disk(
        str(mirror / "hubby")
    )
    monkeypatch.setenv("DATA_MIRROR", str(mirror))
    cfg = DataConfig(
        name="hubby", source="hub", hub_id="someone/hubby", corpus=CorpusConfig(format="hub")
    )
    directory = fetch_dataset(cfg, raw_paths(tmp_path))
    assert datasets.load_from_disk(str(directory))["train"]["ja_sentence"] == ["こんにちは。"]


def test_shipped_configs_match_the_corpus_mirror(compose_config, corpus_mirror, tmp_path):
    for name in ("small_parallel_enja", "tanaka_graded", "kyoto_wiki"):
        overrides = [f"data={name}", f"paths.raw_dir={tmp_path}", f"data.mirror={corpus_mirror}"]
        config = to_schema(compose_config("prepare_data", overrides), PrepareDataConfig)
        cfg = config.data
        directory = fetch_dataset(cfg, config.paths)
        assert directory == dataset_dir(cfg, config.paths) == tmp_path / name
        assert sorted(p.name for p in directory.iterdir()) == sorted(f.name for f in cfg.files)


def test_local_dataset_without_a_file_list_copies_the_files_its_splits_name(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "mine").mkdir(parents=True)
    for name in ("train.en", "train.ja", "dev.en", "dev.ja", "unrelated.txt"):
        (mirror / "mine" / name).write_text(name)
    monkeypatch.setenv("DATA_MIRROR", str(mirror))
    corpus = CorpusConfig(format="parallel", splits={"train": "train", "dev": "dev"})
    target = fetch_dataset(
        DataConfig(name="mine", source="local", corpus=corpus), raw_paths(tmp_path / "raw")
    )
    assert sorted(path.name for path in target.iterdir()) == [
        "dev.en", "dev.ja", "train.en", "train.ja",
    ]  # fmt: skip
    monkeypatch.delenv("DATA_MIRROR")
    (target / "dev.ja").unlink()
    with pytest.raises(DataSourceError, match=r"dev\.ja not found, .*put the file there"):
        fetch_dataset(
            DataConfig(name="mine", source="local", corpus=corpus), raw_paths(tmp_path / "raw")
        )


def test_a_corpus_is_read_where_fetched_else_from_the_mirror(tmp_path, monkeypatch):
    paths = raw_paths(tmp_path / "raw")
    mirrored = tmp_path / "mirror" / "news" / "train.ja.gz"
    mirrored.parent.mkdir(parents=True)
    mirrored.write_bytes(b"")
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    assert corpus_files("news", paths, "*.ja*") == []
    monkeypatch.setenv("DATA_MIRROR", str(tmp_path / "mirror"))
    assert corpus_files("news", paths, "*.ja*") == [mirrored]
    fetched = tmp_path / "raw" / "news" / "train.ja.gz"
    fetched.parent.mkdir(parents=True)
    fetched.write_bytes(b"")
    assert corpus_files("news", paths, "*.ja*") == [fetched]
    assert corpus_files("news", paths, "*.en*") == []
