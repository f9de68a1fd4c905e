"""Everything the trainer needs from the data stage: `build_data(...) -> DataModule`.

Reading, tokenization and cleaning run once; the result is saved under
`<paths.cache_dir>/tokenized/<name>-<key>/`, where the key hashes the tokenizers, every data
setting outside `data.loading` (which only batches), and the raw files' sizes and times (every
member's, for a mixture), so any change to them rebuilds it. A mixture's train split is
resampled after cleaning (data/mixture.py), and its report counts what the mixture removed. A
cache that fails to load or to check (a truncated or garbled file, token ids outside the
vocabulary) is rebuilt, with a log line saying what was wrong. A build holds a file lock beside
the cache, so a second run waits for it and loads its result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow.compute as pc
import torch
from torch.utils.data import DataLoader

from llm_from_scratch.atomic import DiskFullError, build_lock, disk_full_in, is_disk_full
from llm_from_scratch.data.batch import BPEDropout, Collator
from llm_from_scratch.data.batching import TokenBudgetBatchSampler
from llm_from_scratch.data.cleaning import (
    CleaningReport,
    clean,
    column,
    empty_dataset,
    tokenize,
)
from llm_from_scratch.data.config import SPECIALS_PER_SIDE, SPLITS, DataConfig
from llm_from_scratch.data.corpus import load_extra_train, load_splits
from llm_from_scratch.data.mixture import kept_per_corpus, resample, sample_sizes
from llm_from_scratch.data.placeholders import NUMBER_MASKING
from llm_from_scratch.data.protocols import Tokenizer
from llm_from_scratch.data.shapes import ShapePlan, plan_shapes
from llm_from_scratch.data.sources import dataset_dir
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import PathsConfig

logger = logging.getLogger(__name__)

# Bump when the cached content changes meaning (columns, cleaning rules), to invalidate old caches.
CACHE_VERSION = 1


@dataclass
class DataModule:
    """Tokenized splits (`src`, `tgt` text; `src_ids`, `tgt_ids`, lengths; `index`) and loaders."""

    cfg: DataConfig
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    splits: dict[str, datasets.Dataset]
    report: CleaningReport  # of the train split; held-out splits are kept whole
    # The BPE-dropout of the latest epoch and its pairs' lengths (`train_loader`).
    _lengths: tuple[BPEDropout, tuple[np.ndarray, np.ndarray]] | None = field(
        default=None, init=False, repr=False
    )
    # The static shapes of each batch budget (`shape_plan`), and the latest train loader with
    # what it was built for: reused for the next epoch, so its workers persist.
    _shape_plans: dict[int, ShapePlan] = field(default_factory=dict, init=False, repr=False)
    _train_loader: tuple[tuple[Any, ...], DataLoader] | None = field(
        default=None, init=False, repr=False
    )

    def train_loader(
        self,
        epoch: int,
        start_batch: int = 0,
        rank: int = 0,
        world_size: int = 1,
        device: torch.device | str = "cpu",
        batch_tokens: int | None = None,
    ) -> DataLoader:
        """This rank's batches of `epoch`, from its batch `start_batch` on (to resume), of
        `batch_tokens` (default: `data.loading.batch_tokens`), in static shapes when
        `data.loading.static_shapes` says so for `device`.

        Without BPE-dropout the loader of the previous call is returned again when built for
        the same rank, device and budget, moved to `epoch`: its workers, which persist, then
        serve every epoch (a BPE-dropout epoch's collator differs, so it gets a new loader)."""
        train, loading = self.splits["train"], self.cfg.loading
        batch_tokens = batch_tokens or loading.batch_tokens
        device = torch.device(device)
        shapes = self.shape_plan(batch_tokens) if loading.uses_static_shapes(device) else None
        key = (rank, world_size, device, batch_tokens)
        if not loading.bpe_dropout and self._train_loader and self._train_loader[0] == key:
            loader = self._train_loader[1]
            loader.batch_sampler.set_epoch(epoch, start_batch)
            return loader
        bpe_dropout = None
        if loading.bpe_dropout:
            bpe_dropout = BPEDropout(
                loading.bpe_dropout, loading.shuffle_seed, epoch, self.cfg.cleaning.max_tokens
            )
            lengths = self._resampled_lengths(bpe_dropout)
        else:
            lengths = column(train, "src_len"), column(train, "tgt_len")
        sampler = TokenBudgetBatchSampler(
            *lengths,
            batch_tokens,
            seed=loading.shuffle_seed,
            pool_size=loading.pool_size,
            rank=rank,
            world_size=world_size,
            shapes=shapes,
        )
        sampler.set_epoch(epoch, start_batch)
        collator = Collator(self.src_tok, self.tgt_tok, bpe_dropout, shapes)
        loader = self._loader(train, sampler, device, collator, persistent=not bpe_dropout)
        self._train_loader = (key, loader)
        return loader

    def shape_plan(self, batch_tokens: int) -> ShapePlan:
        """The static shapes of training batches of `batch_tokens`, planned on the train
        split's lengths (every epoch's, BPE-dropout's too, fit the longest cleaning keeps)."""
        if batch_tokens not in self._shape_plans:
            train, loading = self.splits["train"], self.cfg.loading
            self._shape_plans[batch_tokens] = plan_shapes(
                column(train, "src_len"),
                column(train, "tgt_len"),
                batch_tokens,
                step=loading.shape_step,
                max_shapes=loading.max_shapes,
                longest=self.cfg.cleaning.max_tokens + SPECIALS_PER_SIDE,
            )
        return self._shape_plans[batch_tokens]

    def _resampled_lengths(self, bpe_dropout: BPEDropout) -> tuple[np.ndarray, np.ndarray]:
        """The epoch's lengths under `bpe_dropout`, kept for the epoch's later loaders."""
        if self._lengths is None or self._lengths[0] != bpe_dropout:
            train, num_proc = self.splits["train"], self.cfg.loading.num_proc
            started = time.perf_counter()
            lengths = bpe_dropout.lengths(train, self.src_tok, self.tgt_tok, num_proc)
            self._lengths = (bpe_dropout, lengths)
            logger.info(
                f"BPE-dropout: epoch {bpe_dropout.epoch}'s segmentation measured "
                f"({len(train):,} pairs, {time.perf_counter() - started:.1f} s)"
            )
        return self._lengths[1]

    def eval_loader(self, split: str, device: torch.device | str = "cpu") -> DataLoader:
        """All of `split` (dev or test), sorted by length; `Batch.indices` map back to its rows."""
        data = self.splits[split]
        sampler = TokenBudgetBatchSampler(
            column(data, "src_len"),
            column(data, "tgt_len"),
            self.cfg.loading.batch_tokens,
            shuffle=False,
        )
        return self._loader(data, sampler, device, Collator(self.src_tok, self.tgt_tok))

    def _loader(
        self,
        data: datasets.Dataset,
        sampler: TokenBudgetBatchSampler,
        device: torch.device | str,
        collator: Collator,
        persistent: bool = False,
    ) -> DataLoader:
        """`persistent`: its workers (if any) outlive an epoch's iteration, for the next."""
        workers = self.cfg.loading.num_workers
        return DataLoader(
            data.select_columns(collator.columns),
            batch_sampler=sampler,
            collate_fn=collator,
            num_workers=workers,
            persistent_workers=persistent and workers > 0,
            pin_memory=torch.device(device).type == "cuda",
            # Its own generator: iterating a DataLoader draws a seed, which must not come from
            # the global RNG, or resuming mid-epoch would shift every later dropout mask.
            generator=torch.Generator().manual_seed(self.cfg.loading.shuffle_seed),
        )


def build_data(
    cfg: DataConfig, src_tok: Tokenizer, tgt_tok: Tokenizer, paths: PathsConfig
) -> DataModule:
    """Read the fetched raw files, then tokenize and clean them (or load the cache)."""
    with disk_full_in(paths.cache_dir, "the data caches"):
        raw, removed = load_splits(cfg, paths)
        extra = load_extra_train(cfg, paths)
        if extra is not None:
            raw["train"] = datasets.concatenate_datasets([raw["train"], extra])
        splits, report = prepare_splits(cfg, raw, src_tok, tgt_tok, paths, removed)
    return DataModule(cfg, src_tok, tgt_tok, splits, report)


def prepare_splits(
    cfg: DataConfig,
    raw: dict[str, datasets.Dataset],
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    paths: PathsConfig,
    removed: dict[str, int] | None = None,
) -> tuple[dict[str, datasets.Dataset], CleaningReport]:
    """Tokenized splits (train cleaned, a mixture's resampled) and the train cleaning report,
    cached on disk; `removed`: the train pairs a mixture removed before, by reason."""
    key = cache_key(cfg, src_tok, tgt_tok, paths)
    directory = Path(paths.cache_dir) / "tokenized" / f"{cfg.name}-{key}"
    with build_lock(directory, f"the cache {directory}"):
        if (directory / "report.json").is_file():
            cached = _load(directory, src_tok, tgt_tok)
            if cached is not None:
                logger.info(
                    "tokenized data loaded from %s; cleaning %s", directory, cached[1].summary()
                )
                return cached
        return _build(cfg, raw, src_tok, tgt_tok, directory, removed or {})


def _build(
    cfg: DataConfig,
    raw: dict[str, datasets.Dataset],
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    directory: Path,
    removed: dict[str, int],
) -> tuple[dict[str, datasets.Dataset], CleaningReport]:
    sizes = ", ".join(f"{split} {len(raw[split]):,}" for split in SPLITS)
    logger.info("tokenizing and cleaning %s (%s pairs)", cfg.name, sizes)
    started = time.perf_counter()
    splits = {
        split: tokenize(raw[split], src_tok, tgt_tok, cfg.loading.num_proc) for split in SPLITS
    }
    per_corpus = {name: member.cleaning for name, member in cfg.mixture.items()}
    splits["train"], report = clean(splits["train"], cfg.cleaning, "train", per_corpus)
    if cfg.mixture:
        report.total += sum(removed.values())
        report.dropped = {**removed, **report.dropped}
        sizes = sample_sizes(cfg, kept_per_corpus(splits["train"]))
        splits["train"], report.corpora = resample(splits["train"], sizes, cfg.mixture_seed)
    logger.info("cleaning %s", report.summary())
    if report.size == 0:
        raise UserError(
            f"cleaning dropped every training pair of {cfg.name} ({report.summary()}); "
            "raise data.cleaning.max_tokens or data.cleaning.max_length_ratio"
        )
    index = datasets.Value("int64")  # given: an empty split's would be inferred as null
    splits = {
        name: data.add_column("index", range(len(data)), feature=index)
        for name, data in splits.items()
    }
    logger.info("tokenized in %.1f s", time.perf_counter() - started)
    _save(directory, splits, report)
    return splits, report


def content_settings(cfg: DataConfig) -> dict[str, Any]:
    """Every data setting that can change the tokenized splits: all but `data.loading`, and a
    single corpus's unused mixture settings (so its cache is the one it had before them)."""
    settings = asdict(cfg)
    del settings["loading"]
    if not cfg.mixture:
        for key in ("mixture", "temperature", "mixture_seed"):
            del settings[key]
    for key in ("number_placeholders", "name_placeholders", "sentence_pairs", "dev_corpus"):
        if not settings[key]:  # unset: the cache key of data that never set them stays
            del settings[key]
    drop_unset_corpus_keys(settings)
    if cfg.number_placeholders:
        settings["number_masking"] = NUMBER_MASKING
    return settings


def drop_unset_corpus_keys(settings: dict[str, Any]) -> None:
    """Remove, from `settings` (a data config as plain data), the corpus settings left unset
    that were added after caches and tokenizer files were keyed on the others, so that those
    keep their keys; a mixture's members too."""
    for corpus in [
        settings["corpus"],
        *(m["corpus"] for m in settings.get("mixture", {}).values()),
    ]:
        for key in ("group_column", "skip_lines"):
            if corpus.get(key) is None:
                corpus.pop(key, None)


def cache_key(cfg: DataConfig, src_tok: Tokenizer, tgt_tok: Tokenizer, paths: PathsConfig) -> str:
    """A digest of everything the tokenized splits depend on."""
    raw_files = []
    for corpus in cfg.members:
        raw_root = dataset_dir(corpus, paths)
        prefix = f"{corpus.name}/" if cfg.mixture else ""  # a single corpus: the key it had
        raw_files += sorted(
            (prefix + str(path.relative_to(raw_root)), path.stat().st_size, path.stat().st_mtime_ns)
            for path in raw_root.rglob("*")
            if path.is_file()
        )
    extra_files = [
        (path, Path(path).stat().st_size, Path(path).stat().st_mtime_ns)
        for extra in cfg.extra_train
        for path in (extra.source, extra.target)
    ]
    content = {
        "version": CACHE_VERSION,
        "tokenizers": [src_tok.hash, tgt_tok.hash],
        "config": content_settings(cfg),
        "raw_files": raw_files,
        "extra_files": extra_files,
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def _load(
    directory: Path, src_tok: Tokenizer, tgt_tok: Tokenizer
) -> tuple[dict[str, datasets.Dataset], CleaningReport] | None:
    """The cached splits and report; None, logged and the directory removed, when they cannot
    be used."""
    part = "report.json"
    try:
        report = CleaningReport(**json.loads((directory / part).read_text()))
        report.summary()  # reads every field: a garbled report fails here
        splits = {}
        for part in SPLITS:
            splits[part] = _open_split(directory / part)
        problem = _problem(splits, report, src_tok, tgt_tok)
    except Exception as error:  # pyarrow, json, datasets: whatever a damaged file raises
        lines = str(error).strip().splitlines()
        problem = f"{part}: {type(error).__name__}" + (f": {lines[0]}" if lines else "")
    if problem is None:
        return splits, report
    logger.warning("the tokenized cache %s cannot be used (%s): rebuilding it", directory, problem)
    shutil.rmtree(directory)
    return None


def _problem(
    splits: dict[str, datasets.Dataset],
    report: CleaningReport,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
) -> str | None:
    """What makes loaded splits unusable, read through in C: ids outside the vocabularies,
    lengths that disagree with the ids, a train split of other than the report's size."""
    if len(splits["train"]) != report.size:
        return f"train has {len(splits['train'])} pairs, its report says {report.size}"
    for split, data in splits.items():
        table = data.data.table
        for side, tok in (("src", src_tok), ("tgt", tgt_tok)):
            ids = pc.list_flatten(table.column(f"{side}_ids"))
            extremes = pc.min_max(ids)
            low, high = extremes["min"].as_py(), extremes["max"].as_py()
            if low is not None and not (low >= 0 and high < tok.vocab_size):
                return f"{split} {side}_ids run {low} to {high}, outside 0 to {tok.vocab_size - 1}"
            lengths = pc.list_value_length(table.column(f"{side}_ids"))
            if not pc.all(pc.equal(lengths, table.column(f"{side}_len"))).as_py():
                return f"{split} {side}_len disagrees with {side}_ids"
    return None


def _save(directory: Path, splits: dict[str, datasets.Dataset], report: CleaningReport) -> None:
    """Write into a temporary directory renamed at the end: a crash leaves no half cache."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
    try:
        for split, data in splits.items():
            data.save_to_disk(str(staging / split))
        (staging / "report.json").write_text(json.dumps(asdict(report)))
        staging.rename(directory)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        if is_disk_full(error):
            raise DiskFullError(
                f"cannot save the tokenized cache {directory}: the disk is full "
                f"({shutil.disk_usage(directory.parent).free:,} bytes free); nothing was kept. "
                "Free some space and run the command again"
            ) from None
        if not (directory / "report.json").is_file():  # not a concurrent run that won the race
            raise
    # The splits were tokenized in memory or in datasets' temporary files; reopen the saved
    # copies so that later reads are memory-mapped from the cache.
    for split in splits:
        splits[split] = _open_split(directory / split)


def _open_split(path: Path) -> datasets.Dataset:
    """A split `save_to_disk` wrote, memory-mapped. An empty one (a corpus without a test
    split) has no data file, which `load_from_disk` cannot open: it is rebuilt from its
    features."""
    if not json.loads((path / "state.json").read_text())["_data_files"]:
        return empty_dataset(datasets.DatasetInfo.from_directory(str(path)).features)
    return datasets.load_from_disk(str(path))
