"""The torch engine: a checkpoint's model, or an `Ensemble` of several, as a `SearchModel`.

Its searches are `batched.decode_pieces`, under the autocast the `Translator` chooses
(`decoding.precision`); `teacher_forced_attention` gives the server's heatmaps and the training
figures their weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from llm_from_scratch.decoding.batched import decode_pieces
from llm_from_scratch.decoding.common import Attention, Hypothesis
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.ensemble import Ensemble
from llm_from_scratch.model.transformer import Decoder, Encoder, Seq2SeqTransformer
from llm_from_scratch.tokenizer.bpe import BPETokenizer


class TorchModel:
    """`model` searched with `batched.decode_pieces`; `use_cache=False` re-runs the decoder over
    the whole prefix at each step (the reference the KV cache is checked against)."""

    name = "torch"
    autocasts = True

    def __init__(
        self,
        model: Seq2SeqTransformer | Ensemble,
        src_tok: BPETokenizer,
        tgt_tok: BPETokenizer,
        use_cache: bool = True,
    ) -> None:
        self.model = model.eval()
        self.cfg = model.cfg
        self.src_tok, self.tgt_tok = src_tok, tgt_tok
        self.use_cache = use_cache
        self.device = next(model.parameters()).device

    def decode_pieces(
        self, pieces: Sequence[Sequence[int]], cfg: DecodingConfig
    ) -> list[list[Hypothesis]]:
        return decode_pieces(self.model, pieces, self.src_tok, self.tgt_tok, cfg, self.use_cache)

    def attention(self, src_ids: Sequence[int], tgt_out: Sequence[int]) -> Attention | None:
        if not isinstance(self.model, Seq2SeqTransformer):
            return None  # an ensemble's members attend each their own way
        weights = teacher_forced_attention(self.model, src_ids, tgt_out, self.tgt_tok.bos_id)
        return Attention(list(range(1, len(weights) + 1)), weights)

    def call_between_steps(self, hook: Callable[[], None]) -> None:
        for module in self.model.modules():
            if isinstance(module, Encoder | Decoder):
                module.register_forward_pre_hook(lambda module, args: hook())


@torch.no_grad()
def teacher_forced_attention(
    model: Seq2SeqTransformer, src_ids: Sequence[int], tgt_out: Sequence[int], bos_id: int
) -> torch.Tensor:
    """Cross-attention (layers, tgt_len, src_len) of one sentence pair, heads averaged: row i is
    the step that predicts `tgt_out[i]` from BOS and the targets before it, column j is
    `src_ids[j]` (EOS included, as the encoder gets it)."""
    device = next(model.parameters()).device
    src = torch.tensor([list(src_ids)], device=device)
    tgt_in = torch.tensor([[bos_id, *tgt_out[:-1]]], device=device)
    src_mask = torch.ones_like(src, dtype=torch.bool)
    memory = model.encode(src, src_mask)
    # (layers, batch, heads, tgt_len, src_len) → (layers, tgt_len, src_len)
    return model.cross_attention(tgt_in, memory, src_mask)[:, 0].mean(1)
