"""A model and what updates it: the optimizer, its schedule, the loss scaling and precision.

`Learner.update` is the one optimizer step of training: the run's `Trainer` takes its steps with
it, and the time-budget planner times it on a model of each plan it weighs (`budget/probe.py`),
without a trainer or a tokenizer.

One optimizer step consumes `accumulation_steps` token-budget batches; their summed losses are
divided by the target tokens of all of them (across DDP ranks too), so accumulation and more ranks
give the update of one larger batch. A compiled step compiles each batch shape on its first batch
of it: `warm_up` on `shape_batches` pays those compilations before any step is timed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader

from llm_from_scratch.data.batch import Batch
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.precision import Precision
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.loss import ModelLoss, forward_module
from llm_from_scratch.training.optim import (
    build_optimizer,
    build_scheduler,
    rescheduled,
    step_unless_nonfinite,
)
from llm_from_scratch.training.plan import Plan, Schedule
from llm_from_scratch.training.profiling import UPDATE_RANGE
from llm_from_scratch.training.state import dropout_seed
from llm_from_scratch.training.stats import StepBatches, StepStats


@dataclass
class Learner:
    model: Seq2SeqTransformer
    model_loss: ModelLoss  # the model's forward and summed loss, under `precision`
    forward_model: nn.Module  # what a step calls: `model_loss`, under DDP, compiled
    optimizer: torch.optim.Optimizer
    scheduler: LambdaLR
    scaler: torch.amp.GradScaler
    precision: Precision
    dist: Distributed
    clip_norm: float

    def follow(self, kind: str, schedule: Schedule) -> None:
        """Go on under `schedule` (a time budget's re-plan) from the step reached."""
        self.scheduler = rescheduled(self.optimizer, self.scheduler, kind, schedule)

    @torch.profiler.record_function(UPDATE_RANGE)
    def update(self, step: StepBatches) -> StepStats:
        """Forward/backward every micro-batch of `step`, then one (guarded) optimizer step."""
        self.model.train()
        device, micro_batches = self.precision.device, step.batches
        # DDP averages gradients over ranks; scaling by world_size / global tokens turns that
        # average into the per-token mean of the whole global batch.
        scale = self.dist.world_size / max(step.global_target_tokens, 1)
        total_loss = torch.zeros((), device=device)
        for index, batch in enumerate(micro_batches):
            batch = batch.to(device, non_blocking=True)
            last = index == len(micro_batches) - 1
            no_sync = self.dist.enabled and not last
            with self.forward_model.no_sync() if no_sync else nullcontext():
                loss = self.forward_model(batch.src, batch.src_mask, batch.tgt_in, batch.tgt_out)
                self.scaler.scale(loss * scale).backward()
            total_loss += loss.detach()
        self.scaler.unscale_(self.optimizer)  # and records its own inf check, for `update`
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        skipped = step_unless_nonfinite(self.optimizer, grad_norm)
        self.scaler.update()  # fp16: backs the loss scale off after a skipped step
        self.optimizer.zero_grad(set_to_none=True)
        # Every update moves the schedule on, skipped ones too, as `Progress.step` counts them:
        # the host never waits to learn whether the step was taken.
        self.scheduler.step()
        return StepStats(
            loss_sum=total_loss,
            grad_norm=grad_norm.detach(),
            skipped=skipped,
            target_tokens=sum(batch.tgt_tokens for batch in micro_batches),
            padded_tokens=sum(b.src.numel() + b.tgt_in.numel() for b in micro_batches),
            real_tokens=sum(b.src_tokens + b.tgt_tokens for b in micro_batches),
        )

    def warm_up(self, batches: list[Batch]) -> None:
        """Compile the step for the shape of each of `batches`: a forward and backward of each,
        whose gradients are dropped, no optimizer step, and the random states put back, so that
        the weights, the optimizer and the dropout masks of the steps that follow are as they
        would have been without it."""
        self.model.train()
        device = self.precision.device
        devices = [device] if device.type == "cuda" else []
        with torch.random.fork_rng(devices, device_type=device.type):
            for batch in batches:
                batch = batch.to(device, non_blocking=True)
                loss = self.forward_model(batch.src, batch.src_mask, batch.tgt_in, batch.tgt_out)
                loss.backward()
        self.optimizer.zero_grad(set_to_none=True)


def shape_batches(loader: DataLoader, distributed: bool, first: int | None = None) -> list[Batch]:
    """A batch of each shape that this rank's batches of `loader`'s epoch take (`first`: its first
    that many, all a probe trains on), collated as the loader collates them: the shapes a
    compiled step compiles for (`Learner.warm_up`). Static shapes: each of the plan's that the
    rank has; under DDP as many batches as the plan has shapes on every rank (the first again for
    a shape the rank lacks), since each backward waits for every rank's. Other batches: the first
    two shapes, after which Dynamo compiles for any."""
    sampler = loader.batch_sampler
    rank_batches = sampler.epoch_batches()[sampler.rank :: sampler.world_size]
    by_shape: dict[tuple[int, int, int], list[int]] = {}
    for indices in rank_batches[:first]:
        by_shape.setdefault(sampler.padded_shape(indices), indices)
    chosen = list(by_shape.values())
    if sampler.shapes is None:
        wanted = 2
    else:
        wanted = len(sampler.shapes.shapes) if distributed else len(chosen)
    chosen = chosen[:wanted] + rank_batches[:1] * (wanted - len(chosen))
    return [loader.collate_fn([loader.dataset[index] for index in batch]) for batch in chosen]


def build_learner(
    config: TrainConfig,
    plan: Plan,
    vocab_sizes: tuple[int, int],
    pad_id: int,
    precision: Precision,
    dist: Distributed,
    batch_shapes: Callable[[], int],
) -> Learner:
    """A freshly seeded model of `plan` for source and target vocabularies of `vocab_sizes`, its
    optimizer at the plan's learning rate and the schedule of its steps. `batch_shapes`: how many
    distinct shapes the batches take, which a compiled step is compiled for."""
    training = config.training
    torch.manual_seed(training.seed)
    random.seed(training.seed)
    model = Seq2SeqTransformer(
        plan.model,
        src_vocab_size=vocab_sizes[0],
        tgt_vocab_size=vocab_sizes[1],
        pad_id=pad_id,
        shared_vocab=config.tokenizer.shared,
    ).to(precision.device)
    optimizer = build_optimizer(model, training, precision.device)
    for group in optimizer.param_groups:
        group["lr"] = group["initial_lr"] = plan.lr
    model_loss = ModelLoss(model, precision, pad_id, training.label_smoothing)
    compiles = training.compiles(precision.device)
    forward_model = forward_module(model_loss, dist, compiles, batch_shapes)
    if dist.rank:  # each rank its own dropout masks
        torch.manual_seed(dropout_seed(training.seed, dist.rank, dist.world_size, 0))
    return Learner(
        model=model,
        model_loss=model_loss,
        forward_model=forward_model,
        optimizer=optimizer,
        scheduler=build_scheduler(optimizer, training.schedule, plan.schedule),
        scaler=precision.grad_scaler(),
        precision=precision,
        dist=dist,
        clip_norm=training.clip_norm,
    )
