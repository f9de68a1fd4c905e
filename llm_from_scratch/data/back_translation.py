"""A back-translated corpus on disk: the synthetic pairs a reverse model writes from monolingual
text (Sennrich et al. 2016), tagged so that the model trained on them can tell them from real
pairs (Caswell et al. 2019, "Tagged Back-Translation").

Each synthetic source starts with `BACK_TRANSLATION_TAG` and a space; the target is the
monolingual sentence as written. The tokenizers learn the tag as a piece of its own (it is a
character of Unicode's private use area, which no corpus holds), and the translator drops it from
user input, so a model is only ever told "synthetic" by its training data.

A corpus is written to `<raw_dir>/<name>/` as a parallel corpus (`train.<lang>.gz`, read by a
`data.source=derived` config such as configs/data/wikinews_ja_bt.yaml) with `lineage.json`: what
made it (the model's and the text's digests, the decoding settings). While it is being written
the pairs go, a batch at a time, to plain `partial.<lang>` files beside `partial.json` (the same
lineage): an interrupted run goes on from the last pair written, and a finished corpus whose
lineage matches is not written again.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, Any

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.data.placeholders import BACK_TRANSLATION_TAG

LINEAGE = "lineage.json"
_PARTIAL_LINEAGE = "partial.json"


def tagged(source: str) -> str:
    """A synthetic source as it is written: the tag, a space, the text; nothing for an empty
    text (cleaning drops the pair)."""
    return f"{BACK_TRANSLATION_TAG} {source}" if source.strip() else ""


def holds_another_corpus(directory: Path) -> bool:
    """Whether `directory` holds files but no back-translation's lineage: a corpus that
    back-translation did not write, which writing there would mix with synthetic pairs."""
    if not directory.is_dir() or not any(directory.iterdir()):
        return False
    return not any((directory / name).is_file() for name in (LINEAGE, _PARTIAL_LINEAGE))


class SyntheticCorpus:
    """The files of the back-translated corpus in `directory`, `source_lang` written by a model
    from `target_lang` text, made as `lineage` says."""

    def __init__(
        self, directory: Path, source_lang: str, target_lang: str, lineage: dict[str, Any]
    ) -> None:
        self.directory = directory
        self.languages = (source_lang, target_lang)
        self.lineage = lineage

    def train_file(self, lang: str) -> Path:
        """The finished corpus's side in `lang`, named as its config's splits name it."""
        return self.directory / f"train.{lang}.gz"

    def _partial_file(self, lang: str) -> Path:
        return self.directory / f"partial.{lang}"

    def is_written(self) -> bool:
        """Whether the finished corpus is there, made as this lineage says."""
        return _read_json(self.directory / LINEAGE) == self.lineage and all(
            self.train_file(lang).is_file() for lang in self.languages
        )

    def written_pairs(self) -> int:
        """How many pairs a run with this lineage has written so far (0: none, or a run of
        another lineage, whose partial files are then dropped). A pair cut off mid-line by an
        interruption is dropped too."""
        files = [self._partial_file(lang) for lang in self.languages]
        if _read_json(self.directory / _PARTIAL_LINEAGE) != self.lineage or not all(
            path.is_file() for path in files
        ):
            for path in files:
                path.unlink(missing_ok=True)
            return 0
        complete = min(_complete_lines(path) for path in files)
        for path in files:
            _keep_lines(path, complete)
        return complete

    def append(self) -> PairAppender:
        """A writer of the next pairs, after those `written_pairs` counted."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with atomic_writer(self.directory / _PARTIAL_LINEAGE) as out:
            out.write(json.dumps(self.lineage, indent=2, sort_keys=True).encode())
        return PairAppender([self._partial_file(lang) for lang in self.languages])

    def finish(self, summary: dict[str, Any]) -> None:
        """Turn the partial files into the corpus, with its lineage and `summary` (counts,
        timing) in `lineage.json`."""
        for lang in self.languages:
            with (
                self._partial_file(lang).open("rb") as text,
                atomic_writer(self.train_file(lang)) as out,
                gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed,
            ):
                packed.writelines(text)
        record = self.lineage | {"summary": summary}
        with atomic_writer(self.directory / LINEAGE) as out:
            out.write(json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False).encode())
        for lang in self.languages:
            self._partial_file(lang).unlink()
        (self.directory / _PARTIAL_LINEAGE).unlink()


class PairAppender:
    """Appends pairs to the partial files, both sides flushed together."""

    def __init__(self, files: list[Path]) -> None:
        self._files: list[IO[str]] = [
            path.open("a", encoding="utf-8", newline="\n") for path in files
        ]

    def write(self, pairs: list[tuple[str, str]]) -> None:
        """Write `pairs` (source, target), one line each, and flush them."""
        for side, file in enumerate(self._files):
            file.writelines(f"{pair[side]}\n" for pair in pairs)
            file.flush()

    def close(self) -> None:
        for file in self._files:
            file.close()

    def __enter__(self) -> PairAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_json(path: Path) -> dict[str, Any] | None:
    """`path`'s JSON object less its `summary`, or None when it is missing or unreadable."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    record.pop("summary", None)
    return record


def _complete_lines(path: Path) -> int:
    with path.open("rb") as file:
        return sum(1 for line in file if line.endswith(b"\n"))


def _keep_lines(path: Path, count: int) -> None:
    """Cut `path` after its first `count` lines."""
    with path.open("r+b") as file:
        for _ in range(count):
            file.readline()
        file.truncate(file.tell())
