"""Every corpus a shipped config names has a source a fresh clone can fetch it from: a URL with a
checksum for every file (or for its archive), a Hugging Face dataset id, or a mirror folder that
holds every file it lists (the data mirror, `DATA_MIRROR`, or one inside the project). A mixture
reads no files of its own: each of its members is checked. And the fixture mirror that
tests/training/test_shipped_experiments.py trains on is fetched and read for every data config,
from an empty raw directory."""

from __future__ import annotations

import pytest

from llm_from_scratch.data.config import (
    SPLITS,
    CorpusConfig,
    CorpusSource,
    DataConfig,
    DataFile,
    MixtureMember,
)
from llm_from_scratch.data.corpus import load_splits, read_monolingual
from llm_from_scratch.data.sources import fetch_data, mirror_dir
from llm_from_scratch.paths import PathsConfig, project_root
from tests.data.fixture_mirror import without_checksums, write_fixture_mirror

CONFIGS = project_root() / "configs"
EXPERIMENTS = sorted(path.stem for path in (CONFIGS / "experiment").glob("*.yaml"))
DATA_CONFIGS = sorted(path.stem for path in (CONFIGS / "data").glob("*.yaml"))
SHIPPED = [f"experiment={name}" for name in EXPERIMENTS] + [f"data={name}" for name in DATA_CONFIGS]
# The one exemption: configs/data/local_*.yaml are templates for the user's own corpus, which the
# user brings (README, Your own data). They list no files, so there is nothing to fetch.
USER_DATA_TEMPLATE_PREFIX = "local_"
ANY_SHA256 = "0" * 64


def is_user_data_template(override: str) -> bool:
    """Whether `override` picks a user-data template (`data=local_tsv`)."""
    return override.startswith(f"data={USER_DATA_TEMPLATE_PREFIX}")


def source_problems(corpus: CorpusSource) -> list[str]:
    """Why a fresh clone could not fetch `corpus`; none where it has a source."""
    name = corpus.name
    if corpus.source == "derived":  # written by back-translation from a corpus checked itself
        return []
    if corpus.source == "name_dictionary":  # written from the installed name dictionary
        return []
    if corpus.source == "hub":
        return [] if corpus.hub_id else [f"{name}: source=hub with no hub_id"]
    if corpus.source == "archive":
        assert corpus.archive is not None  # CorpusSource.check_source refuses one without
        return download_problems(name, [corpus.archive])
    if not corpus.files:
        return [f"{name}: lists no files (only configs/data/local_*.yaml templates may)"]
    if corpus.source == "urls":
        return download_problems(name, corpus.files)
    return mirror_problems(corpus, corpus.files)


def download_problems(name: str, files: list[DataFile]) -> list[str]:
    """A download needs a URL, and a checksum to verify what arrived."""
    return [
        f"{name}/{file.name}: no url" if not file.url else f"{name}/{file.name}: no checksum"
        for file in files
        if not (file.url and (file.sha256 or file.sha1))
    ]


def mirror_problems(corpus: CorpusSource, files: list[DataFile]) -> list[str]:
    """A local corpus is copied from its mirror folder, which must hold every file it lists (of
    the size listed: the copy's checksum is verified when it is fetched)."""
    folder = mirror_dir(corpus)
    if folder is None:
        return [f"{corpus.name}: source=local, and neither data.mirror nor DATA_MIRROR is set"]
    problems = []
    for file in files:
        path = folder / file.name
        if not path.is_file():
            problems.append(f"{corpus.name}/{file.name}: not in the mirror {folder}")
        elif file.bytes is not None and path.stat().st_size != file.bytes:
            problems.append(
                f"{corpus.name}/{file.name}: {path.stat().st_size} bytes in the mirror, "
                f"{file.bytes} listed"
            )
    return problems


@pytest.mark.parametrize("override", SHIPPED)
def test_every_corpus_a_shipped_config_names_has_a_source(override, train_config):
    data = train_config(override).data
    if is_user_data_template(override):
        assert (data.source, data.files, data.mixture) == ("local", [], {})
        return
    # Without DATA_MIRROR (CI sets it) the mirror's corpora cannot be checked; the others are.
    unchecked = [m.name for m in data.members if m.source == "local" and mirror_dir(m) is None]
    checked = [member for member in data.members if member.name not in unchecked]
    assert [problem for member in checked for problem in source_problems(member)] == []
    if unchecked:
        pytest.skip(f"DATA_MIRROR is not set: {', '.join(unchecked)} not checked")


