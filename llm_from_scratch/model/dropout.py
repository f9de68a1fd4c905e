"""Dropout whose CPU mask is cut from 64-bit random words, four 16-bit draws per word.

aten's CPU `bernoulli_` draws one random number per element, which makes the mask of a dropout
cost more than the matrix product in front of it. Here one draw serves four elements, and the
keep/drop threshold is the drop probability rounded to 1/65,536, with the kept values scaled by
the exact inverse of the keep probability that results, so the expectation is unchanged. The mask
is at least fp32, since that scale rounded to bf16 would bias every kept value, and it is made
with arithmetic on the draws rather than a comparison, since aten's CPU comparisons and bool
conversions are slow, unvectorized passes. Other devices keep `F.dropout`, which is already fused
there.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_LEVELS = 1 << 16


def keep_mask(shape: torch.Size, p: float, dtype: torch.dtype, device: torch.device) -> Tensor:
    """0 with probability p (to 1/65,536), else 1 / (1 - that probability); `dtype` (fp32 or wider,
    which hold every 16-bit draw exactly) on `device`."""
    count = shape.numel()
    drop_levels = round(p * _LEVELS)
    words = torch.empty((count + 3) // 4, dtype=torch.int64, device=device)
    draws = words.random_(-(2**63), None).view(torch.int16)[:count].view(shape)
    # A draw d is kept when d >= threshold; the draws are integers, so clamping d - threshold + 1
    # to [0, 1] gives exactly 1 for kept and 0 for dropped, with no bool tensor in between.
    threshold = drop_levels - _LEVELS // 2
    mask = draws.to(dtype).sub_(threshold - 1).clamp_(0, 1)
    return mask.mul_(_LEVELS / (_LEVELS - drop_levels))


PROFILER_RANGE = "dropout"  # names the CPU path's operators in a torch.profiler trace (make bench)


class Dropout(nn.Dropout):
    """`nn.Dropout` with the cheaper CPU mask, and `add` for the residual sum in one pass."""

    def forward(self, x: Tensor) -> Tensor:
        if not self._on_cpu_path(x):
            return F.dropout(x, self.p, self.training)
        with torch.profiler.record_function(PROFILER_RANGE):
            return (x * self._mask(x)).to(x.dtype)

    def add(self, residual: Tensor, x: Tensor) -> Tensor:
        """residual + dropout(x)."""
        if not self._on_cpu_path(x):
            return residual + F.dropout(x, self.p, self.training)
        with torch.profiler.record_function(PROFILER_RANGE):
            return torch.addcmul(residual, x, self._mask(x))

    def _on_cpu_path(self, x: Tensor) -> bool:
        return self.training and self.p > 0.0 and x.device.type == "cpu"

    def _mask(self, x: Tensor) -> Tensor:
        return keep_mask(x.shape, self.p, torch.promote_types(x.dtype, torch.float32), x.device)
