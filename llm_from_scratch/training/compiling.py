"""`torch.compile` of the training step's module: static shapes where the batches have few.

A graph compiled for static shapes is the fastest, and each distinct batch shape is compiled
once; Dynamo allows only `recompile_limit` compilations of one function (8 by default) and then
runs it eagerly without a word, so the limit is raised to the number of shapes, above the graphs
the process compiled before (a budget probe's model runs the same `forward`, and its graphs count
toward the same limit). Batches of many shapes (lengths padded to the longest of each batch)
compile dynamic shapes instead, as Dynamo does by itself after its first recompilation.
"""

from __future__ import annotations

import torch
import torch._dynamo
from torch import nn
from torch._dynamo.utils import counters

# More shapes than this compile dynamic: each static one costs a compilation (tens of seconds
# for the inductor on a GPU).
MAX_STATIC_SHAPES = 64
# Dynamo's limits under their current names, then those of older releases.
RECOMPILE_LIMITS = ("recompile_limit", "cache_size_limit")
ACCUMULATED_LIMITS = ("accumulated_recompile_limit", "accumulated_cache_size_limit")


def compiled(module: nn.Module, shapes: int) -> nn.Module:
    """`module` compiled for batches of `shapes` distinct shapes."""
    if shapes > MAX_STATIC_SHAPES:
        return torch.compile(module)
    allow_compilations(shapes)
    return torch.compile(module, dynamic=False)


def allow_compilations(count: int) -> None:
    """Let Dynamo compile a function `count` times beyond the graphs this process has compiled
    so far (never fewer than its default)."""
    config, wanted = torch._dynamo.config, compiled_graphs() + count
    for names in (RECOMPILE_LIMITS, ACCUMULATED_LIMITS):
        name = limit_name(config, names)
        setattr(config, name, max(getattr(config, name), wanted))


def compiled_graphs() -> int:
    """The graphs Dynamo has compiled in this process."""
    return counters["stats"]["unique_graphs"]


def limit_name(config: object, names: tuple[str, ...]) -> str:
    """The first of `names` that `config` (this torch's Dynamo config) has."""
    return next(name for name in names if hasattr(config, name))