def test_a_corpus_inside_the_project_is_read_from_its_own_files(train_config, monkeypatch):
    monkeypatch.delenv("DATA_MIRROR", raising=False)  # needs no mirror: its files are shipped
    everyday = train_config("data=everyday").data
    folder = mirror_dir(everyday)
    assert folder is not None and folder.is_relative_to(project_root())
    assert source_problems(everyday) == []


def local(name: str, *files: DataFile) -> DataConfig:
    corpus = CorpusConfig(format="tsv", splits={"train": "train.tsv"})
    return DataConfig(name=name, source="local", files=list(files), corpus=corpus)


@pytest.mark.parametrize(
    ("corpus", "problem"),
    [
        (
            DataConfig(name="news", files=[DataFile("train.en", url="https://x.org/train.en")]),
            "news/train.en: no checksum",
        ),
        (
            DataConfig(
                name="kftt2",
                source="archive",
                archive=DataFile("kftt2.tar.gz", url="https://x.org/kftt2.tar.gz"),
            ),
            "kftt2/kftt2.tar.gz: no checksum",
        ),
        (local("mine"), "mine: lists no files"),
        (local("unmirrored", DataFile("train.tsv", sha256=ANY_SHA256)), "not in the mirror"),
        (
            local("stale", DataFile("train.tsv", bytes=5, sha256=ANY_SHA256)),
            "3 bytes in the mirror, 5 listed",
        ),
    ],
    ids=["url-without-checksum", "archive-without-checksum", "no-files", "not-mirrored", "stale"],
)
def test_a_corpus_without_a_source_is_named(corpus, problem, tmp_path, monkeypatch):
    (tmp_path / "stale").mkdir()
    (tmp_path / "stale" / "train.tsv").write_text("a\tb")
    monkeypatch.setenv("DATA_MIRROR", str(tmp_path))
    problems = source_problems(corpus)
    assert len(problems) == 1 and problem in problems[0]


def test_a_local_corpus_with_no_mirror_set_is_named(monkeypatch):
    monkeypatch.delenv("DATA_MIRROR", raising=False)
    problems = source_problems(local("mirrorless", DataFile("train.tsv", sha256=ANY_SHA256)))
    assert problems == ["mirrorless: source=local, and neither data.mirror nor DATA_MIRROR is set"]


def test_a_mixture_is_checked_through_its_members(tmp_path):
    (tmp_path / "mirrored").mkdir()
    (tmp_path / "mirrored" / "train.tsv").write_text("a\tb\n")
    corpus = CorpusConfig(format="tsv", splits={"train": "train.tsv"})
    members = {
        name: MixtureMember(
            name=name, source="local", files=[DataFile("train.tsv")], mirror=str(tmp_path),
            corpus=corpus,
        )
        for name in ("mirrored", "new_corpus")
    }  # fmt: skip
    mixture = DataConfig(name="mix", source="local", mixture=members, corpus=corpus)
    assert not mixture.files  # reads no files of its own: its members do
    problems = [problem for member in mixture.members for problem in source_problems(member)]
    assert problems == [f"new_corpus/train.tsv: not in the mirror {tmp_path / 'new_corpus'}"]


@pytest.mark.slow
@pytest.mark.parametrize("name", DATA_CONFIGS)
def test_the_fixture_mirror_of_every_data_config_is_fetched_and_read(
    name, train_config, tmp_path, monkeypatch
):
    mirror = tmp_path / "mirror"
    monkeypatch.setenv("DATA_MIRROR", str(mirror))
    data = train_config(f"data={name}").data
    write_fixture_mirror(data.members, mirror, tmp_path / "raw")
    data = without_checksums(data, mirror)
    paths = PathsConfig(root=str(tmp_path), raw_dir=str(tmp_path / "raw"))
    fetched = fetch_data(data, paths)
    assert [directory.name for directory in fetched] == [member.name for member in data.members]
    if data.corpus.format == "monolingual":  # text to back-translate, no pairs
        assert read_monolingual(data, paths)
        return
    read = SPLITS if data.corpus.has_train else ("dev", "test")  # wmt_news: scored on only
    splits, _ = load_splits(data, paths, read)
    # A train-only corpus (news_ja_origin) carves no dev on purpose: a fraction of 0, no file.
    carved_to_nothing = {
        split
        for split in ("dev", "test")
        if not data.corpus.splits.get(split) and getattr(data.corpus, f"{split}_fraction") == 0
    }
    assert all(
        len(splits[split]) > 0 for split in read if split not in {"test", *carved_to_nothing}
    )
