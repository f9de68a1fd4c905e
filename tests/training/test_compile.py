"""`training.compile`: the model and its loss compile as one module, each batch shape once, and
never again after a pass over the shapes, not even for another trainer of the same model (the
budget planner's probes are such trainers), over kyoto_wiki's epoch too. Every shape is compiled
before the first timed step, in the budget's probe and in the run. Dynamo's `eager` backend
traces as the inductor does, without its code generation, so that this runs on a CPU; static
shapes, which only a CUDA loader takes by default, are asked for (`data.loading.static_shapes`)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from llm_from_scratch.data.batching import TokenBudgetBatchSampler
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.programs.train import prepare_data
from llm_from_scratch.training import compiling
from llm_from_scratch.training.budget.planner import BudgetPlanner
from llm_from_scratch.training.budget.probe import probe_costs
from llm_from_scratch.training.budget.schedule import PROBE_STEPS, PROBE_WARMUP
from llm_from_scratch.training.budget.stand_in import stand_in_data
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.learner import shape_batches
from llm_from_scratch.training.plan import recipe_plan
from llm_from_scratch.training.trainer import Trainer

from .test_trainer import fp32

REPO_ROOT = Path(__file__).resolve().parents[2]
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


@pytest.mark.slow
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


def test_the_compilation_limit_only_rises_and_counts_the_graphs_compiled_before(eager_dynamo):
    limit = torch._dynamo.config.recompile_limit
    compiling.allow_compilations(limit + 24)
    assert torch._dynamo.config.recompile_limit == limit + 24
    compiling.allow_compilations(1)
    assert torch._dynamo.config.recompile_limit == limit + 24
    counters["stats"]["unique_graphs"] += 30  # a probe's model compiled them
    compiling.allow_compilations(limit + 24)
    assert torch._dynamo.config.recompile_limit == 30 + limit + 24
    assert torch._dynamo.config.accumulated_recompile_limit >= 30 + limit + 24


def test_an_older_torchs_limit_is_found_by_its_old_name():
    older = types.SimpleNamespace(cache_size_limit=8, accumulated_cache_size_limit=256)
    assert compiling.limit_name(older, compiling.RECOMPILE_LIMITS) == "cache_size_limit"
    assert compiling.limit_name(torch._dynamo.config, compiling.RECOMPILE_LIMITS) == (
        "recompile_limit"
    )


def with_static_shapes(config, data: DataModule, max_shapes: int, shape_step: int = 8):
    """`config` and `data` with the static shapes a CUDA loader takes, on the CPU."""
    loading = dataclasses.replace(
        config.data.loading, static_shapes="true", max_shapes=max_shapes, shape_step=shape_step
    )
    cfg = dataclasses.replace(config.data, loading=loading)
    static = DataModule(cfg, data.src_tok, data.tgt_tok, data.splits, data.report)
    return dataclasses.replace(config, data=cfg), static


@pytest.mark.slow  # 8 shapes traced
def test_a_probe_of_several_shapes_times_none_of_their_compilations(
    copy_task, tmp_path, eager_dynamo
):
    config, data, _ = copy_task
    # kftt_gpu's 8 shapes; on this grid the stand-in's epoch meets its 5th and 6th shapes at
    # its 8th and 13th batches, among the probe's timed updates (the 5th to the 20th), and its
    # 7th and 8th after the probe's last.
    config, _ = with_static_shapes(fp32(config, tmp_path / "run", compile="true"), data, 8, 4)
    stand_in = stand_in_data(config.data, config.paths)
    plan = recipe_plan(config)
    sampler = stand_in.train_loader(0, batch_tokens=plan.batch_tokens).batch_sampler
    batches = list(sampler)
    probed = len({sampler.padded_shape(batch) for batch in batches[: PROBE_WARMUP + PROBE_STEPS]})
    compiled_at = []  # the graphs compiled so far at each reading of the probe's clock

    def clock() -> float:
        compiled_at.append(graphs())
        return time.perf_counter()

    probe_costs(config, plan, stand_in, Distributed(), clock)
    assert len({sampler.padded_shape(batch) for batch in batches}) == 8 and probed == 6
    # The first two readings bracket the timed updates: each shape of the probe's updates was
    # compiled before them, and no shape it does not train on.
    assert compiled_at[0] == compiled_at[1] == compiled_at[-1] == probed


@pytest.mark.slow  # a run, its shapes traced
def test_a_run_compiles_each_of_its_shapes_once_before_its_first_update(
    copy_task, tmp_path, eager_dynamo, caplog
):
    config, data, _ = copy_task
    config, data = with_static_shapes(fp32(config, tmp_path / "run", compile="true"), data, 4)
    config = dataclasses.replace(
        config,
        training=dataclasses.replace(config.training, max_steps=6, eval_every=6, save_every=6),
    )
    opened = []
    train_loader = data.train_loader

    def spy(epoch, **settings):
        opened.append(settings.get("device"))
        return train_loader(epoch, **settings)

    data.train_loader = spy
    trainer = Trainer(config, data)
    shapes = trainer.batch_shapes()
    assert torch._dynamo.config.recompile_limit >= shapes == 4
    updates = []
    update = trainer.learner.update
    trainer.learner.update = lambda step: updates.append(graphs()) or update(step)
    with caplog.at_level("INFO"):
        trainer.fit()
    # Counted on the run's own device's loader (a CUDA one's shapes are static by default).
    assert opened and all(device == trainer.device for device in opened)
    assert updates == [shapes] * 6 and graphs() == shapes
    assert "compiled the step for 4 batch shapes" in caplog.text


def test_compiling_every_shape_leaves_the_weights_optimizer_and_random_state_as_they_were(
    copy_task, tmp_path, eager_dynamo
):
    config, data, _ = copy_task
    trainer = Trainer(fp32(config, tmp_path / "run", compile="true"), data)
    weights = {name: value.clone() for name, value in trainer.model.state_dict().items()}
    random_state = torch.get_rng_state()
    batches = shape_batches(trainer.data.train_loader(0), distributed=False)
    assert len({batch.src.shape for batch in batches}) == len(batches) == 2  # dynamic: two
    trainer.learner.warm_up(batches)
    assert graphs() >= 1
    assert all(
        torch.equal(weights[name], value) for name, value in trainer.model.state_dict().items()
    )
    assert all(parameter.grad is None for parameter in trainer.model.parameters())
    assert not trainer.optimizer.state
    assert torch.equal(torch.get_rng_state(), random_state)


@pytest.mark.slow
def test_a_kyoto_wiki_epoch_takes_32_shapes_each_compiled_once_probes_included(
    train_config, corpus_mirror, tmp_path, eager_dynamo
):
    """experiment=kyoto_wiki's own batches in static shapes, on the tiny model: at most 32 shapes
    over the epoch for at most 10% more padded tokens than its dynamic batches; the budget
    planner's probes, then a batch of every shape, then each again, compile each shape once,
    none past Dynamo's limit."""
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
    planner = BudgetPlanner(config)
    plan, pacing = planner.plan()
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
    # The probe's stand-in plans its own shapes: those of its updates that the run's batches do
    # not take are graphs of their own, which count toward Dynamo's limit too (past it, a shape
    # would run eagerly and compile no graph).
    stand_in = planner.stand_in.train_loader(0, batch_tokens=plan.batch_tokens).batch_sampler
    probe_batches = list(stand_in)[
        : (PROBE_WARMUP + PROBE_STEPS) * config.training.accumulation_steps
    ]
    probe_only = {stand_in.padded_shape(batch) for batch in probe_batches} - set(static_shapes)
    assert 1 <= probed <= compiled == len(by_shape) + len(probe_only)  # one graph a shape
    assert torch._dynamo.config.recompile_limit >= compiled
    for group in by_shape.values():
        trainer.update(group)
    assert graphs() == compiled


