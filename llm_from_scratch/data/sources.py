"""Fetch a dataset's raw files into `<paths.raw_dir>/<name>/`: download, or copy from a mirror.

A mirror is a directory laid out as `<mirror>/<dataset name>/<file>`; it is how machines without
internet access (and the tests) get the corpora. Every file is checked against the size and
checksum in its config after it arrives, and written atomically, so a partial download is never
mistaken for a complete one. An archive (`data.source=archive`) is verified the same way, then
extracted safely (no member may land outside the dataset directory) into a staging directory
whose entries are renamed into place.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from pathlib import Path

from tqdm import tqdm

from llm_from_scratch import name_dictionary
from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.data.config import CorpusSource, DataConfig, DataFile
from llm_from_scratch.data.name_pairs import write_name_pairs
from llm_from_scratch.errors import UserError
from llm_from_scratch.name_dictionary import dictionary_stamp, load_dictionary
from llm_from_scratch.paths import PathsConfig

# Names a directory holding a copy of the corpora, a folder each, read before any download.
MIRROR_VARIABLE = "DATA_MIRROR"

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20


class DataSourceError(UserError):
    """A dataset file cannot be fetched, copied or verified."""


def dataset_dir(cfg: CorpusSource, paths: PathsConfig) -> Path:
    """Where the raw files of `cfg` live once fetched."""
    return Path(paths.raw_dir) / cfg.name


def mirror_dir(cfg: CorpusSource) -> Path | None:
    """The mirror directory for `cfg` (`data.mirror`, else `$DATA_MIRROR`), or None."""
    mirror = cfg.mirror or os.environ.get(MIRROR_VARIABLE)
    return Path(mirror).expanduser() / cfg.name if mirror else None


def corpus_files(name: str, paths: PathsConfig, pattern: str) -> list[Path]:
    """The files matching `pattern` of the corpus called `name`, read where they lie: in its
    folder under `paths.raw_dir` once fetched, else in the data mirror's (`$DATA_MIRROR`); none
    where neither holds any."""
    mirror = os.environ.get(MIRROR_VARIABLE)
    folders = [Path(paths.raw_dir) / name, *([Path(mirror).expanduser() / name] if mirror else [])]
    for folder in folders:
        if found := sorted(folder.glob(pattern)):
            return found
    return []


def fetch_data(cfg: DataConfig, paths: PathsConfig) -> list[Path]:
    """Fetch every corpus `cfg` reads (a mixture's members, or its own); their directories."""
    return [fetch_dataset(corpus, paths) for corpus in cfg.members]


def fetch_dataset(cfg: CorpusSource, paths: PathsConfig) -> Path:
    """Make sure every raw file of `cfg` is present and verified; return the dataset directory."""
    target = dataset_dir(cfg, paths)
    mirror = mirror_dir(cfg)
    if cfg.source == "hub":
        _fetch_hub(cfg, target, mirror)
        return target
    if cfg.source == "derived":
        _check_derived(cfg, target)
        return target
    if cfg.source == "name_dictionary":
        _write_name_pairs(target)
        return target
    target.mkdir(parents=True, exist_ok=True)
    if cfg.source == "archive":
        _fetch_archive(cfg, target, mirror)
        return target
    # A local dataset may list no files (configs/data/local_*.yaml): its splits name them.
    listed = cfg.files or [DataFile(name) for name in cfg.corpus.file_names]
    missing = [
        file
        for file in listed
        if not ((target / file.name).is_file() and _matches(target / file.name, file))
    ]
    if missing:
        origin = f"copying from {mirror}" if mirror is not None else "downloading"
        files = f"{len(missing)} file" + ("s" if len(missing) > 1 else "")
        logger.info("fetching %s: %s, %s", cfg.name, files, origin)
    for file in missing:
        destination = target / file.name
        if mirror is not None:
            _copy_from_mirror(mirror / file.name, destination, file)
        elif file.url:
            download(file.url, destination, file)
        else:
            raise DataSourceError(
                f"{destination} not found, and the dataset is local-only (no download URL): put "
                f"the file there, or set DATA_MIRROR (or data.mirror) to a directory that holds "
                f"{cfg.name}/{file.name}"
            )
    return target


def _write_name_pairs(target: Path) -> None:
    """The name dictionary's pairs in `target` (data/name_pairs.py), written once."""
    dictionary = load_dictionary()
    if dictionary is None:
        files = ", ".join(str(path) for path in name_dictionary.DICTIONARY_FILES)
        raise DataSourceError(
            f"{target.name} is made from the name dictionary, which is not installed: {files} "
            "missing (apt-get install enamdict edict)"
        )
    if write_name_pairs(dictionary, target, dictionary_stamp()):
        logger.info("fetching %s: written from the name dictionary", target.name)


def _check_derived(cfg: CorpusSource, target: Path) -> None:
    """A derived corpus is written by this project, never fetched: refuse one not written yet."""
    for name in cfg.corpus.file_names:
        if not (target / name).is_file():
            raise DataSourceError(
                f"{target / name} not found: {cfg.name} is derived (data.source=derived), "
                f'written by back-translation: make back-translate ARGS="--run RUN --data '
                f'CORPUS --name {cfg.name}" (docs/data.md, Back-translation)'
            )


def download(url: str, destination: Path, expected: DataFile | None = None) -> None:
    """Stream `url` (http(s) or file://) to `destination` with a progress bar, then verify it."""
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length else None
            with (
                atomic_writer(destination) as out,
                tqdm(
                    total=total, unit="B", unit_scale=True, desc=destination.name, leave=False
                ) as progress,
            ):
                while chunk := response.read(CHUNK_BYTES):
                    out.write(chunk)
                    progress.update(len(chunk))
                out.flush()
                received = out.tell()
                if total is not None and received != total:
                    raise DataSourceError(
                        f"download of {url} stopped early: {received} of {total} bytes"
                    )
                if expected is not None:
                    _verify(Path(out.name), expected, origin=url)
    except (urllib.error.URLError, OSError) as error:
        raise DataSourceError(
            f"cannot download {url}: {error}. Without internet access, set DATA_MIRROR to a "
            "directory holding <dataset name>/<file> copies"
        ) from error


def _copy_from_mirror(source: Path, destination: Path, expected: DataFile) -> None:
    if not source.is_file():
        raise DataSourceError(
            f"{source} not found: DATA_MIRROR (or data.mirror) must point to a directory that "
            f"holds {source.parent.name}/{source.name}"
        )
    with source.open("rb") as src, atomic_writer(destination) as out:
        shutil.copyfileobj(src, out, CHUNK_BYTES)
        out.flush()
        _verify(Path(out.name), expected, origin=str(source))


def _fetch_archive(cfg: CorpusSource, target: Path, mirror: Path | None) -> None:
    """Fetch and verify `cfg.archive` into `target`, then extract it there."""
    assert cfg.archive is not None  # CorpusSource.check_source checks it
    wanted = [target / name for name in cfg.corpus.file_names]
    if all(path.is_file() for path in wanted):
        return
    archive = target / cfg.archive.name
    if not (archive.is_file() and _matches(archive, cfg.archive)):
        origin = f"copying it from {mirror}" if mirror is not None else "downloading it"
        logger.info("fetching %s: %s, %s", cfg.name, cfg.archive.name, origin)
        if mirror is not None:
            _copy_from_mirror(mirror / cfg.archive.name, archive, cfg.archive)
        else:
            download(cfg.archive.url, archive, cfg.archive)
    logger.info("extracting %s", archive)
    extract(archive, target)
    missing = [path for path in wanted if not path.is_file()]
    if missing:
        raise DataSourceError(
            f"{archive} holds no {missing[0].relative_to(target)}: data.corpus.splits must name "
            "files of the archive"
        )


def extract(archive: Path, directory: Path) -> None:
    """Extract the tar archive `archive` (compressed or not) into `directory`.

    tarfile's "data" filter refuses members that would land outside `directory` (absolute paths,
    `..`, links pointing out) and special files. Members are extracted into a staging directory
    first, so each top-level entry appears whole or not at all; one already there is replaced.
    """
    if not hasattr(tarfile, "data_filter"):
        raise DataSourceError(
            f"extracting {archive} safely needs Python 3.10.12, 3.11.4 or later (tarfile filters)"
        )
    staging = Path(tempfile.mkdtemp(dir=directory, prefix=".extracting."))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")
        for entry in staging.iterdir():
            destination = directory / entry.name
            if destination.is_dir() and not destination.is_symlink():
                shutil.rmtree(destination)
            entry.replace(destination)
    except tarfile.ReadError:  # its message lists every compression tried, over lines
        raise DataSourceError(
            f"{archive} cannot be extracted: it is not a tar archive (plain, gzip, bz2 or xz); "
            "delete it and fetch it again"
        ) from None
    except (tarfile.TarError, EOFError, zlib.error) as error:
        raise DataSourceError(
            f"{archive} cannot be extracted: {str(error).splitlines()[0]}; delete it and fetch "
            "it again"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fetch_hub(cfg: CorpusSource, target: Path, mirror: Path | None) -> None:
    """Hub datasets are kept as a `save_to_disk` directory; a mirror holds such a directory."""
    if (target / "dataset_dict.json").is_file() or (target / "dataset_info.json").is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if mirror is not None:
        logger.info("fetching %s: copying it from %s", cfg.name, mirror)
        if not mirror.is_dir():
            raise DataSourceError(
                f"{mirror} not found: DATA_MIRROR (or data.mirror) must point to a directory that "
                f"holds {cfg.name}/, a copy saved with datasets' save_to_disk"
            )
        shutil.copytree(mirror, target, dirs_exist_ok=True)
        return
    import datasets  # imported here: loading it costs seconds, and only hub datasets need it

    logger.info("fetching %s: downloading %s from the Hugging Face hub", cfg.name, cfg.hub_id)
    try:
        dataset = datasets.load_dataset(cfg.hub_id, cfg.hub_config)
    except (ConnectionError, OSError, FileNotFoundError) as error:
        raise DataSourceError(
            f"cannot load {cfg.hub_id!r} from the Hugging Face hub: {error}. Without internet "
            f"access, set DATA_MIRROR to a directory holding {cfg.name}/ saved with save_to_disk"
        ) from error
    dataset.save_to_disk(str(target))


def _matches(path: Path, expected: DataFile) -> bool:
    try:
        _verify(path, expected, origin=str(path))
    except DataSourceError:
        return False
    return True


def _verify(path: Path, expected: DataFile, origin: str) -> None:
    size = path.stat().st_size
    if expected.bytes is not None and size != expected.bytes:
        raise DataSourceError(
            f"{origin}: expected {expected.bytes} bytes for {expected.name}, got {size}"
        )
    for algorithm in ("sha256", "sha1"):
        wanted = getattr(expected, algorithm)
        if wanted is not None:
            digest = _digest(path, algorithm)
            if digest != wanted:
                raise DataSourceError(
                    f"{origin}: {algorithm} of {expected.name} is {digest}, expected {wanted}"
                )


def _digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()
