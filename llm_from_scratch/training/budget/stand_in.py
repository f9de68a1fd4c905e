"""A corpus's stand-in: a `DataModule` of random token ids shaped like the corpus, built from its
raw lines before any tokenizer exists.

A time-budget run decides its recipe, tokenizers included, by timing updates, a validation and a
save before it trains a tokenizer (probe.py). What those cost depends on the
batches' shapes, not on which ids fill them: a token budget fixes a batch's tokens, and its
sentences' lengths set its rows and padding. So each pair of the stand-in has as many pieces as
its raw sentences' characters suggest (`PIECE_CHARS`), capped at the cleaning's limit, and ids
drawn at random. Its train split is a seeded sample of the members' train pairs (at most
`TRAIN_SAMPLE`), drawn in the proportions of a mixture's weights; dev and test are whole. The
lines are read as each corpus writes them: the data stage's deduplication, placeholders and
restyling, which barely change lengths, are left to the data stage. Its tokenizers know no pieces
beyond the bytes, which the ids are drawn from, so that anything decoded from it is text.
"""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow.compute as pc

from llm_from_scratch.data.cleaning import CleaningReport
from llm_from_scratch.data.config import CORPUS_COLUMN, SPLITS, DataConfig
from llm_from_scratch.data.corpus import read_split
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.file_format import NUM_BYTES

# Characters a piece of a language holds, roughly, under a BPE of a few thousand pieces trained on
# the corpus (Japanese writes a word in fewer characters); other languages get `OTHER_CHARS`.
PIECE_CHARS = {"en": 4.0, "ja": 1.6}
OTHER_CHARS = 3.0
TRAIN_SAMPLE = 20_000  # train pairs: far more than a probe's batches take, and quick to build
SEED = 1234


def stand_in_data(cfg: DataConfig, paths: PathsConfig) -> DataModule:
    """The stand-in of `cfg`'s tokenized corpus (see the module's docstring)."""
    tokenizer = BPETokenizer(alphabet=[], merges=[])
    byte_ids = (tokenizer.vocab_size - NUM_BYTES, tokenizer.vocab_size)
    rng = np.random.default_rng(SEED)
    splits = {}
    for split in SPLITS:
        src_lens, tgt_lens, corpora = _lengths(cfg, split, paths, rng)
        columns = {
            "src_ids": [rng.integers(*byte_ids, n).tolist() for n in src_lens],
            "tgt_ids": [rng.integers(*byte_ids, n).tolist() for n in tgt_lens],
            "src_len": src_lens,
            "tgt_len": tgt_lens,
            "index": list(range(len(src_lens))),
            CORPUS_COLUMN: corpora,
        }
        splits[split] = datasets.Dataset.from_dict(columns)
    report = CleaningReport("train", total=len(splits["train"]))
    return DataModule(cfg, tokenizer, tokenizer, splits, report)


def _lengths(
    cfg: DataConfig, split: str, paths: PathsConfig, rng: np.random.Generator
) -> tuple[list[int], list[int], list[str]]:
    """The pieces each pair of `split` is taken to hold, source and target, and its corpus;
    of train, a sample drawn by weight."""
    src_lens, tgt_lens, corpora, weights = [], [], [], []
    for member in cfg.members:
        weight = getattr(member, "weight", 1.0)  # a mixture's member has one
        if split == "train" and not (member.corpus.has_train and weight):
            continue
        pairs = read_split(member, split, paths)
        src, tgt = ("tgt", "src") if cfg.reversed else ("src", "tgt")
        src_lens += _piece_counts(pairs, src, cfg.source_lang, cfg.cleaning.max_tokens)
        tgt_lens += _piece_counts(pairs, tgt, cfg.target_lang, cfg.cleaning.max_tokens)
        corpora += [member.name] * len(pairs)
        weights += [weight] * len(pairs)
    rows = np.arange(len(src_lens))
    if split == "train" and (len(rows) > TRAIN_SAMPLE or len(set(weights)) > 1):
        chances = np.asarray(weights) / sum(weights)
        few = len(rows) <= TRAIN_SAMPLE  # as many draws as pairs, with repeats as weights ask
        size = len(rows) if few else TRAIN_SAMPLE
        rows = np.sort(rng.choice(len(rows), size, replace=few, p=chances))
    return [src_lens[i] for i in rows], [tgt_lens[i] for i in rows], [corpora[i] for i in rows]


def _piece_counts(pairs: datasets.Dataset, side: str, lang: str, limit: int) -> list[int]:
    """How many pieces each text of `side` is taken to hold: at least one, at most `limit`."""
    chars = pc.utf8_length(pairs.with_format("arrow")[side]).to_numpy(zero_copy_only=False)
    pieces = np.ceil(chars / PIECE_CHARS.get(lang, OTHER_CHARS)).astype(np.int64)
    return np.clip(pieces, 1, limit).tolist()


def epoch_tokens(cfg: DataConfig, paths: PathsConfig) -> float:
    """The pieces, source and target, of an epoch of `cfg`'s train split as the stand-in counts
    them: each member's pairs repeated as its weight asks."""
    total = 0.0
    for member in cfg.members:
        weight = getattr(member, "weight", 1.0)  # a mixture's member has one
        if not (member.corpus.has_train and weight):
            continue
        pairs = read_split(member, "train", paths)
        src, tgt = ("tgt", "src") if cfg.reversed else ("src", "tgt")
        pieces = _piece_counts(pairs, src, cfg.source_lang, cfg.cleaning.max_tokens)
        pieces += _piece_counts(pairs, tgt, cfg.target_lang, cfg.cleaning.max_tokens)
        total += weight * sum(pieces)
    return total
