"""The probe: what a plan's update, validation and save cost, timed before the run has a tokenizer.

A fresh `Learner` of the plan (`learner.py`: the run's own update) takes `PROBE_WARMUP` and then
`PROBE_STEPS` timed steps on the first batches of a stand-in of the corpus (stand_in.py):
random ids in the corpus's lengths, for a vocabulary of the plan's size. A `Validator` of it
rehearses a validation on the stand-in's dev split (its scoring and its decoding, timed apart:
the final test decoding is priced from the decoding alone), and the learner's state is saved
once as `last.pt` (and a snapshot) would be. The random states are put back as they were, so
that the run trains as if the probe never happened. A compiled step is first compiled for each
batch shape that the probe's updates take (`Learner.warm_up`), so that no compilation is timed
as a step. A group that an epoch's end leaves short of `accumulation_steps` batches is skipped:
the probe times whole steps.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch
from torch.utils.data import DataLoader

from llm_from_scratch.checkpoint import save_checkpoint
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.device import synchronize
from llm_from_scratch.training.budget.schedule import (
    NO_REHEARSAL,
    PROBE_STEPS,
    PROBE_WARMUP,
    Costs,
    Rehearsal,
    measure_costs,
)
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed, training_precision
from llm_from_scratch.training.learner import build_learner, shape_batches
from llm_from_scratch.training.plan import Plan
from llm_from_scratch.training.state import Progress
from llm_from_scratch.training.stats import step_batches
from llm_from_scratch.training.validation import Validator


def probe_costs(
    config: TrainConfig,
    plan: Plan,
    stand_in: DataModule,
    dist: Distributed,
    clock: Callable[[], float],
) -> tuple[Costs, float]:
    """The costs of `plan` timed on `stand_in` by `clock`, and its training tokens a second."""
    training = config.training
    precision = training_precision(training.device, training.precision, dist)
    device = precision.device
    python_state = random.getstate()
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices, device_type=device.type):
        vocab_size = plan.tokenizer.vocab_size
        learner = build_learner(
            config,
            plan,
            (vocab_size, vocab_size),
            stand_in.tgt_tok.pad_id,
            precision,
            dist,
            lambda: len(_loader(stand_in, plan, dist, device).batch_sampler.batch_shapes()),
        )
        validator = Validator(learner.model, stand_in, precision, config) if dist.is_main else None
        steps = step_batches(
            lambda epoch, start: _loader(stand_in, plan, dist, device, epoch, start),
            Progress(),
            training.accumulation_steps,
            dist.enabled,
            whole_steps=True,
        )
        probe_file = config.run_dir.budget_probe

        def run_step() -> int:
            group = next(steps)
            learner.update(group)
            return sum(batch.src_tokens + batch.tgt_tokens for batch in group.batches)

        def save() -> None:  # last.pt, and the snapshot that goes with it
            if not dist.is_main:
                return
            weights = learner.model.state_dict()
            save_checkpoint(
                probe_file, {"model": weights, "optimizer": learner.optimizer.state_dict()}
            )
            probe_file.unlink()
            if training.keep_snapshots:
                save_checkpoint(probe_file, {"model": weights})
                probe_file.unlink()

        def synchronized() -> float:  # the updates' queued device work done, not just queued
            synchronize(device)
            return clock()

        if training.compiles(device):  # the shapes of the updates it takes, and no others
            probed = (PROBE_WARMUP + PROBE_STEPS) * training.accumulation_steps
            loader = _loader(stand_in, plan, dist, device)
            learner.warm_up(shape_batches(loader, dist.enabled, first=probed))
        rehearsal, test_share = NO_REHEARSAL, 0.0
        if validator is not None:
            rehearsal = Rehearsal(validator.rehearse_scoring, validator.rehearse_decoding)
            test_share = validator.test_share()
        costs = measure_costs(
            run_step, rehearsal, save, training.keep_snapshots, synchronized, test_share
        )
    random.setstate(python_state)
    return costs


def _loader(
    stand_in: DataModule,
    plan: Plan,
    dist: Distributed,
    device: torch.device,
    epoch: int = 0,
    start_batch: int = 0,
) -> DataLoader:
    return stand_in.train_loader(
        epoch,
        start_batch=start_batch,
        rank=dist.rank,
        world_size=dist.world_size,
        device=device,
        batch_tokens=plan.batch_tokens,
    )
