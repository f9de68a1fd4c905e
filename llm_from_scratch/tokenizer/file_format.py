"""The tokenizer file: versioned JSON that loads without running code (unlike pickle).

    {"format": "llm-from-scratch-bpe", "version": 2,
     "normalization": "nfkc", "pretokenizer": {"name": "okurigana", "pattern": "..."},
     "special_tokens": ["<pad>", "<bos>", "<eos>"], "alphabet": ["a", "b", ...],
     "merges": [[id, id], ...], "training_options": {"vocab_size": 8000, ...},
     "word_counts": {"hello": 65, ...}}

Version 2 added `word_counts`: how often the training text held each word of a cased script
(Latin, Greek, Cyrillic), case-folded, for the words it held at least `MIN_WORD_COUNT` times
(`BPETokenizer.word_count`). Version 1 files, which lack them, still load; a tokenizer without
word counts is written as version 1, byte for byte as before, so that its hash (which
checkpoints and exports store) never changes.

The pattern is stored, not only its name, so a file keeps encoding the same way when the code's
patterns change; it is compiled only if it is one of `pretokenize.SHIPPED_PATTERNS` (any other
is refused: a pattern is code that runs on every text). Files are written in canonical form
(sorted keys, no spaces), so the sha256 of the file is the tokenizer's `hash`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_from_scratch.errors import UserError
from llm_from_scratch.tokenizer.pretokenize import NORMALIZATIONS, shipped_version
from llm_from_scratch.tokenizer.special_tokens import RESERVED

FORMAT = "llm-from-scratch-bpe"
VERSION = 2  # what a tokenizer with word counts is written as
VERSIONS = (1, 2)  # what this code reads
# A word the training text held fewer times is left out of `word_counts`: most of a corpus's
# distinct words occur once, and the file (stored in every checkpoint) stays small.
MIN_WORD_COUNT = 2
NUM_BYTES = 256  # byte tokens, implicit in the file: they follow the special tokens


class TokenizerError(UserError):
    """A tokenizer cannot be trained with these settings, or its file cannot be read."""


def canonical_json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def read(path: Path) -> dict[str, Any]:
    """The keyword arguments of `BPETokenizer(...)` stored in `path`, checked for consistency."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TokenizerError(f"tokenizer file {path} does not exist") from None
    except UnicodeDecodeError as error:
        raise TokenizerError(f"{path} is not a tokenizer file (not UTF-8: {error})") from None
    return parse(text, origin=str(path))


def parse(text: str, origin: str) -> dict[str, Any]:
    """As `read`, from the JSON text; `origin` names where it came from in error messages."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise TokenizerError(f"{origin} is not a tokenizer file (invalid JSON: {error})") from None

    def fail(problem: str) -> TokenizerError:
        return TokenizerError(f"{origin} is not a valid tokenizer file: {problem}")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise fail(f'"format" must be {FORMAT!r}')
    version = data.get("version")
    if type(version) is not int or version not in VERSIONS:  # not `true`, nor 1.0
        raise TokenizerError(
            f"{origin} has tokenizer format version {version!r}; this code reads versions "
            f"{', '.join(map(str, VERSIONS))}: retrain the tokenizer or use a matching checkout"
        )
    required = {"normalization", "pretokenizer", "special_tokens", "alphabet", "merges"}
    missing = (required | ({"word_counts"} if version >= 2 else set())) - set(data)
    if missing:
        raise fail(f"missing {', '.join(sorted(missing))}")

    if data["normalization"] not in NORMALIZATIONS:
        raise fail(f"unknown normalization {data['normalization']!r}")
    pretokenizer = data["pretokenizer"]
    if not (
        isinstance(pretokenizer, dict)
        and isinstance(pretokenizer.get("name"), str)
        and isinstance(pretokenizer.get("pattern"), str)
    ):
        raise fail('"pretokenizer" must be {"name": str, "pattern": str}')
    if shipped_version(pretokenizer["name"], pretokenizer["pattern"]) is None:
        raise fail(
            f"its {pretokenizer['name']!r} pre-tokenizer pattern is not one this code has "
            "shipped (altered, or from a newer version), and an unknown pattern is never run"
        )

    special_tokens = data["special_tokens"]
    if not _all_str(special_tokens) or list(special_tokens[: len(RESERVED)]) != list(RESERVED):
        raise fail(f'"special_tokens" must be a list of strings starting with {list(RESERVED)}')
    alphabet = data["alphabet"]
    if not _all_str(alphabet) or any(len(char) != 1 for char in alphabet):
        raise fail('"alphabet" must be a list of single characters')
    if len(set(alphabet)) != len(alphabet):
        raise fail('"alphabet" lists a character twice')

    merges = data["merges"]
    next_id = len(special_tokens) + NUM_BYTES + len(alphabet)
    first_char_id = len(special_tokens) + NUM_BYTES
    if not isinstance(merges, list):
        raise fail('"merges" must be a list of [id, id] pairs')
    for number, pair in enumerate(merges):
        # A merge joins two tokens that exist before it: characters or earlier merges.
        valid = (
            isinstance(pair, list)
            and len(pair) == 2
            and all(type(i) is int and first_char_id <= i < next_id for i in pair)
        )
        if not valid:
            raise fail(f"merge {number} is {pair!r}, not a pair of earlier character/merge ids")
        next_id += 1

    word_counts = None
    if version >= 2:
        word_counts = data["word_counts"]
        valid = isinstance(word_counts, dict) and all(
            isinstance(word, str) and type(count) is int and count >= MIN_WORD_COUNT
            for word, count in word_counts.items()
        )
        if not valid:
            raise fail(f'"word_counts" must map words to counts of at least {MIN_WORD_COUNT}')

    return {
        "alphabet": alphabet,
        "merges": [tuple(pair) for pair in merges],
        "special_tokens": special_tokens,
        "normalization": data["normalization"],
        "pretokenizer": pretokenizer["name"],
        "pattern": pretokenizer["pattern"],
        "training_options": data.get("training_options", {}),
        "word_counts": word_counts,
    }


def _all_str(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(value, str) for value in values)
