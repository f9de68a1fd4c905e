"""A fixture data mirror: small files of each corpus in its own format and file names, laid out as
DATA_MIRROR is (`<mirror>/<corpus name>/<file>`), so that a run fetches them as it would the real
corpora. A fixture cannot match the real files' sizes and checksums, so `without_checksums` drops
them from a composed config's files, which is all it changes."""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import hashlib
import io
import json
import lzma
import random
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path

import datasets

from llm_from_scratch.data.back_translation import tagged
from llm_from_scratch.data.config import CorpusSource, DataConfig, DataFile

# Words and their translations; a sentence is a few of them, so a sentence's tokens are few.
LEXICON = {
    "the cat": "猫",
    "a dog": "犬",
    "my friend": "友達",
    "the teacher": "先生",
    "Kyoto": "京都",
    "the river": "川",
    "a book": "本",
    "the station": "駅",
    "tea": "お茶",
    "the city": "町",
    "walks": "歩く",
    "reads": "読む",
    "sees": "見る",
    "likes": "好き",
    "today": "今日",
    "quickly": "速く",
}
PAIRS = {"train": 60, "dev": 8, "test": 3}  # per file; a carved dev or test takes train's share
GROUP_SIZE = 5  # pairs per document of a grouped corpus (carved document by document)
# A file name ending in one of these is written compressed, as the corpus reader expects.
COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".xz": lzma.compress,
    ".bz2": bz2.compress,
}


def fixture_pairs(corpus: str, split: str, count: int) -> list[tuple[str, str]]:
    """`count` (English, Japanese) pairs, seeded by corpus and split so that no two corpora or
    splits share many; one in four holds a number both sides write."""
    rng = random.Random(f"{corpus}/{split}")
    pairs = []
    for index in range(count):
        words = rng.sample(list(LEXICON), rng.randint(2, 5))
        english, japanese = " ".join(words), "".join(LEXICON[word] for word in words)
        if index % 4 == 0:
            english, japanese = f"{english} {index + 2}", f"{japanese}{index + 2}"
        pairs.append((f"{english[0].upper()}{english[1:]}.", f"{japanese}。"))
    return pairs


def write_fixture_mirror(
    members: list[CorpusSource], mirror: Path, raw_dir: Path | None = None
) -> None:
    """Write each corpus of `members` into `mirror` as its config says it lies: its split files
    (parallel, tsv, jsonl, monolingual, compressed by extension), its archive, or its
    `save_to_disk` copy. A derived corpus, which no mirror holds, goes where back-translation
    writes it, in `raw_dir`, its sources tagged."""
    for member in members:
        if member.source == "derived":
            assert raw_dir is not None, f"{member.name} is derived: give raw_dir"
            directory = raw_dir / member.name
        else:
            directory = mirror / member.name
        directory.mkdir(parents=True, exist_ok=True)
        texts = {
            location: fixture_pairs(member.name, split, PAIRS[split])
            for split, location in member.corpus.splits.items()
            if location
        }
        if member.source == "derived":
            texts = {
                location: [(tagged(english), japanese) for english, japanese in pairs]
                for location, pairs in texts.items()
            }
        if member.corpus.format == "hub":
            hub_splits = {
                location: datasets.Dataset.from_dict(_columns(member, pairs))
                for location, pairs in texts.items()
            }
            datasets.DatasetDict(hub_splits).save_to_disk(str(directory))
            continue
        files = {
            name: data
            for location, pairs in texts.items()
            for name, data in _split_files(member, location, pairs).items()
        }
        if member.source == "archive":
            assert member.archive is not None
            build_archive(directory / member.archive.name, files)
        else:
            for name, data in files.items():
                (directory / name).parent.mkdir(parents=True, exist_ok=True)
                (directory / name).write_bytes(data)


def without_checksums(data: DataConfig, mirror: Path) -> DataConfig:
    """`data` with each corpus read from `mirror`, its files' (and archive's) sizes and checksums
    dropped: nothing else of the composed config changes."""

    def unchecked(file: DataFile) -> DataFile:
        return dataclasses.replace(file, bytes=None, sha256=None, sha1=None)

    def fixture_source(corpus: CorpusSource) -> dict:
        archive = corpus.archive and unchecked(corpus.archive)
        return {"files": [unchecked(f) for f in corpus.files], "archive": archive}

    if not data.mixture:
        return dataclasses.replace(data, mirror=str(mirror), **fixture_source(data))
    mixture = {
        key: dataclasses.replace(member, mirror=str(mirror), **fixture_source(member))
        for key, member in data.mixture.items()
    }
    return dataclasses.replace(data, mixture=mixture)


def _columns(member: CorpusSource, pairs: list[tuple[str, str]]) -> dict[str, list]:
    columns: dict[str, list] = {
        member.corpus.src_column: [english for english, _ in pairs],
        member.corpus.tgt_column: [japanese for _, japanese in pairs],
    }
    if member.corpus.group_column:
        columns[member.corpus.group_column] = [
            f"doc{index // GROUP_SIZE}" for index in range(len(pairs))
        ]
    return columns


def _split_files(
    member: CorpusSource, location: str, pairs: list[tuple[str, str]]
) -> dict[str, bytes]:
    """The files of one split, named as `member.corpus.splits` names them."""
    corpus = member.corpus
    if corpus.format == "parallel":
        sides = {corpus.src_lang: 0, corpus.tgt_lang: 1}
        files: dict[str, bytes] = {}
        for lang, side in sides.items():
            files |= _file(corpus.side_file(location, lang), (pair[side] for pair in pairs))
        return files
    if corpus.format == "tsv":
        return _file(location, (f"{english}\t{japanese}" for english, japanese in pairs))
    if corpus.format == "monolingual":
        return _file(corpus.side_file(location, corpus.tgt_lang), (pair[1] for pair in pairs))
    columns = _columns(member, pairs)
    rows = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
    return _file(location, (json.dumps(row, ensure_ascii=False) for row in rows))


def _file(name: str, texts: Iterable[str]) -> dict[str, bytes]:
    """The file `name` holding `texts` a line each, compressed where its name says so."""
    data = "".join(f"{text}\n" for text in texts).encode()
    compress = COMPRESSORS.get(Path(name).suffix)
    return {name: compress(data) if compress else data}


def build_archive(path: Path, members: dict[str, bytes]) -> str:
    """Write a tar.gz of `members` (name -> bytes); return its sha1."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha1(path.read_bytes()).hexdigest()
