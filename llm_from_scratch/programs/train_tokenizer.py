"""`make tokenizer`: train (or reuse) the tokenizer(s) of a dataset and report how they compress.

The tokenizers are those `make train` loads or trains (`training/tokenizers.py`).
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field

import hydra
from omegaconf import MISSING, DictConfig

from llm_from_scratch.atomic import check_writable
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.paths import PathsConfig, config_dir
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.programs.common import (
    check_raw_data_writable,
    compose_before_hydra,
    register_schema,
)
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.tokenizers import (
    load_or_train_tokenizers,
    sample_train_texts,
    tokenizer_paths,
)

logger = logging.getLogger(__name__)


@dataclass
class TokenizerJobConfig:
    """`configs/train_tokenizer.yaml`."""

    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = MISSING
    tokenizer: TokenizerConfig = MISSING


register_schema("train_tokenizer_schema", TokenizerJobConfig)


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
    """Train the configured tokenizer(s) on the train split (or reuse saved ones) and report how
    they compress the sentences they learn from (`tokenizer.max_sentences` a side at most)."""
    src_path, tgt_path = tokenizer_paths(config.data, config.tokenizer, config.paths)
    existed = src_path.is_file() and tgt_path.is_file()
    start = time.perf_counter()
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
    elapsed = time.perf_counter() - start
    print(f"{'loaded' if existed else 'trained'} in {elapsed:.1f}s")
    src_texts, tgt_texts = sample_train_texts(config.data, config.tokenizer, config.paths)
    for lang, tok, texts, path in (
        (config.data.source_lang, src_tok, src_texts, src_path),
        (config.data.target_lang, tgt_tok, tgt_texts, tgt_path),
    ):
        stats = compression_stats(tok, texts)
        print(
            f"{lang}: {path}  vocab size {tok.vocab_size}  "
            f"chars/token {stats.chars_per_token:.3f}  "
            f"byte fallback {stats.byte_fallback_rate:.4%} of tokens  hash {tok.hash[:12]}"
        )


def check_writable_outputs(config: TokenizerJobConfig) -> None:
    """Refuse, before any work, a tokenizer to train (or a corpus to fetch) whose directory
    cannot be written; saved tokenizers are only read."""
    check_raw_data_writable(config.data, config.paths)
    for path in tokenizer_paths(config.data, config.tokenizer, config.paths):
        if not path.is_file():
            check_writable(path.parent, f"the tokenizer {path}", "set paths.tokenizer_dir=DIR")


def main() -> None:
    """`scripts/train_tokenizer.py`: a bad config is refused in one line before Hydra starts."""
    with exit_on_user_error():
        compose_before_hydra("train_tokenizer", sys.argv[1:], TokenizerJobConfig)
    _main()


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="train_tokenizer")
def _main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        config = to_schema(cfg, TokenizerJobConfig)
        check_writable_outputs(config)
        fetch_data(config.data, config.paths)
        run(config)
