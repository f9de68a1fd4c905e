"""English names and loanwords with their Japanese renderings, from EDRDG's dictionaries.

JMnedict (names: `enamdict`) and JMdict (words: `edict`), the Electronic Dictionary Research and
Development Group's files under CC BY-SA 4.0 (www.edrdg.org/edrdg/licence.html), as Debian's
`enamdict` and `edict` packages install them: EDICT-format text in EUC-JP, one entry a line,
`HEADWORD [READING] /(tags) gloss/gloss/.../`. Each gloss that reads as a name (`Tamil`,
`Larry King`) or, in JMdict, as a one-word loanword of a katakana headword (`coronavirus`) is a
key; its renderings are the headwords that give it, each supported by the entries that do. A
katakana headword split by `・` into as many parts as a name has words pairs them word by word
too (ジョンソン・エンド・ジョンソン gives Johnson ジョンソン), which adds the common spelling where
the dictionary lists only rarer ones alone (ジョンスン).

The table is built once from the installed files and cached as JSON under the data cache
(`names/`), keyed by the files' sizes and times; a missing dictionary is reported by
`load_dictionary` returning None, and whoever needs it says so.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.paths import PathsConfig

# Where Debian's packages install them (`apt-get install enamdict edict`).
DICTIONARY_FILES = (Path("/usr/share/edict/enamdict"), Path("/usr/share/edict/edict"))
DICTIONARY_ENCODING = "euc_jp"
# Where the table is cached; None: the project's data cache's `names/`.
DEFAULT_CACHE_DIR: Path | None = None
# Bumped when the table built from the files changes, so that no older cache is read.
TABLE_VERSION = 1
LICENCE = "JMdict/JMnedict, EDRDG, CC BY-SA 4.0 (www.edrdg.org/edrdg/licence.html)"

_ENTRY = re.compile(r"^(?P<headword>\S+)(?: \[(?P<reading>[^\]]+)\])? /(?P<glosses>.*)/\s*$")
_TAGS = re.compile(r"\([^)]*\)")
# A name as a gloss writes it: one to four capitalized words (`O'Brien`, `Jean-Luc`).
_NAME_GLOSS = re.compile(r"[A-Z][A-Za-z'’.-]*(?: [A-Z][A-Za-z'’.-]*){0,3}")
# A loanword as JMdict glosses a katakana headword: one lowercase word.
_LOANWORD_GLOSS = re.compile(r"[a-z][a-z-]{2,}")
KATAKANA = re.compile(r"[\u30a1-\u30fa\u30fc\u30fb]+")  # the middle dot and long mark included
_HIRAGANA = re.compile(r"[\u3041-\u309f\u30fc]+")
# JMdict's mark of a common word: its pairs weigh as much as this many entries.
_PRIORITY_SUPPORT = 3


@dataclass(frozen=True)
class Rendering:
    text: str  # as Japanese writes the name: 安倍, トランプ
    support: int  # the dictionary entries that give it for the key, common words weighted

    @property
    def is_katakana(self) -> bool:
        return KATAKANA.fullmatch(self.text) is not None


class NameDictionary:
    """English keys (names as written, loanwords in lowercase) to their renderings, the best
    supported first."""

    def __init__(self, table: dict[str, str]) -> None:
        self._table = table  # key: "rendering<TAB>support" lines, as `encode_table` writes them

    def __len__(self) -> int:
        return len(self._table)

    def renderings(self, name: str, loanwords: bool = True) -> list[Rendering]:
        """Every rendering of `name` (a word or words as a source writes them), best first; with
        `loanwords`, a loanword's by its lowercase form too (`Coronavirus` in a headline)."""
        found = self._table.get(name) or (loanwords and self._table.get(name.lower())) or ""
        pairs = (line.split("\t") for line in found.splitlines())
        return [Rendering(text, int(support)) for text, support in pairs]

    def katakana(self, name: str) -> str | None:
        """How Japanese news writes a foreign `name`: its best supported katakana rendering,
        where the dictionary gives it more support than all its kanji and kana renderings
        together. Otherwise None: a Japanese name read in Latin letters (`Abe` is 安倍, 阿部 and
        more, and rarely エイブ) is not guessed at, nor is an acronym (`NASA`), which news
        keeps in Latin letters."""
        if name.isupper():
            return None
        found = self.renderings(name)
        foreign = [rendering for rendering in found if rendering.is_katakana]
        if not foreign:
            return None
        others = sum(rendering.support for rendering in found if not rendering.is_katakana)
        return foreign[0].text if foreign[0].support > others else None


