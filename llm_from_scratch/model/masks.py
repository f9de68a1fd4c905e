"""Attention masks. The one convention of this package, used everywhere:

    A mask is a bool tensor and True means "may attend". A padding mask has shape (batch, seq_len)
    and is True at real tokens, False at padding.

This is the convention of `F.scaled_dot_product_attention`'s bool `attn_mask`, and the opposite of
`torch.nn.Transformer`'s `*_key_padding_mask` and bool `*_mask` arguments (True = NOT allowed):
convert at the boundary with `~mask` when talking to those.
"""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """(batch, seq_len) bool, True at real tokens."""
    return tokens != pad_id


def key_padding_to_attention_mask(mask: Tensor) -> Tensor:
    """(batch, seq_len) padding mask → (batch, 1, 1, seq_len), broadcast over heads and queries."""
    return mask[:, None, None, :]


def causal_mask(query_len: int, key_len: int, device: torch.device | None = None) -> Tensor:
    """(query_len, key_len) bool: query i may attend keys up to its own position.

    The queries are the *last* `query_len` positions of the key sequence (bottom-right aligned),
    which is what an incremental decoder needs when it feeds several new tokens after a cache of
    `key_len - query_len` tokens. With `query_len == key_len` it is the usual lower triangle.
    """
    offset = key_len - query_len
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).tril(diagonal=offset)
