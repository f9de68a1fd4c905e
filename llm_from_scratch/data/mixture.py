"""A mixture of corpora: its members' splits in one source style, tagged by corpus; its train pairs
deduplicated, cleared of held-out overlap, and resampled by weight or temperature (docs/data.md,
Several corpora).

Pairs are compared by 64-bit hashes of their normalized sides (NFKC, casefolded, without
whitespace or punctuation, so `i can 't tell .` meets `I can't tell.`), computed in one pass
through `datasets` and compared as numpy arrays: no Python set of every pair.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from functools import partial

import datasets
import numpy as np

from llm_from_scratch.data.cleaning import column
from llm_from_scratch.data.config import CORPUS_COLUMN, CorpusSource, DataConfig
from llm_from_scratch.data.raw_style import Truecaser, to_raw
from llm_from_scratch.data.source_style import prepare_source

# Removed before comparing: whitespace, punctuation, symbols (`\W`), and `_`.
_NOT_WORD = re.compile(r"[\W_]+")
_EMPTY = 0  # the hash of a side with nothing left to compare: it matches nothing


def normalize(text: str) -> str:
    """`text` as pairs are compared: NFKC, casefolded, only letters, digits and marks."""
    return _NOT_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())


def _hash(text: str) -> int:
    key = normalize(text)
    if not key:
        return _EMPTY
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


def side_hashes(pairs: datasets.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """The hashes of each pair's normalized source and target."""
    hashed = pairs.map(
        lambda batch: {
            "src_hash": [_hash(text) for text in batch["src"]],
            "tgt_hash": [_hash(text) for text in batch["tgt"]],
        },
        batched=True,
        remove_columns=pairs.column_names,
        features=datasets.Features(
            {"src_hash": datasets.Value("int64"), "tgt_hash": datasets.Value("int64")}
        ),
        desc="comparing pairs",
    )
    table = hashed.with_format("numpy")
    return table["src_hash"][:], table["tgt_hash"][:]


def unique_train(
    train: datasets.Dataset, held_out: list[datasets.Dataset]
) -> tuple[datasets.Dataset, dict[str, int]]:
    """`train` without the pairs that repeat an earlier one (`duplicate`) and, of the rest, those
    whose source or target equals a source or target of any `held_out` pair
    (`held_out_overlap`); with the counts of each."""
    src, tgt = side_hashes(train)
    _, first = np.unique(np.stack([src, tgt], axis=1), axis=0, return_index=True)
    unique = np.zeros(len(train), dtype=bool)
    unique[first] = True
    # A held-back split (a corpus without a test set) is empty: it holds nothing to compare.
    sides = [np.concatenate(side_hashes(split)) for split in held_out if len(split)]
    held = np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *sides]))
    held = held[held != _EMPTY]
    overlapping = np.isin(src, held) | np.isin(tgt, held)
    kept = unique & ~overlapping
    counts = {
        "duplicate": int((~unique).sum()),
        "held_out_overlap": int((unique & overlapping).sum()),
    }
    return train.select(np.flatnonzero(kept)), counts


def kept_per_corpus(train: datasets.Dataset) -> dict[str, int]:
    """How many pairs of `train` each corpus holds, in the order the corpora first appear."""
    names, first, counts = np.unique(
        column(train, CORPUS_COLUMN), return_index=True, return_counts=True
    )
    order = np.argsort(first)
    return {str(names[i]): int(counts[i]) for i in order}


def sample_sizes(cfg: DataConfig, kept: dict[str, int]) -> dict[str, int]:
    """How many train pairs each member contributes, given its `kept` pairs: its weight times
    them, or with `data.temperature` T a share of their total proportional to kept ** (1 / T)."""
    if cfg.temperature is None:
        return {name: round(cfg.mixture[name].weight * count) for name, count in kept.items()}
    total = sum(kept.values())
    scores = {name: count ** (1 / cfg.temperature) for name, count in kept.items()}
    norm = sum(scores.values()) or 1.0
    return {name: round(total * score / norm) for name, score in scores.items()}


