"""Shared builders for the model tests: small configs, seeded models, padded random batches."""

from __future__ import annotations

import torch

from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.transformer import Seq2SeqTransformer

PAD_ID = 0
SRC_VOCAB = 37
TGT_VOCAB = 41


def small_config(**overrides: object) -> ModelConfig:
    """Two layers each side so that layer stacking and caching across layers are exercised."""
    fields: dict[str, object] = dict(
        d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=48, dropout=0.0
    )
    fields.update(overrides)
    return ModelConfig(**fields)  # type: ignore[arg-type]


def build_model(
    seed: int = 0, shared_vocab: bool = False, **overrides: object
) -> Seq2SeqTransformer:
    torch.manual_seed(seed)
    vocab = SRC_VOCAB if shared_vocab else TGT_VOCAB
    model = Seq2SeqTransformer(small_config(**overrides), SRC_VOCAB, vocab, PAD_ID, shared_vocab)
    return model.eval()


def padded_batch(
    lengths: list[int], vocab: int, seed: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded random tokens (batch, max_len) and their mask (True = real token)."""
    generator = torch.Generator().manual_seed(seed)
    max_len = max(lengths)
    tokens = torch.randint(1, vocab, (len(lengths), max_len), generator=generator)
    mask = torch.arange(max_len)[None, :] < torch.tensor(lengths)[:, None]
    return tokens.masked_fill(~mask, PAD_ID), mask
