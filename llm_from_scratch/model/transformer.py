"""The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017).

    source tokens ─▶ Embedding ─▶ EncoderLayer × N ─▶ (LayerNorm) ─▶ memory
    target tokens ─▶ Embedding ─▶ DecoderLayer × N ─▶ (LayerNorm) ─▶ Linear ─▶ logits
                                   (self-attn, cross-attn to memory, feed-forward)

The final LayerNorms exist only in pre-LN mode, where the residual stream is otherwise never
normalized. Masks follow the convention of `llm_from_scratch.model.masks`: bool, True = may attend;
`src_mask` is (batch, src_len), True at real tokens.

Dropout, as in the paper: on the embeddings-plus-positions and on every sublayer's output before
the residual addition; not on attention weights or the feed-forward hidden layer.

Initialization: every Linear weight is Xavier-uniform (each of the query/key/value blocks of the
fused input projection separately, as if they were three layers) with zero biases; embedding
tables and an untied output projection are N(0, 1/d_model) (see `Embedding`); LayerNorms start
as the identity.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from llm_from_scratch.model.attention import MultiHeadAttention
from llm_from_scratch.model.cache import DecoderCache
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.layers import DecoderLayer, Embedding, EncoderLayer
from llm_from_scratch.model.masks import causal_mask, key_padding_to_attention_mask, padding_mask


def _final_norm(cfg: ModelConfig) -> nn.Module:
    return nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()


class Encoder(nn.Module):
    def __init__(self, cfg: ModelConfig, embedding: Embedding) -> None:
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.final_norm = _final_norm(cfg)

    def forward(self, src: Tensor, src_mask: Tensor) -> Tensor:
        """src (batch, src_len) → memory (batch, src_len, d_model)."""
        attention_mask = key_padding_to_attention_mask(src_mask)  # (batch, 1, 1, src_len)
        x = self.embedding(src)
        for layer in self.layers:
            x = layer(x, attention_mask)
        return self.final_norm(x)


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig, embedding: Embedding) -> None:
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.final_norm = _final_norm(cfg)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: DecoderCache | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """tgt (batch, tgt_len) → hidden states (batch, tgt_len, d_model), and with `need_weights`
        the cross-attention weights (layers, batch, heads, tgt_len, src_len)."""
        start = 0 if cache is None else cache.length
        tgt_len = tgt.size(1)
        # Target padding needs no mask: it only ever follows the real tokens, which the causal mask
        # already keeps from seeing it, and the loss ignores padded positions.
        self_mask, is_causal = None, False
        if cache is None:
            is_causal = True  # SDPA's fused causal path, no mask tensor
        elif tgt_len > 1:
            self_mask = causal_mask(tgt_len, start + tgt_len, device=tgt.device)
        # else: one new token, which may attend to every cached position and itself.
        memory_mask = key_padding_to_attention_mask(src_mask)  # (batch, 1, 1, src_len)

        x = self.embedding(tgt, start)
        all_weights = []
        for index, layer in enumerate(self.layers):
            x, weights = layer(
                x,
                memory,
                memory_mask,
                self_mask=self_mask,
                is_causal=is_causal,
                self_cache=None if cache is None else cache.self_attention[index],
                cross_cache=None if cache is None else cache.cross_attention[index],
                need_weights=need_weights,
            )
            all_weights.append(weights)
        cross_weights = torch.stack(all_weights) if need_weights else None
        return self.final_norm(x), cross_weights


class Seq2SeqTransformer(nn.Module):
    """Encoder–decoder Transformer returning next-token logits over the target vocabulary.

    `shared_vocab`: source and target use one vocabulary, so encoder and decoder share one
    embedding table; with `cfg.tie_embeddings` (the default) the output projection is the decoder's
    embedding table too, so all three are one matrix.
    `pad_id` comes from the tokenizer; it builds `src_mask` when `encode` is not given one.
    """

    def __init__(
        self,
        cfg: ModelConfig,
        src_vocab_size: int,
        tgt_vocab_size: int,
        pad_id: int,
        shared_vocab: bool = False,
    ) -> None:
        super().__init__()
        if shared_vocab and src_vocab_size != tgt_vocab_size:
            raise ValueError(
                f"shared_vocab needs equal vocabularies, got source {src_vocab_size} "
                f"and target {tgt_vocab_size}"
            )
        self.cfg = cfg
        self.pad_id = pad_id
        src_embedding = Embedding(src_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        tgt_embedding = (
            src_embedding
            if shared_vocab
            else Embedding(tgt_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        )
        self.encoder = Encoder(cfg, src_embedding)
        self.decoder = Decoder(cfg, tgt_embedding)
        self.output_proj = nn.Linear(cfg.d_model, tgt_vocab_size, bias=False)
        self._init_weights()
        if cfg.tie_embeddings:
            self.output_proj.weight = tgt_embedding.token.weight

    def _init_weights(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        for module in self.modules():
            if isinstance(module, MultiHeadAttention):
                for block in module.in_proj.weight.chunk(3):  # query, key, value
                    nn.init.xavier_uniform_(block)
        for weight in (
            self.encoder.embedding.token.weight,
            self.decoder.embedding.token.weight,
            self.output_proj.weight,
        ):
            nn.init.normal_(weight, std=self.cfg.d_model**-0.5)

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """src (batch, src_len) token ids → memory (batch, src_len, d_model).

        src_mask: (batch, src_len) bool, True at real tokens; by default `src != pad_id`.
        """
        if src_mask is None:
            src_mask = padding_mask(src, self.pad_id)
        return self.encoder(src, src_mask)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """Target tokens (batch, tgt_len) → logits (batch, tgt_len, tgt_vocab).

        Without a cache, `tgt` is the whole target prefix and self-attention is causal. With one
        (from `new_cache()`), `tgt` holds only the tokens after those already cached, their
        positions continue from `cache.length`, and the cache grows in place; cross-attention
        keys/values are computed from `memory` on the first call and reused afterwards.
        """
        hidden, _ = self.decoder(tgt, memory, src_mask, cache)
        return self.output_proj(hidden)

    def cross_attention(self, tgt: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        """The cross-attention weights (layers, batch, heads, tgt_len, src_len) of the whole
        target prefix `tgt` (computed outside SDPA's fused kernels, which do not return them)."""
        _, weights = self.decoder(tgt, memory, src_mask, need_weights=True)
        return weights

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: logits (batch, tgt_len, tgt_vocab) for every position of `tgt_in`."""
        hidden, _ = self.decoder(tgt_in, self.encode(src, src_mask), src_mask)
        return self.output_proj(hidden)

    def new_cache(self) -> DecoderCache:
        """An empty cache for incremental decoding with `decode(..., cache=...)`."""
        return DecoderCache(len(self.decoder.layers))

    def num_parameters(self) -> int:
        """Trainable parameters, a tied matrix counted once."""
        return sum(p.numel() for p in self.parameters())
