"""A run's tokenizers: loaded when trained before for the same settings, else trained on the
train split and saved. `make train` and `make tokenizer` get them here.

They live in the training stage, the lowest layer that may read both the data (the train split)
and the tokenizer stage (BPE training), which `tests/test_layering.py` keeps apart.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

import datasets

from llm_from_scratch.atomic import build_lock
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.datamodule import drop_unset_corpus_keys
from llm_from_scratch.data.mixture import weighted_train
from llm_from_scratch.data.placeholders import NAME_PLACEHOLDERS, NUMBER_MASKING, PLACEHOLDERS
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.tokenizer.pretokenize import PRETOKENIZERS
from llm_from_scratch.tokenizer.sampling import sample_indices, sentence_keys

logger = logging.getLogger(__name__)


def read_train_texts(data_cfg: DataConfig, paths: PathsConfig) -> tuple[list[str], list[str]]:
    """Source and target sentences of the train split, read by the data module."""
    train = load_split(data_cfg, "train", paths)
    return train["src"][:], train["tgt"][:]


def sample_train_texts(
    data_cfg: DataConfig, tok_cfg: TokenizerConfig, paths: PathsConfig
) -> tuple[list[str], list[str]]:
    """What the tokenizers learn from: at most `tokenizer.max_sentences` sentences of each side
    of the train split (tokenizer/sampling.py), in corpus order; all of them when fewer. A
    mixture's train split is its members' deduplicated pairs in the proportions its weights give
    them, as the model sees them, so that a small corpus weighted up is not starved of pieces."""
    train = weighted_train(data_cfg, load_split(data_cfg, "train", paths))
    return _sample(train, "src", tok_cfg), _sample(train, "tgt", tok_cfg)


def _sample(train: datasets.Dataset, side: str, tok_cfg: TokenizerConfig) -> list[str]:
    if len(train) <= tok_cfg.max_sentences:
        return train[side][:]
    keys = sentence_keys(_stream(train, side), tok_cfg.sample_seed)
    chosen = sample_indices(keys, tok_cfg.max_sentences)
    logger.info("sampled %s of %s %s sentences", f"{len(chosen):,}", f"{len(train):,}", side)
    return train.select(chosen)[side][:]


def _stream(train: datasets.Dataset, side: str) -> Iterator[str]:
    """The texts of one column, read a batch at a time from the memory-mapped table."""
    for batch in train.select_columns([side]).iter(batch_size=10_000):
        yield from batch[side]


def tokenizer_settings(data_cfg: DataConfig, tok_cfg: TokenizerConfig) -> dict:
    """Everything a trained tokenizer depends on: the whole tokenizer config, the pre-tokenizer
    pattern it is trained with (its name's latest version: a new version must not pick up a file
    trained with an older one), the settings that say which texts the train split holds
    (`data.corpus`; a mixture's members), and which side the model reads (`data.direction`: the
    source and target tokenizers normalize differently)."""
    settings = {
        "dataset": data_cfg.name,
        "corpus": asdict(data_cfg.corpus),
        "direction": f"{data_cfg.source_lang}-{data_cfg.target_lang}",
        "tokenizer": asdict(tok_cfg),
        "pattern": PRETOKENIZERS[tok_cfg.pretokenizer],
    }
    for key in ("number_placeholders", "name_placeholders", "sentence_pairs"):
        if getattr(data_cfg, key):  # the train texts hold them (or more of some sentences)
            settings[key] = True
    if data_cfg.number_placeholders:
        settings["number_masking"] = NUMBER_MASKING
    if data_cfg.mixture:
        # The members' pairs in their weights' proportions: a change of weights retrains.
        settings["mixture"] = {name: asdict(member) for name, member in data_cfg.mixture.items()}
        settings["mixture_sampling"] = {
            "temperature": data_cfg.temperature,
            "seed": data_cfg.mixture_seed,
        }
    drop_unset_corpus_keys(settings)
    return settings


def tokenizer_paths(
    data_cfg: DataConfig, tok_cfg: TokenizerConfig, paths: PathsConfig
) -> tuple[Path, Path]:
    """Where the source and target tokenizers live (the same path twice when shared).

    The name carries the dataset, language and vocabulary size, plus a digest of
    `tokenizer_settings`, so a changed setting never picks up a stale file.
    """
    settings = json.dumps(tokenizer_settings(data_cfg, tok_cfg), sort_keys=True)
    digest = hashlib.sha256(settings.encode()).hexdigest()[:8]
    directory = Path(paths.tokenizer_dir)
    source, target = data_cfg.source_lang, data_cfg.target_lang

    def path(lang: str) -> Path:
        return directory / f"{data_cfg.name}.{lang}.bpe{tok_cfg.vocab_size}.{digest}.json"

    if tok_cfg.shared:
        shared = path(f"{source}-{target}")
        return shared, shared
    return path(source), path(target)


def load_or_train_tokenizers(
    data_cfg: DataConfig, tok_cfg: TokenizerConfig, paths: PathsConfig
) -> tuple[BPETokenizer, BPETokenizer]:
    """The (source, target) tokenizers: loaded when saved before, else trained on (a sample of)
    the train split, read only then, and saved."""
    src_path, tgt_path = tokenizer_paths(data_cfg, tok_cfg, paths)
    texts: tuple[list[str], list[str]] | None = None

    def train_texts() -> tuple[list[str], list[str]]:
        nonlocal texts
        texts = texts or sample_train_texts(data_cfg, tok_cfg, paths)
        return texts

    source_lang, target_lang = data_cfg.source_lang, data_cfg.target_lang
    required = required_characters(data_cfg)
    if tok_cfg.shared:
        shared = _load_or_train(
            src_path,
            tok_cfg,
            lambda: [*train_texts()[0], *train_texts()[1]],
            f"shared {source_lang}-{target_lang}",
            tok_cfg.normalization,
            required,
        )
        return shared, shared
    source = _load_or_train(
        src_path, tok_cfg, lambda: train_texts()[0], source_lang, tok_cfg.normalization, required
    )
    target = _load_or_train(
        tgt_path,
        tok_cfg,
        lambda: train_texts()[1],
        target_lang,
        tok_cfg.target_normalization,
        required,
    )
    return source, target


def required_characters(data_cfg: DataConfig) -> tuple[str, ...]:
    """The placeholders the train pairs of `data_cfg` hold: rare as they are, each must be a
    token of its own on both sides."""
    return (PLACEHOLDERS if data_cfg.number_placeholders else ()) + (
        NAME_PLACEHOLDERS if data_cfg.name_placeholders else ()
    )


def _load_or_train(
    path: Path,
    tok_cfg: TokenizerConfig,
    texts: Callable[[], list[str]],
    label: str,
    normalization: str,
    required: Sequence[str] = (),
) -> BPETokenizer:
    # Locked: a second run that needs this tokenizer waits for the first to train it, then loads it.
    with build_lock(path, f"the tokenizer {path}"):
        if path.is_file():
            return BPETokenizer.load(path)
        return _train(path, tok_cfg, texts, label, normalization, required)


def _train(
    path: Path,
    tok_cfg: TokenizerConfig,
    texts: Callable[[], list[str]],
    label: str,
    normalization: str,
    required: Sequence[str],
) -> BPETokenizer:
    logger.info("training the %s tokenizer: BPE, %s pieces", label, f"{tok_cfg.vocab_size:,}")
    started = time.perf_counter()
    sentences = texts()
    tok = BPETokenizer.train(
        sentences,
        tok_cfg.vocab_size,
        character_coverage=tok_cfg.character_coverage,
        normalization=normalization,
        pretokenizer=tok_cfg.pretokenizer,
        special_tokens=tok_cfg.special_tokens,
        required_characters=required,
    )
    tok.save(path)
    seconds = time.perf_counter() - started
    logger.info(
        "trained the %s tokenizer on %s sentences in %.1f s: %s",
        label,
        f"{len(sentences):,}",
        seconds,
        path,
    )
    return tok
