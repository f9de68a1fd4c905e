"""Incremental decoding state: the keys and values a decoder has already computed.

Without a cache, every decoding step would re-run the decoder over the whole prefix. With one, a
step feeds only the newest token(s): self-attention appends their keys/values to the cached ones,
and cross-attention keys/values, which depend only on the encoder output, are computed on the first
step and reused by all later ones.
"""

from __future__ import annotations

import torch
from torch import Tensor


class KeyValueCache:
    """Keys and values of one attention module, each (batch, heads, seq_len, head_dim)."""

    def __init__(self) -> None:
        self.key: Tensor | None = None
        self.value: Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.key is None else self.key.size(2)

    def append(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new positions' keys/values; return all cached ones, new included."""
        if self.key is None or self.value is None:
            self.key, self.value = key, value
        else:
            self.key = torch.cat([self.key, key], dim=2)
            self.value = torch.cat([self.value, value], dim=2)
        return self.key, self.value

    def reorder(self, indices: Tensor) -> None:
        if self.key is not None and self.value is not None:
            self.key = self.key.index_select(0, indices)
            self.value = self.value.index_select(0, indices)


class DecoderCache:
    """Per decoder layer: the self-attention K/V (growing) and the cross-attention K/V (fixed).

    Made empty by `Seq2SeqTransformer.new_cache()` and filled by `Seq2SeqTransformer.decode()`.
    """

    def __init__(self, n_layers: int) -> None:
        self.self_attention = [KeyValueCache() for _ in range(n_layers)]
        self.cross_attention = [KeyValueCache() for _ in range(n_layers)]

    @property
    def length(self) -> int:
        """Target tokens cached so far: the position the next token will take."""
        return self.self_attention[0].length

    def reorder(self, indices: Tensor, cross_indices: Tensor | None = None) -> None:
        """Select batch rows in place: `indices` of the self-attention keys/values and
        `cross_indices` of the cross-attention ones (None leaves those as they are).

        Each is a LongTensor (new_batch,) of rows of the current batch; rows may repeat, so
        new_batch may differ from the current batch size (expanding each source into beams).
        Rows with equal memory have equal cross-attention keys/values: beam search reorders a
        sentence's beams by parent without touching them. The caller selects the rows of
        `src_mask` (and `memory`) that the cross-attention ones now hold.
        """
        for kv_cache in self.self_attention:
            kv_cache.reorder(indices)
        if cross_indices is not None:
            for kv_cache in self.cross_attention:
                kv_cache.reorder(cross_indices)