def parse_entries(lines: Iterable[str], words: bool) -> Iterable[tuple[str, str, int]]:
    """(key, rendering, support) of each pair that EDICT-format `lines` give (see the module
    docstring); `words`: JMdict's lines, whose katakana headwords give loanwords too."""
    for line in lines:
        entry = _ENTRY.match(line)
        if entry is None or line.startswith("\u3000"):  # the file's header line
            continue
        headword = entry["headword"]
        if len(headword) < 2 or _HIRAGANA.fullmatch(headword):
            continue  # kana readings and single characters match text by chance
        katakana = KATAKANA.fullmatch(headword) is not None
        if words and not katakana:
            continue  # JMdict's kanji words are translations, not renderings of a name
        support = _PRIORITY_SUPPORT if words and "/(P)/" in f"/{entry['glosses']}/" else 1
        for gloss in entry["glosses"].split("/"):
            key = _TAGS.sub("", gloss).strip()
            if _NAME_GLOSS.fullmatch(key):
                yield key, headword, support
                parts = headword.split("・")
                if katakana and len(parts) > 1 and len(parts) == len(key.split()):
                    for word, part in zip(key.split(), parts, strict=True):
                        if len(part) > 1:
                            yield word, part, 1
            elif words and _LOANWORD_GLOSS.fullmatch(key):
                yield key, headword, support


def build_table(files: Sequence[Path]) -> dict[str, list[tuple[str, int]]]:
    """The table of `files` (JMnedict's first, then JMdict's): each key's renderings with their
    support, best first (ties in the order the files give them)."""
    support: dict[str, Counter[str]] = defaultdict(Counter)
    for path in files:
        with path.open(encoding=DICTIONARY_ENCODING, errors="replace") as lines:
            for key, rendering, weight in parse_entries(lines, words=path.name == "edict"):
                support[key][rendering] += weight
    return {key: counts.most_common() for key, counts in support.items()}


def encode_table(table: dict[str, list[tuple[str, int]]]) -> dict[str, str]:
    """`table` with each key's renderings in one string, a line each: a JSON of strings loads
    several times faster than one of lists."""
    return {
        key: "\n".join(f"{text}\t{support}" for text, support in pairs)
        for key, pairs in table.items()
    }


def load_dictionary(
    files: Sequence[Path] | None = None, cache_dir: Path | None = None
) -> NameDictionary | None:
    """The dictionary of `files` (default: `DICTIONARY_FILES`), from its cache under `cache_dir`
    (default: the project's data cache's `names/`, whatever a run's paths, so that it is built
    once) once built; None when the files are not installed."""
    files = DICTIONARY_FILES if files is None else files
    if not all(path.is_file() for path in files):
        return None
    return _load(
        tuple(files), cache_dir or DEFAULT_CACHE_DIR or Path(PathsConfig().cache_dir) / "names"
    )


@cache
def _load(files: tuple[Path, ...], cache_dir: Path) -> NameDictionary:
    stamp = [f"{path.resolve()}:{path.stat().st_size}:{path.stat().st_mtime_ns}" for path in files]
    key = hashlib.sha256(json.dumps([TABLE_VERSION, stamp]).encode()).hexdigest()[:16]
    cached = cache_dir / f"name_table-{key}.json"
    if cached.is_file():
        return NameDictionary(json.loads(cached.read_text(encoding="utf-8"))["table"])
    table = encode_table(build_table(files))
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(cached) as file:
            body = {"licence": LICENCE, "sources": stamp, "table": table}
            file.write(json.dumps(body, ensure_ascii=False).encode("utf-8"))
    except OSError as error:  # a read-only cache: the table still serves this process
        print(f"note: the name table was not cached ({error})", file=sys.stderr)
    return NameDictionary(table)
