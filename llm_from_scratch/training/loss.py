"""Label-smoothed cross entropy over real target tokens."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def summed_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, pad_id: int, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Loss summed over the non-pad positions of `targets` (batch, tgt_len).

    A sum rather than a mean: the trainer divides by the target tokens of the whole accumulated
    batch, so that k micro-batches give exactly the update of one batch k times larger.
    """
    return F.cross_entropy(
        logits.flatten(0, 1).float(),  # (batch * tgt_len, vocab); fp32 for a stable softmax
        targets.flatten(),
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
        reduction="sum",
    )