CACHED_COMPILE = """
import sys
from pathlib import Path

import torch
from torch._dynamo.utils import counters

from llm_from_scratch.training.compiling import load_compile_cache, save_compile_cache

path, action = Path(sys.argv[1]), sys.argv[2]
if action == "load":
    load_compile_cache(path)
torch.compile(lambda x: (x.sin() + 1).sum())(torch.randn(8))
print(counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"])
if action == "save":
    save_compile_cache(path)
"""


@pytest.mark.slow  # the inductor generates and builds C++: tens of seconds on 2 cores
def test_a_saved_compile_cache_spares_another_process_the_inductors_compilation(tmp_path):
    """The inductor on the CPU (a C++ compiler): one process compiles and saves the cache's
    artifacts, another with an empty cache directory (another machine) loads them and hits."""
    artifacts = tmp_path / "compile_cache.bin"

    def compile_in_a_process(action: str, cache_dir: str) -> list[str]:
        environment = {
            **os.environ,
            "PYTHONPATH": str(REPO_ROOT),
            "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / cache_dir),
            "OMP_NUM_THREADS": "1",
        }
        done = subprocess.run(
            [sys.executable, "-c", CACHED_COMPILE, str(artifacts), action],
            capture_output=True,
            text=True,
            timeout=400,
            env=environment,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    assert compile_in_a_process("save", "first") == ["0", "1"]  # a miss: compiled
    assert artifacts.stat().st_size > 0
    assert compile_in_a_process("load", "second") == ["1", "0"]  # a hit: not compiled again
