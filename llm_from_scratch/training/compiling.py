"""`torch.compile` of the training step's module: static shapes where the batches have few.

A graph compiled for static shapes is the fastest, and each distinct batch shape is compiled
once; Dynamo allows only `recompile_limit` compilations of one function (8 by default) and then
runs it eagerly without a word, so the limit is raised to the number of shapes. Batches of many
shapes (lengths padded to the longest of each batch) compile dynamic shapes instead, as
Dynamo does by itself after its first recompilation.
"""

from __future__ import annotations

import torch
import torch._dynamo
from torch import nn

# More shapes than this compile dynamic: each static one costs a compilation (tens of seconds
# for the inductor on a GPU).
MAX_STATIC_SHAPES = 64


def compiled(module: nn.Module, shapes: int) -> nn.Module:
    """`module` compiled for batches of `shapes` distinct shapes."""
    if shapes > MAX_STATIC_SHAPES:
        return torch.compile(module)
    allow_compilations(shapes)
    return torch.compile(module, dynamic=False)


def allow_compilations(count: int) -> None:
    """Let Dynamo compile a function `count` times (never fewer than its default)."""
    config = torch._dynamo.config
    config.recompile_limit = max(config.recompile_limit, count)
