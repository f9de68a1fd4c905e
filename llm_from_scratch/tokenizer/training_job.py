"""`make tokenizer`: train (or reuse) the tokenizer(s) of a dataset and report how they compress."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig

if TYPE_CHECKING:
    from llm_from_scratch.config import TokenizerJobConfig


def read_train_texts(data_cfg: DataConfig) -> tuple[list[str], list[str]]:
    """Source and target sentences of the train split, read by the data module."""
    train = load_split(data_cfg, "train")
    return train["src"], train["tgt"]


def tokenizer_paths(data_cfg: DataConfig, tok_cfg: TokenizerConfig) -> tuple[Path, Path]:
    """Where the source and target tokenizers live (the same path twice when shared).

    The name carries the dataset, language and vocabulary size, plus a digest of every setting
    that changes training, so a changed setting never picks up a stale file.
    """
    settings = {
        "vocab_size": tok_cfg.vocab_size,
        "character_coverage": tok_cfg.character_coverage,
        "normalization": tok_cfg.normalization,
        "pretokenizer": tok_cfg.pretokenizer,
        "special_tokens": list(tok_cfg.special_tokens),
        "detokenize_ja": data_cfg.detokenize_ja,  # the text trained on differs
        "source_style": data_cfg.source_style,
    }
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
    directory = Path(tok_cfg.dir)

    def path(lang: str) -> Path:
        return directory / f"{data_cfg.name}.{lang}.bpe{tok_cfg.vocab_size}.{digest}.json"

    if tok_cfg.shared:
        shared = path(f"{data_cfg.src_lang}-{data_cfg.tgt_lang}")
        return shared, shared
    return path(data_cfg.src_lang), path(data_cfg.tgt_lang)


def load_or_train_tokenizers(
    data_cfg: DataConfig, tok_cfg: TokenizerConfig, src_texts: list[str], tgt_texts: list[str]
) -> tuple[BPETokenizer, BPETokenizer]:
    """The (source, target) tokenizers: loaded when saved before, else trained and saved."""
    src_path, tgt_path = tokenizer_paths(data_cfg, tok_cfg)
    if tok_cfg.shared:
        shared = _load_or_train(src_path, tok_cfg, src_texts + tgt_texts)
        return shared, shared
    src_tok = _load_or_train(src_path, tok_cfg, src_texts)
    return src_tok, _load_or_train(tgt_path, tok_cfg, tgt_texts)


def _load_or_train(path: Path, tok_cfg: TokenizerConfig, texts: list[str]) -> BPETokenizer:
    if path.is_file():
        return BPETokenizer.load(path)
    tok = BPETokenizer.train(
        texts,
        tok_cfg.vocab_size,
        character_coverage=tok_cfg.character_coverage,
        normalization=tok_cfg.normalization,
        pretokenizer=tok_cfg.pretokenizer,
        special_tokens=tok_cfg.special_tokens,
    )
    tok.save(path)
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
    src_texts, tgt_texts = read_train_texts(config.data)
    src_path, tgt_path = tokenizer_paths(config.data, config.tokenizer)
    existed = src_path.is_file() and tgt_path.is_file()
    start = time.perf_counter()
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, src_texts, tgt_texts)
    elapsed = time.perf_counter() - start
    print(f"{'loaded' if existed else 'trained'} in {elapsed:.1f}s")
    for lang, tok, texts, path in (
        (config.data.src_lang, src_tok, src_texts, src_path),
        (config.data.tgt_lang, tgt_tok, tgt_texts, tgt_path),
    ):
        stats = compression_stats(tok, texts)
        print(
            f"{lang}: {path}  vocab size {tok.vocab_size}  "
            f"chars/token {stats.chars_per_token:.3f}  "
            f"byte fallback {stats.byte_fallback_rate:.4%} of tokens  hash {tok.hash[:12]}"
        )
