"""Foreign names and their katakana, from the name dictionary: a corpus to learn transliteration.

A translation that masks a name it never saw (data/names.py) writes it back as the name
dictionary renders it; a name the dictionary does not know is copied in Latin letters, where
Japanese news writes katakana (Kudlow: クドロー). `data.source: name_dictionary`
(configs/data/name_pairs.yaml) is the corpus a small model learns to transliterate from
(experiment=transliteration; `decoding.transliteration` names its run): each one-word name the
dictionary renders in katakana (`NameDictionary.katakana`, by the dictionary's support alone, so
that the corpus is the same on every machine), as a pair `Kudlow` → `クドロー`, written to
`<raw_dir>/<name>/{train,dev,test}.{en,ja}.gz` once; a hash of each name puts it in dev or
test (`HELD_OUT_SHARE` each), so that the split is the same however the table grows.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.name_dictionary import LICENCE, NameDictionary

# A name as the translator would transliterate it: one capitalized word of letters.
ONE_WORD_NAME = re.compile(r"[A-Z][a-z]+")
# The share of names each of dev and test holds, out of 1,000 hash buckets.
HELD_OUT_SHARE = 15
SPLITS = ("train", "dev", "test")
LINEAGE = "lineage.json"


def name_pairs(dictionary: NameDictionary) -> list[tuple[str, str]]:
    """Each one-word name of `dictionary` with its katakana, sorted by name."""
    found = ((key, dictionary.katakana(key)) for key in dictionary if ONE_WORD_NAME.fullmatch(key))
    return sorted((name, katakana) for name, katakana in found if katakana)


def split_of(name: str) -> str:
    """The split `name` belongs to, by a hash of it."""
    bucket = zlib.crc32(name.encode()) % 1000
    if bucket < HELD_OUT_SHARE:
        return "dev"
    return "test" if bucket < 2 * HELD_OUT_SHARE else "train"


def write_name_pairs(dictionary: NameDictionary, folder: Path, stamp: str) -> bool:
    """The pairs of `dictionary` in `folder`, split (see the module docstring), with a lineage
    naming the dictionary's files (`stamp`) and the licence the pairs carry; whether they were
    written: for the same `stamp` they already are."""
    lineage = {"dictionary": stamp, "licence": LICENCE}
    written = folder / LINEAGE
    if written.is_file() and json.loads(written.read_text(encoding="utf-8")) == lineage:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    by_split: dict[str, list[tuple[str, str]]] = {split: [] for split in SPLITS}
    for name, katakana in name_pairs(dictionary):
        by_split[split_of(name)].append((name, katakana))
    for split, pairs in by_split.items():
        for side, lang in enumerate(("en", "ja")):
            with atomic_writer(folder / f"{split}.{lang}.gz") as file:
                text = "".join(f"{pair[side]}\n" for pair in pairs)
                file.write(gzip.compress(text.encode("utf-8"), mtime=0))
    with atomic_writer(written) as file:
        file.write(json.dumps(lineage, ensure_ascii=False, indent=1).encode("utf-8"))
    return True
