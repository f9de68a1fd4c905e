"""data=kftt: the official archive is downloaded, checked (sha1), extracted safely and read.

This machine has no internet, so the archive is built here, laid out as KFTT's, and fetched from
a file:// URL (or a mirror) in place of www.phontron.com.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.sources import DataSourceError, fetch_dataset
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig
from tests.data.fixture_mirror import build_archive

ORIG = "kftt-data-1.0/data/orig"
TEXTS = {
    "train": (["Kyoto is a city.", "Kinkaku-ji burned."], ["京都は市である。", "金閣寺は焼けた。"]),
    "dev": (["It burned in 1950."], ["1950年に焼失した。"]),
    "test": (["Tea is grown in Uji."], ["宇治では茶が栽培される。"]),
}  # fmt: skip


def kftt_members() -> dict[str, bytes]:
    members = {f"{ORIG.split('/')[0]}/README.md": b"KFTT\n"}
    for split, (en, ja) in TEXTS.items():
        members[f"{ORIG}/kyoto-{split}.en"] = "".join(t + "\n" for t in en).encode()
        members[f"{ORIG}/kyoto-{split}.ja"] = "".join(t + "\n" for t in ja).encode()
    return members


@pytest.fixture
def kftt(train_config, tmp_path, monkeypatch) -> tuple[DataConfig, PathsConfig]:
    """data=kftt as shipped, its archive URL and sha1 pointed at an archive built here."""
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    upstream = tmp_path / "upstream" / "kftt-data-1.0.tar.gz"
    upstream.parent.mkdir()
    sha1 = build_archive(upstream, kftt_members())
    config = train_config("experiment=kftt")
    assert config.tokenizer.vocab_size > 4000  # a vocabulary that holds KFTT's characters
    data = config.data
    data.archive = dataclasses.replace(data.archive, url=upstream.as_uri(), sha1=sha1)
    paths = PathsConfig(root=str(tmp_path), raw_dir=str(tmp_path / "raw"))
    return data, paths


def test_the_shipped_config_names_the_official_archive(train_config):
    data = train_config("data=kftt").data
    assert data.archive.url == "http://www.phontron.com/kftt/download/kftt-data-1.0.tar.gz"
    assert data.archive.sha1 == "0e1f5a9dc993b7d74ca6a0521232d17ce94c8cb4"
    assert data.corpus.file_names[:2] == [f"{ORIG}/kyoto-train.en", f"{ORIG}/kyoto-train.ja"]


def test_the_archive_is_downloaded_extracted_and_read(kftt):
    data, paths = kftt
    directory = fetch_dataset(data, paths)
    for split, (en, ja) in TEXTS.items():
        assert load_split(data, split, paths).to_dict() == {"src": en, "tgt": ja}
    assert sorted(p.name for p in directory.iterdir()) == ["kftt-data-1.0", "kftt-data-1.0.tar.gz"]
    Path(data.archive.url.removeprefix("file://")).unlink()
    fetch_dataset(data, paths)  # extracted: nothing is fetched again


def test_extracted_files_removed_are_extracted_again_from_the_kept_archive(kftt):
    data, paths = kftt
    directory = fetch_dataset(data, paths)
    (directory / ORIG / "kyoto-dev.ja").unlink()
    Path(data.archive.url.removeprefix("file://")).unlink()  # no second download
    fetch_dataset(data, paths)
    assert load_split(data, "dev", paths)["tgt"] == TEXTS["dev"][1]


def test_an_archive_copied_from_the_mirror(kftt, tmp_path, monkeypatch):
    data, paths = kftt
    mirror = tmp_path / "mirror"
    (mirror / "kftt").mkdir(parents=True)
    Path(data.archive.url.removeprefix("file://")).rename(mirror / "kftt" / data.archive.name)
    monkeypatch.setenv("DATA_MIRROR", str(mirror))
    fetch_dataset(data, paths)
    assert load_split(data, "test", paths)["src"] == TEXTS["test"][0]


def test_a_wrong_sha1_is_one_line_and_keeps_nothing(kftt):
    data, paths = kftt
    data.archive.sha1 = "0" * 40
    with pytest.raises(DataSourceError) as error:
        fetch_dataset(data, paths)
    message = str(error.value)
    assert "\n" not in message and "sha1 of kftt-data-1.0.tar.gz is " in message
    assert message.endswith(f"expected {'0' * 40}")
    assert list((Path(paths.raw_dir) / "kftt").iterdir()) == []


def test_a_member_outside_the_directory_is_refused(kftt, tmp_path):
    data, paths = kftt
    upstream = Path(data.archive.url.removeprefix("file://"))
    members = {**kftt_members(), "../escaped.txt": b"outside"}
    data.archive.sha1 = build_archive(upstream, members)
    with pytest.raises(DataSourceError, match=r"cannot be extracted: .*escaped\.txt"):
        fetch_dataset(data, paths)
    assert not (tmp_path / "raw" / "escaped.txt").exists()
    assert not list((tmp_path / "raw").rglob("escaped.txt"))
    assert not list((tmp_path / "raw" / "kftt").glob(".extracting.*"))


def test_a_file_that_is_no_archive_is_one_line(kftt):
    data, paths = kftt
    upstream = Path(data.archive.url.removeprefix("file://"))
    upstream.write_bytes(b"<html>moved</html>")
    data.archive.sha1 = hashlib.sha1(upstream.read_bytes()).hexdigest()
    with pytest.raises(DataSourceError) as error:
        fetch_dataset(data, paths)
    assert "\n" not in str(error.value)
    assert "kftt-data-1.0.tar.gz cannot be extracted: it is not a tar archive" in str(error.value)


def test_an_archive_without_a_split_file_names_it(kftt):
    data, paths = kftt
    upstream = Path(data.archive.url.removeprefix("file://"))
    members = {k: v for k, v in kftt_members().items() if not k.endswith("kyoto-test.ja")}
    data.archive.sha1 = build_archive(upstream, members)
    with pytest.raises(DataSourceError, match=rf"holds no {ORIG}/kyoto-test\.ja: data\.corpus"):
        fetch_dataset(data, paths)


def test_an_archive_source_needs_the_archive():
    with pytest.raises(ConfigError, match=r"data\.source=archive needs data\.archive"):
        DataConfig(name="kftt", source="archive")
