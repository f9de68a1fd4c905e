"""Tokenize a split and drop the training pairs that would only add noise, counting each reason.

Normalization is the tokenizer's own (`tok.normalize`), so "empty" means empty to the model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import datasets
import numpy as np

from llm_from_scratch.data.config import CleaningConfig
from llm_from_scratch.data.protocols import Tokenizer, model_text
from llm_from_scratch.device import usable_cores

logger = logging.getLogger(__name__)

DROP_REASONS = ("empty", "too_long", "length_ratio")
# Fewer pairs than this per process, and starting the processes costs more than they save.
MIN_PAIRS_PER_PROCESS = 10_000


@dataclass
class CleaningReport:
    """How many pairs of a split were kept, and how many were dropped for each reason."""

    split: str
    total: int = 0
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))

    @property
    def kept(self) -> int:
        return self.total - sum(self.dropped.values())

    def summary(self) -> str:
        reasons = ", ".join(f"{reason} {count}" for reason, count in self.dropped.items())
        return f"{self.split}: kept {self.kept} of {self.total} pairs (dropped: {reasons})"


def tokenize(
    pairs: datasets.Dataset, src_tok: Tokenizer, tgt_tok: Tokenizer, num_proc: int = 1
) -> datasets.Dataset:
    """Add `src_ids`, `tgt_ids` (no special tokens) and their lengths `src_len`, `tgt_len`,
    in up to `num_proc` processes (0: one per usable core), with a progress bar."""

    def encode(batch: dict[str, list[str]]) -> dict[str, list]:
        src_ids = src_tok.encode_batch([model_text(src_tok, text) for text in batch["src"]])
        tgt_ids = tgt_tok.encode_batch([model_text(tgt_tok, text) for text in batch["tgt"]])
        return {
            "src_ids": src_ids,
            "tgt_ids": tgt_ids,
            "src_len": [len(ids) for ids in src_ids],
            "tgt_len": [len(ids) for ids in tgt_ids],
        }

    processes = min(num_proc or usable_cores(), len(pairs) // MIN_PAIRS_PER_PROCESS)
    return pairs.map(
        encode, batched=True, num_proc=processes if processes > 1 else None, desc="tokenizing"
    )


def drop_masks(
    src_lens: np.ndarray, tgt_lens: np.ndarray, cfg: CleaningConfig
) -> dict[str, np.ndarray]:
    """For each reason, which pairs it drops; a pair is charged to the first reason that applies."""
    longer, shorter = np.maximum(src_lens, tgt_lens), np.minimum(src_lens, tgt_lens)
    empty = shorter == 0
    too_long = ~empty & (longer > cfg.max_tokens)
    length_ratio = ~empty & ~too_long & (longer > cfg.max_length_ratio * shorter)
    return {"empty": empty, "too_long": too_long, "length_ratio": length_ratio}


def column(data: datasets.Dataset, name: str) -> np.ndarray:
    """A numeric column as one array (indexing a Dataset by column name gives a lazy Column)."""
    return data.with_format("numpy")[name][:]


def clean(
    tokenized: datasets.Dataset, cfg: CleaningConfig, split: str
) -> tuple[datasets.Dataset, CleaningReport]:
    """Keep the pairs no reason drops; log and return the counts of the others."""
    masks = drop_masks(column(tokenized, "src_len"), column(tokenized, "tgt_len"), cfg)
    report = CleaningReport(
        split=split,
        total=len(tokenized),
        dropped={reason: int(mask.sum()) for reason, mask in masks.items()},
    )
    logger.info("cleaning %s", report.summary())
    if report.kept == report.total:
        return tokenized, report
    dropped = np.logical_or.reduce(list(masks.values()))
    return tokenized.select(np.flatnonzero(~dropped)), report
