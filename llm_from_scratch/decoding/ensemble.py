"""Ensemble decoding: several models translate as one, each step's next-token distribution being
the mean of the members' distributions (as in fairseq, Marian and OpenNMT).

`Ensemble` offers what the searches use of a model (`encode`, `decode`, `new_cache` and
`cfg.max_positions`), so greedy and beam search run on it unchanged. The members must share their
tokenizers (`Translator.from_checkpoint` checks the hashes); they may differ in size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import Tensor, nn

from llm_from_scratch.decoding.common import log_softmax_upcast
from llm_from_scratch.model.cache import DecoderCache
from llm_from_scratch.model.transformer import Seq2SeqTransformer


class EnsembleCache:
    """One decoder cache per member, reordered together."""

    def __init__(self, members: list[DecoderCache]) -> None:
        self.members = members

    def reorder(self, indices: Tensor, cross_indices: Tensor | None = None) -> None:
        for cache in self.members:
            cache.reorder(indices, cross_indices)


class Ensemble(nn.Module):
    """Models with one vocabulary that decode as one model (see the module docstring)."""

    def __init__(self, models: Sequence[Seq2SeqTransformer]) -> None:
        super().__init__()
        if not models:
            raise ValueError("an ensemble needs at least one model")
        vocab_sizes = {
            (m.encoder.embedding.token.num_embeddings, m.output_proj.out_features) for m in models
        }
        if len(vocab_sizes) > 1:
            raise ValueError(f"ensemble members have different vocabularies: {vocab_sizes}")
        self.members = nn.ModuleList(models)
        # The searches read only max_positions from it: the smallest positional table bounds all.
        self.cfg = replace(models[0].cfg, max_positions=min(m.cfg.max_positions for m in models))
        self._memory_widths = [m.cfg.d_model for m in models]

    def encode(self, src: Tensor, src_mask: Tensor) -> Tensor:
        """src (batch, src_len) → the members' memories side by side (batch, src_len, Σ d_model),
        so that the searches' row selections on the memory apply to every member."""
        return torch.cat([member.encode(src, src_mask) for member in self.members], dim=-1)

    def decode(
        self, tgt: Tensor, memory: Tensor, src_mask: Tensor, cache: EnsembleCache | None = None
    ) -> Tensor:
        """log of the members' mean next-token probabilities (batch, tgt_len, tgt_vocab).

        These are normalised logits: a log-softmax over them leaves them unchanged.
        """
        caches = cache.members if cache is not None else [None] * len(self.members)
        memories = memory.split(self._memory_widths, dim=-1)
        log_probs = torch.stack(
            [
                log_softmax_upcast(member.decode(tgt, member_memory, src_mask, member_cache))
                for member, member_memory, member_cache in zip(
                    self.members, memories, caches, strict=True
                )
            ]
        )  # (members, batch, tgt_len, tgt_vocab)
        return log_probs.logsumexp(dim=0) - math.log(len(self.members))

    def new_cache(self) -> EnsembleCache:
        return EnsembleCache([member.new_cache() for member in self.members])
