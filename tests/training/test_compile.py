"""`training.compile`: the model and its loss compile as one module, each batch shape once, and
never again after a pass over the shapes, not even for another trainer of the same model (the
budget planner's probes are such trainers). Dynamo's `eager` backend traces as the inductor
does, without its code generation, so that this runs on a CPU in seconds."""

from __future__ import annotations

import functools
import itertools

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from llm_from_scratch.training import compiling
from llm_from_scratch.training.trainer import Trainer

from .test_trainer import fp32

SHAPES = 10  # more than Dynamo's default limit of 8 compilations


@pytest.fixture
def eager_dynamo(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    torch._dynamo.reset()
    counters.clear()
    # Dynamo's own patch: monkeypatch's undo leaves its config module without the key.
    with torch._dynamo.config.patch(recompile_limit=8):
        yield
    torch._dynamo.reset()


def graphs() -> int:
    return counters["stats"]["unique_graphs"]


def test_each_batch_shape_compiles_once(copy_task, tmp_path, eager_dynamo, monkeypatch):
    config, data, _ = copy_task
    monkeypatch.setattr(compiling, "MAX_STATIC_SHAPES", 10_000)  # static, however many
    trainer = Trainer(fp32(config, tmp_path / "run", compile="true"), data)
    epoch_shapes = trainer._batch_shapes()
    assert trainer.forward_model._orig_mod is trainer.model_loss  # compiled once, not twice
    assert torch._dynamo.config.recompile_limit == max(8, epoch_shapes)
    by_shape = {}  # a step of each shape, in the epoch's order
    for group in itertools.islice(trainer.batches(), 200):
        by_shape.setdefault((group[0].src.shape, group[0].tgt_in.shape), group)
        if len(by_shape) == SHAPES:
            break
    groups, shapes = list(by_shape.values()), set(by_shape)
    assert len(shapes) == SHAPES <= epoch_shapes

    trainer.update(groups[0])
    per_shape = graphs()
    assert per_shape >= 1
    for group in groups[1:]:
        trainer.update(group)
    assert graphs() <= per_shape * len(shapes)  # each shape at most once
    compiled = graphs()
    for group in groups:  # after the warm-up pass: no recompilation
        trainer.update(group)
    probe_successor = Trainer(fp32(config, tmp_path / "again", compile="true"), data)
    for group in groups:
        probe_successor.update(group)
    assert graphs() == compiled


def test_the_compilation_limit_only_rises():
    limit = torch._dynamo.config.recompile_limit
    try:
        compiling.allow_compilations(limit + 24)
        assert torch._dynamo.config.recompile_limit == limit + 24
        compiling.allow_compilations(1)
        assert torch._dynamo.config.recompile_limit == limit + 24
    finally:
        torch._dynamo.config.recompile_limit = limit