def resample(
    train: datasets.Dataset, sizes: dict[str, int], seed: int
) -> tuple[datasets.Dataset, dict[str, dict[str, int]]]:
    """`train` with each corpus's pairs repeated or subsampled to its size in `sizes`: every pair
    `size // n` times, then a seeded choice of `size % n` of them once more. Returns the counts
    (`kept`, `sampled`) per corpus."""
    corpora = column(train, CORPUS_COLUMN)
    rng = np.random.default_rng(seed)
    chosen, counts = [], {}
    for name, size in sizes.items():
        rows = np.flatnonzero(corpora == name)
        if len(rows):
            whole, extra = divmod(size, len(rows))
            picks = np.sort(rng.choice(rows, size=extra, replace=False))
            chosen.append(np.sort(np.concatenate([np.repeat(rows, whole), picks])))
        counts[name] = {"kept": len(rows), "sampled": size if len(rows) else 0}
    indices = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    if len(indices) == len(train) and np.array_equal(indices, np.arange(len(train))):
        return train, counts
    return train.select(indices), counts


def weighted_train(cfg: DataConfig, train: datasets.Dataset) -> datasets.Dataset:
    """A mixture's `train` pairs in the proportions its weights give them (`resample`), as the
    model sees them; one corpus's `train` as it is."""
    if not cfg.mixture:
        return train
    return resample(train, sample_sizes(cfg, kept_per_corpus(train)), cfg.mixture_seed)[0]


def combine(
    cfg: DataConfig, splits: tuple[str, ...], read: Callable[[CorpusSource, str], datasets.Dataset]
) -> tuple[dict[str, datasets.Dataset], dict[str, int]]:
    """The `splits` of the mixture `cfg`: each member's pairs, read by `read`, in the mixture's
    source style and tagged with its name in a `corpus` column, concatenated in member order.
    Train is then deduplicated and cleared of held-out overlap; the counts removed come along."""
    style = cfg.corpus.source_style
    styled: dict[tuple[str, str], datasets.Dataset] = {}
    truecaser: Truecaser | None = None

    def member_split(member: CorpusSource, split: str) -> datasets.Dataset:
        nonlocal truecaser
        if (member.name, split) not in styled:
            pairs = read(member, split)
            if member.corpus.source_style != style:
                if style == "raw" and truecaser is None:
                    # The raw members are in the mixture's style already: read once, here.
                    raw = [
                        member_split(m, "train")
                        for m in cfg.members
                        if m.corpus.source_style == "raw"
                    ]
                    truecaser = learn_truecaser(raw)
                pairs = restyle(pairs, member.corpus.source_style, style, truecaser)
            if len(pairs) == 0:  # a split carved to nothing: a table of no blocks takes no column
                columns = {name: [] for name in pairs.column_names}
                pairs = datasets.Dataset.from_dict(columns, features=pairs.features)
            labels = [member.name] * len(pairs)
            styled[member.name, split] = pairs.add_column(CORPUS_COLUMN, labels)
        return styled[member.name, split]

    combined = {
        split: datasets.concatenate_datasets([member_split(m, split) for m in cfg.members])
        for split in splits
    }
    removed: dict[str, int] = {}
    if "train" in combined:
        held_out = [member_split(m, split) for m in cfg.members for split in ("dev", "test")]
        combined["train"], removed = unique_train(combined["train"], held_out)
    return combined, removed


def learn_truecaser(raw: list[datasets.Dataset]) -> Truecaser:
    """Word casings counted on the source side of `raw` (the raw members' train splits)."""
    return Truecaser.learn(
        text
        for pairs in raw
        for batch in pairs.select_columns(["src"]).iter(batch_size=10_000)
        for text in batch["src"]
    )


def restyle(
    pairs: datasets.Dataset, style: str, into: str, truecaser: Truecaser | None
) -> datasets.Dataset:
    """`pairs` whose source is written in `style`, with the source written in `into`."""
    if into == "raw":
        assert truecaser is not None and style == "lowercase_tokenized"
        convert = partial(to_raw, truecaser=truecaser)
    else:
        convert = partial(prepare_source, style=into)
    return pairs.map(
        lambda batch: {"src": [convert(text) for text in batch["src"]]},
        batched=True,
        desc=f"source style {style} to {into}",
    )
