"""Tokenize a split and drop the training pairs that would only add noise, counting each reason.

Normalization is the tokenizer's own (`tok.normalize`), so "empty" means empty to the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from llm_from_scratch.data.config import CORPUS_COLUMN, CleaningConfig
from llm_from_scratch.data.protocols import Tokenizer, model_text
from llm_from_scratch.device import usable_cores

if TYPE_CHECKING:  # a translator reads no corpus, and importing datasets is slow
    import datasets

DROP_REASONS = ("empty", "too_long", "length_ratio")
# What a mixture removes from its train pairs before they are tokenized (data/mixture.py).
MIXTURE_REASONS = ("duplicate", "held_out_overlap")
# Fewer pairs than this per process, and starting the processes costs more than they save.
MIN_PAIRS_PER_PROCESS = 10_000


@dataclass
class CleaningReport:
    """How many pairs of a split were kept, and how many were dropped for each reason."""

    split: str
    total: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    # A mixture's: per corpus, its pairs `kept` and how many the split holds after resampling.
    corpora: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def kept(self) -> int:
        return self.total - sum(self.dropped.values())

    @property
    def size(self) -> int:
        """The pairs of the split: those kept, as a mixture resampled them."""
        if not self.corpora:
            return self.kept
        return sum(counts["sampled"] for counts in self.corpora.values())

    def summary(self) -> str:
        reasons = ", ".join(f"{reason} {count}" for reason, count in self.dropped.items())
        line = f"{self.split}: kept {self.kept} of {self.total} pairs (dropped: {reasons})"
        if self.corpora:
            sampled = ", ".join(
                f"{name} {counts['kept']} -> {counts['sampled']}"
                for name, counts in self.corpora.items()
            )
            line += f"; sampled per corpus: {sampled}"
        return line


def tokenize(
    pairs: datasets.Dataset, src_tok: Tokenizer, tgt_tok: Tokenizer, num_proc: int = 1
) -> datasets.Dataset:
    """Add `src_ids`, `tgt_ids` (no special tokens) and their lengths `src_len`, `tgt_len`,
    in up to `num_proc` processes (0: one per usable core), with a progress bar."""
    import datasets

    def encode(batch: dict[str, list[str]]) -> dict[str, list]:
        src_ids = src_tok.encode_batch([model_text(src_tok, text) for text in batch["src"]])
        tgt_ids = tgt_tok.encode_batch([model_text(tgt_tok, text) for text in batch["tgt"]])
        return {
            "src_ids": src_ids,
            "tgt_ids": tgt_ids,
            "src_len": [len(ids) for ids in src_ids],
            "tgt_len": [len(ids) for ids in tgt_ids],
        }

    ids, length = datasets.List(datasets.Value("int64")), datasets.Value("int64")
    features = datasets.Features(
        {**pairs.features, "src_ids": ids, "tgt_ids": ids, "src_len": length, "tgt_len": length}
    )
    if not len(pairs):  # a corpus without a test split: `map` would add no columns
        return empty_dataset(features)
    return pairs.map(
        encode,
        batched=True,
        num_proc=map_processes(len(pairs), num_proc),
        desc="tokenizing",
        features=features,
    )


def empty_dataset(features: datasets.Features) -> datasets.Dataset:
    """A dataset of no rows with these columns and types."""
    import datasets

    return datasets.Dataset.from_dict({name: [] for name in features}, features=features)


def map_processes(pairs: int, num_proc: int) -> int | None:
    """`Dataset.map`'s `num_proc` for `pairs` pairs and up to `num_proc` processes (0: one per
    usable core); None, one process, when the pairs are too few to share out."""
    processes = min(num_proc or usable_cores(), pairs // MIN_PAIRS_PER_PROCESS)
    return processes if processes > 1 else None


def drop_masks(
    src_lens: np.ndarray,
    tgt_lens: np.ndarray,
    cfg: CleaningConfig,
    limits: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """For each reason, which pairs it drops; a pair is charged to the first reason that applies.
    `limits`: each pair's own bounds (max_tokens, max_length_ratio), tighter than `cfg`'s."""
    max_tokens, max_ratio = limits or (cfg.max_tokens, cfg.max_length_ratio)
    longer, shorter = np.maximum(src_lens, tgt_lens), np.minimum(src_lens, tgt_lens)
    empty = shorter == 0
    too_long = ~empty & (longer > np.minimum(max_tokens, cfg.max_tokens))
    ratio = np.minimum(max_ratio, cfg.max_length_ratio)
    length_ratio = ~empty & ~too_long & (longer > ratio * shorter)
    return {"empty": empty, "too_long": too_long, "length_ratio": length_ratio}


def column(data: datasets.Dataset, name: str) -> np.ndarray:
    """A column as one array (indexing a Dataset by column name gives a lazy Column)."""
    return data.with_format("numpy")[name][:]


def clean(
    tokenized: datasets.Dataset,
    cfg: CleaningConfig,
    split: str,
    per_corpus: dict[str, CleaningConfig] | None = None,
) -> tuple[datasets.Dataset, CleaningReport]:
    """Keep the pairs no reason drops; return the counts of the others. With `per_corpus` (a
    mixture's members' cleaning), each pair also meets its own corpus's (`corpus` column)."""
    limits = None
    if per_corpus:
        corpora = column(tokenized, CORPUS_COLUMN)
        max_tokens = np.full(len(tokenized), cfg.max_tokens)
        max_ratio = np.full(len(tokenized), cfg.max_length_ratio)
        for name, own in per_corpus.items():
            rows = corpora == name
            max_tokens[rows] = own.max_tokens
            max_ratio[rows] = own.max_length_ratio
        limits = max_tokens, max_ratio
    masks = drop_masks(column(tokenized, "src_len"), column(tokenized, "tgt_len"), cfg, limits)
    report = CleaningReport(
        split=split,
        total=len(tokenized),
        dropped={reason: int(mask.sum()) for reason, mask in masks.items()},
    )
    if report.kept == report.total:
        return tokenized, report
    dropped = np.logical_or.reduce(list(masks.values()))
    return tokenized.select(np.flatnonzero(~dropped)), report
