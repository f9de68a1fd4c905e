"""`make tokenizer`: train (or reuse) the tokenizer(s) of a dataset and report how they compress.

`load_or_train_tokenizers` is also how `make train` gets its tokenizers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import hydra
from omegaconf import MISSING, DictConfig

from llm_from_scratch.atomic import build_lock
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.sources import fetch_dataset
from llm_from_scratch.paths import PathsConfig, config_dir
from llm_from_scratch.programs.common import exit_on_user_error, register_schema
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig

logger = logging.getLogger(__name__)


@dataclass
class TokenizerJobConfig:
    """`configs/train_tokenizer.yaml`."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = MISSING
    tokenizer: TokenizerConfig = MISSING


register_schema("train_tokenizer_schema", TokenizerJobConfig)


def read_train_texts(data_cfg: DataConfig, paths: PathsConfig) -> tuple[list[str], list[str]]:
    """Source and target sentences of the train split, read by the data module."""
    train = load_split(data_cfg, "train", paths)
    return list(train["src"]), list(train["tgt"])


def tokenizer_settings(data_cfg: DataConfig, tok_cfg: TokenizerConfig) -> dict:
    """Everything a trained tokenizer depends on: the whole tokenizer config and the settings
    that say which texts the train split holds (`data.corpus`)."""
    return {
        "dataset": data_cfg.name,
        "corpus": asdict(data_cfg.corpus),
        "tokenizer": asdict(tok_cfg),
    }


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
    corpus = data_cfg.corpus

    def path(lang: str) -> Path:
        return directory / f"{data_cfg.name}.{lang}.bpe{tok_cfg.vocab_size}.{digest}.json"

    if tok_cfg.shared:
        shared = path(f"{corpus.src_lang}-{corpus.tgt_lang}")
        return shared, shared
    return path(corpus.src_lang), path(corpus.tgt_lang)


def load_or_train_tokenizers(
    data_cfg: DataConfig, tok_cfg: TokenizerConfig, paths: PathsConfig
) -> tuple[BPETokenizer, BPETokenizer]:
    """The (source, target) tokenizers: loaded when saved before, else trained on the train
    split (read only then) and saved."""
    src_path, tgt_path = tokenizer_paths(data_cfg, tok_cfg, paths)
    texts: tuple[list[str], list[str]] | None = None

    def train_texts() -> tuple[list[str], list[str]]:
        nonlocal texts
        texts = texts or read_train_texts(data_cfg, paths)
        return texts

    corpus = data_cfg.corpus
    if tok_cfg.shared:
        shared = _load_or_train(
            src_path,
            tok_cfg,
            lambda: [*train_texts()[0], *train_texts()[1]],
            f"shared {corpus.src_lang}-{corpus.tgt_lang}",
            tok_cfg.normalization,
        )
        return shared, shared
    source = _load_or_train(
        src_path, tok_cfg, lambda: train_texts()[0], corpus.src_lang, tok_cfg.normalization
    )
    target = _load_or_train(
        tgt_path, tok_cfg, lambda: train_texts()[1], corpus.tgt_lang, tok_cfg.target_normalization
    )
    return source, target


def _load_or_train(
    path: Path,
    tok_cfg: TokenizerConfig,
    texts: Callable[[], list[str]],
    label: str,
    normalization: str,
) -> BPETokenizer:
    # Locked: a second run that needs this tokenizer waits for the first to train it, then loads it.
    with build_lock(path, f"the tokenizer {path}"):
        if path.is_file():
            return BPETokenizer.load(path)
        return _train(path, tok_cfg, texts, label, normalization)


def _train(
    path: Path,
    tok_cfg: TokenizerConfig,
    texts: Callable[[], list[str]],
    label: str,
    normalization: str,
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


@dataclass
class CompressionStats:
    chars_per_token: float
    byte_fallback_rate: float  # share of tokens that are <0xNN> byte tokens


def compression_stats(tok: BPETokenizer, texts: list[str]) -> CompressionStats:
    chars = tokens = byte_tokens = 0
    for text in texts:
        ids = tok.encode(text)
        chars += len(text)
        tokens += len(ids)
        byte_tokens += sum(map(tok.is_byte_token, ids))
    return CompressionStats(chars / max(tokens, 1), byte_tokens / max(tokens, 1))


def run(config: TokenizerJobConfig) -> None:
    """Train the configured tokenizer(s) on the train split (or reuse saved ones) and report."""
    src_path, tgt_path = tokenizer_paths(config.data, config.tokenizer, config.paths)
    existed = src_path.is_file() and tgt_path.is_file()
    start = time.perf_counter()
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
    elapsed = time.perf_counter() - start
    print(f"{'loaded' if existed else 'trained'} in {elapsed:.1f}s")
    src_texts, tgt_texts = read_train_texts(config.data, config.paths)
    corpus = config.data.corpus
    for lang, tok, texts, path in (
        (corpus.src_lang, src_tok, src_texts, src_path),
        (corpus.tgt_lang, tgt_tok, tgt_texts, tgt_path),
    ):
        stats = compression_stats(tok, texts)
        print(
            f"{lang}: {path}  vocab size {tok.vocab_size}  "
            f"chars/token {stats.chars_per_token:.3f}  "
            f"byte fallback {stats.byte_fallback_rate:.4%} of tokens  hash {tok.hash[:12]}"
        )


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="train_tokenizer")
def main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        config = to_schema(cfg, TokenizerJobConfig)
        fetch_dataset(config.data, config.paths)
        run(config)
