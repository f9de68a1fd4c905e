"""`training.compile`: the model and its loss compile as one module, each batch shape once, and
never again after a pass over the shapes, not even for another trainer of the same model (the
budget planner's probes are such trainers), over kyoto_wiki's epoch too. Dynamo's `eager`
backend traces as the inductor does, without its code generation, so that this runs on a CPU."""

from __future__ import annotations

import functools
import itertools

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from llm_from_scratch.data.batching import TokenBudgetBatchSampler
from llm_from_scratch.programs.train import prepare_data
from llm_from_scratch.training import compiling
from llm_from_scratch.training.budget.planner import BudgetPlanner
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
    epoch_shapes = trainer.batch_shapes()
    assert trainer.forward_model._orig_mod is trainer.model_loss  # compiled once, not twice
    assert torch._dynamo.config.recompile_limit == max(8, epoch_shapes)
    by_shape = {}  # a step of each shape, in the epoch's order
    for group in itertools.islice(trainer.batches(), 200):
        by_shape.setdefault((group.batches[0].src.shape, group.batches[0].tgt_in.shape), group)
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


@pytest.mark.slow
def test_a_kyoto_wiki_epoch_takes_32_shapes_each_compiled_once_probes_included(
    train_config, corpus_mirror, tmp_path, eager_dynamo
):
    """experiment=kyoto_wiki's own batches in static shapes, on the tiny model: at most 32 shapes
    over the epoch for at most 10% more padded tokens than its dynamic batches; the budget
    planner's probes, then a batch of every shape, then each again, compile each shape once."""
    config = train_config(
        "experiment=kyoto_wiki",
        "model=tiny",
        "training.compile=true",
        "training.precision=fp32",
        "training.max_time=1h",
        "training.short_run=null",
        "data.loading.static_shapes=true",
        f"paths.root={tmp_path}",
    )
    data = prepare_data(config)
    plan, pacing = BudgetPlanner(config).plan()
    trainer = Trainer(config, data, plan, pacing=pacing)
    static = trainer.data.train_loader(0).batch_sampler
    dynamic = TokenBudgetBatchSampler(
        static.src_lens,
        static.tgt_lens,
        static.batch_tokens,
        seed=static.seed,
        pool_size=static.pool_size,
    )
    static_shapes = [static.padded_shape(batch) for batch in static]
    static_padded, dynamic_padded = (
        sum(rows * (src + tgt) for rows, src, tgt in map(sampler.padded_shape, sampler))
        for sampler in (static, dynamic)
    )
    assert len(set(static_shapes)) <= 32 and static_padded <= 1.10 * dynamic_padded

    probed = graphs()
    by_shape = {}
    for group in trainer.batches():
        by_shape.setdefault((group.batches[0].src.shape, group.batches[0].tgt_in.shape), group)
        if len(by_shape) == len(set(static_shapes)):
            break
    for group in by_shape.values():
        trainer.update(group)
    compiled = graphs()
    assert 1 <= probed <= compiled == len(by_shape)  # one graph a shape, the probes' included
    for group in by_shape.values():
        trainer.update(group)
    assert graphs() == compiled
