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

The dictionary's support often prefers a rare spelling (イスパニア for Spain, ターリバーン for
Taliban). Given Japanese news text (`NameUsage`: the data mirror's Wikinews, say), the spelling
news writes most is taken instead, and a name news writes in kanji more than in katakana (`Abe`:
安倍) is not given katakana.

The table is built once from the installed files and cached as JSON under the data cache
(`names/`), keyed by the files' sizes and times; a missing dictionary is reported by
`load_dictionary` returning None, and whoever needs it says so.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
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
# Uses of a name's renderings in a news text below this say nothing (one may be another word's
# part): the dictionary's support decides.
MIN_USES = 2


@dataclass(frozen=True)
class Rendering:
    text: str  # as Japanese writes the name: 安倍, トランプ
    support: int  # the dictionary entries that give it for the key, common words weighted

    @property
    def is_katakana(self) -> bool:
        return KATAKANA.fullmatch(self.text) is not None


class NameUsage:
    """How often a Japanese text writes each rendering: a katakana word as a whole word of a
    katakana run (トム is not counted in トムソン; ジョージ・フロイド counts itself and both parts),
    any other as it occurs."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._katakana = Counter(
            word for run in KATAKANA.findall(text) for word in {run, *run.split("・")}
        )

    def uses(self, rendering: Rendering) -> int:
        if rendering.is_katakana:
            return self._katakana[rendering.text]
        return self._text.count(rendering.text)


class NameDictionary:
    """English keys (names as written, loanwords in lowercase) to their renderings, the best
    supported first; `usage`, where given, picks between them (see the module docstring)."""

    def __init__(self, table: dict[str, str], usage: NameUsage | None = None) -> None:
        self._table = table  # key: "rendering<TAB>support" lines, as `encode_table` writes them
        self.usage = usage
        self._katakana: dict[str, str | None] = {}  # `katakana`'s answers: usage counts a text

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def renderings(self, name: str, loanwords: bool = True) -> list[Rendering]:
        """Every rendering of `name` (a word or words as a source writes them), best first; with
        `loanwords`, a loanword's by its lowercase form too (`Coronavirus` in a headline)."""
        found = self._table.get(name) or (loanwords and self._table.get(name.lower())) or ""
        pairs = (line.split("\t") for line in found.splitlines())
        return [Rendering(text, int(support)) for text, support in pairs]

    def katakana(self, name: str) -> str | None:
        """How Japanese news writes a foreign `name`: the katakana rendering the usage text
        writes most, where it writes the name's katakana renderings more than all its others
        together (at least `MIN_USES` times in all); without usage, the best supported katakana
        rendering, where the dictionary gives it more support than all the others together.
        Otherwise None: a Japanese name read in Latin letters (`Abe` is 安倍, 阿部 and more, and
        rarely エイブ) is not guessed at, nor is an acronym (`NASA`), which news keeps in Latin
        letters."""
        if name not in self._katakana:
            self._katakana[name] = self._chosen_katakana(name)
        return self._katakana[name]

    def _chosen_katakana(self, name: str) -> str | None:
        if name.isupper():
            return None
        found = self.renderings(name)
        foreign = [rendering for rendering in found if rendering.is_katakana]
        if not foreign:
            return None
        if self.usage is not None:
            uses = {rendering.text: self.usage.uses(rendering) for rendering in found}
            written = sum(uses[rendering.text] for rendering in foreign)
            if sum(uses.values()) >= MIN_USES:
                # max keeps the first of equals: the better supported
                best = max(foreign, key=lambda rendering: uses[rendering.text])
                return best.text if 2 * written > sum(uses.values()) else None
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
    files: Sequence[Path] | None = None,
    cache_dir: Path | None = None,
    usage: Sequence[Path] = (),
) -> NameDictionary | None:
    """The dictionary of `files` (default: `DICTIONARY_FILES`), from its cache under `cache_dir`
    (default: the project's data cache's `names/`, whatever a run's paths, so that it is built
    once) once built, its renderings picked by the Japanese text of `usage` (`read_usage`) where
    given; None when the files are not installed."""
    files = DICTIONARY_FILES if files is None else files
    if not all(path.is_file() for path in files):
        return None
    table = _table(
        tuple(files), cache_dir or DEFAULT_CACHE_DIR or Path(PathsConfig().cache_dir) / "names"
    )
    return NameDictionary(table, read_usage(tuple(usage)) if usage else None)


@cache
def read_usage(files: tuple[Path, ...]) -> NameUsage:
    """The usage of the Japanese text of `files`, one sentence a line, gzip or plain."""
    texts = []
    for path in files:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as text:
            texts.append(text.read())
    return NameUsage("\n".join(texts))


def dictionary_stamp(files: Sequence[Path] | None = None) -> str:
    """What identifies the table of `files` (default: `DICTIONARY_FILES`): a hash of the table's
    version and each file's path, size and time."""
    stamp = _file_stamps(DICTIONARY_FILES if files is None else files)
    return hashlib.sha256(json.dumps([TABLE_VERSION, stamp]).encode()).hexdigest()[:16]


def _file_stamps(files: Sequence[Path]) -> list[str]:
    return [f"{path.resolve()}:{path.stat().st_size}:{path.stat().st_mtime_ns}" for path in files]


@cache
def _table(files: tuple[Path, ...], cache_dir: Path) -> dict[str, str]:
    cached = cache_dir / f"name_table-{dictionary_stamp(files)}.json"
    if cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))["table"]
    table = encode_table(build_table(files))
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(cached) as file:
            body = {"licence": LICENCE, "sources": _file_stamps(files), "table": table}
            file.write(json.dumps(body, ensure_ascii=False).encode("utf-8"))
    except OSError as error:  # a read-only cache: the table still serves this process
        print(f"note: the name table was not cached ({error})", file=sys.stderr)
    return table
