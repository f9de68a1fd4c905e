"""`torch.compile` of the training step's module: static shapes where the batches have few.

A graph compiled for static shapes is the fastest, and each distinct batch shape is compiled
once; Dynamo allows only `recompile_limit` compilations of one function (8 by default) and then
runs it eagerly without a word, so the limit is raised to the number of shapes, above the graphs
the process compiled before (a budget probe's model runs the same `forward`, and its graphs count
toward the same limit). Batches of many shapes (lengths padded to the longest of each batch)
compile dynamic shapes instead, as Dynamo does by itself after its first recompilation.

`training.compile_cache` names a file of the compiler's cache artifacts (torch's "mega-cache":
compiled kernels, AOTAutograd and inductor graphs): loaded before the run compiles anything, and
written at its end with the graphs this process compiled or loaded, so that a later run of the
same model and shapes on another machine (a GPU lease) skips the inductor's code generation.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

from llm_from_scratch.atomic import atomic_writer

logger = logging.getLogger(__name__)

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
    import torch._dynamo  # slow to import: only a run that compiles pays for it

    config, wanted = torch._dynamo.config, compiled_graphs() + count
    for names in (RECOMPILE_LIMITS, ACCUMULATED_LIMITS):
        name = limit_name(config, names)
        setattr(config, name, max(getattr(config, name), wanted))


def compiled_graphs() -> int:
    """The graphs Dynamo has compiled in this process."""
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def limit_name(config: object, names: tuple[str, ...]) -> str:
    """The first of `names` that `config` (this torch's Dynamo config) has."""
    return next(name for name in names if hasattr(config, name))


def load_compile_cache(path: Path) -> None:
    """Seed the compiler's caches from `path` (`save_compile_cache`'s), where it exists."""
    if not path.is_file():
        logger.info("no compile cache at %s yet: compiling from scratch", path)
        return
    info = torch.compiler.load_cache_artifacts(path.read_bytes())
    count = sum(map(len, info.artifacts.values())) if info is not None else 0
    logger.info("compile cache: %d artifacts from %s", count, path)


def save_compile_cache(path: Path) -> None:
    """Write the cache artifacts of the graphs this process compiled or loaded to `path` (none
    compiled: nothing written)."""
    saved = torch.compiler.save_cache_artifacts()
    if saved is None or not saved[0]:
        return
    artifacts, info = saved
    with atomic_writer(path) as file:
        file.write(artifacts)
    count = sum(map(len, info.artifacts.values()))
    logger.info(
        "compile cache: %d artifacts, %.1f MiB, into %s", count, len(artifacts) / 2**20, path
    )
