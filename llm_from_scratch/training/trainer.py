"""The training loop: `Trainer(config, data).fit()`, which `make train` runs.

One optimizer step consumes `accumulation_steps` token-budget batches; their summed losses are
divided by the target tokens of all of them (across DDP ranks too), so accumulation and more ranks
give the update of one larger batch. Everything needed to continue exactly where a run stopped
(weights, optimizer, scheduler, scaler, sampler position, RNG states) goes into `last.pt`.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from llm_from_scratch.checkpoint import (
    build_model,
    check_compatible,
    inference_state,
    load_checkpoint,
    load_weights,
    save_checkpoint,
)
from llm_from_scratch.data.batch import Batch
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.device import resolve_device
from llm_from_scratch.errors import UserError
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.precision import Precision, select_precision
from llm_from_scratch.training.averaging import (
    average_checkpoints,
    record_dev_scores,
    snapshot_path,
    snapshot_paths,
)
from llm_from_scratch.training.budget import (
    Costs,
    Schedule,
    describe,
    measure_costs,
    plan,
    replan,
)
from llm_from_scratch.training.config import RunConfig, ShortRunConfig, trained_model
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.logging import RunLogger
from llm_from_scratch.training.loss import summed_cross_entropy
from llm_from_scratch.training.optim import build_optimizer, build_scheduler, lr_multiplier
from llm_from_scratch.training.report import FinalModel, TrainingBar, scores_text, validation_line
from llm_from_scratch.training.run_dir import (
    check_stopping_settings,
    discard_snapshots_after,
    is_finished,
    load_last,
)
from llm_from_scratch.training.validation import Validator

logger = logging.getLogger(__name__)


class TrainingError(UserError):
    """Training cannot go on (e.g. the loss keeps being non-finite)."""


@dataclass
class Progress:
    """Where training stands; saved in every checkpoint so a resumed run continues exactly."""

    step: int = 0  # optimizer steps taken (skipped non-finite updates included)
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of `epoch` this rank has consumed
    elapsed: float = 0.0  # seconds of training, summed over resumed runs
    planned_steps: int = 0  # the step count `training.max_time` fixed; 0: not planned
    planned_short: bool = False  # the plan is of `training.short_run`'s recipe
    planned_warmup: int = 0  # a re-planned run's warm-up, its first plan's; 0: its recipe's
    best_bleu: float = -1.0
    best_step: int = 0  # the step of best.pt
    evals_without_improvement: int = 0
    nonfinite_in_a_row: int = 0
    finished: bool = False  # the run stopped: running it again trains nothing


@dataclass
class StepStats:
    loss: float  # label-smoothed loss per target token
    grad_norm: float
    target_tokens: int
    padded_tokens: int  # source + target positions including padding
    real_tokens: int  # source + target tokens
    skipped: bool


@dataclass
class LogWindow:
    """Training statistics since the last log line, averaged when it is written."""

    start: float = field(default_factory=time.perf_counter)
    steps: int = 0
    loss_sum: float = 0.0  # per-token loss weighted by target tokens
    grad_norm_sum: float = 0.0
    target_tokens: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0

    def add(self, stats: StepStats) -> None:
        if stats.skipped:  # a non-finite loss would poison the averages; the guard logs it
            return
        self.steps += 1
        self.loss_sum += stats.loss * stats.target_tokens
        self.grad_norm_sum += stats.grad_norm
        self.target_tokens += stats.target_tokens
        self.real_tokens += stats.real_tokens
        self.padded_tokens += stats.padded_tokens

    def summary(self, world_size: int) -> dict[str, float]:
        seconds = max(time.perf_counter() - self.start, 1e-9)
        return {
            "train/loss": self.loss_sum / max(self.target_tokens, 1),
            "train/grad_norm": self.grad_norm_sum / max(self.steps, 1),
            "train/tokens_per_second": self.real_tokens * world_size / seconds,
            "train/padding_fraction": 1 - self.real_tokens / max(self.padded_tokens, 1),
        }


class Trainer:
    def __init__(
        self,
        config: RunConfig,
        data: DataModule,
        dist: Distributed | None = None,
        started_at: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        """`started_at`: `clock()` when the program started, so that a time budget counts the
        data and tokenizer preparation too (default: now)."""
        self.config = config
        self.clock = clock
        self.started_at = clock() if started_at is None else started_at
        self.cfg = config.training
        self.data = data
        self.dist = dist or Distributed()
        device = resolve_device(self.cfg.device, "training.device")
        if device.type == "cuda" and self.dist.enabled:
            device = torch.device("cuda", self.dist.local_rank)
        precision = select_precision(self.cfg.precision, device)
        if self.dist.any(precision.name == "fp32"):  # `auto` times each rank's CPU; all must agree
            precision = Precision(device, "fp32")
        self.precision = precision
        self.device = device
        self.schedule = Schedule.of(self.cfg)
        self._build_model()
        self._use_schedule(self.schedule, announce=self.cfg.max_time is None)
        self.scaler = self.precision.grad_scaler()
        self.progress = Progress()
        self.final: FinalModel | None = None  # set by `fit` on the main process
        self._plan_costs: Costs | None = None  # the probe's, until the run plans again
        self.run_dir = Path(config.paths.run_dir or config.paths.run(config.name))

    def _build_model(self) -> None:
        """A freshly seeded model of `model_config` and its optimizer: a run that switches to the
        short recipe after the budget probe starts from the weights a run set to it from the start
        would have."""
        torch.manual_seed(self.cfg.seed)
        random.seed(self.cfg.seed)
        self.model = build_model(
            self.model_config,
            self.data.src_tok,
            self.data.tgt_tok,
            shared_vocab=self.config.tokenizer.shared,
        ).to(self.device)
        self.optimizer = build_optimizer(self.model, self.cfg, self.device)
        self.forward_model: torch.nn.Module = self.model
        if self.dist.enabled:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.forward_model = DistributedDataParallel(self.model, device_ids=ids)
        if self.cfg.compile:
            self.forward_model = torch.compile(self.forward_model)

    @property
    def model_config(self) -> ModelConfig:
        """The model the schedule trains: `model`, or the short recipe's version of it."""
        return trained_model(self.config, self.schedule.short)

    def _validator(self) -> Validator | None:
        """Validation of the current model, on the main process."""
        if not self.dist.is_main:
            return None
        return Validator(self.model, self.data, self.precision, self.config)

    # ---- one optimizer step -------------------------------------------------------------------

    def update(self, micro_batches: list[Batch]) -> StepStats:
        """Forward/backward every micro-batch, then one (guarded) optimizer step."""
        self.model.train()
        pad_id = self.data.tgt_tok.pad_id
        local_tokens = sum(batch.tgt_tokens for batch in micro_batches)
        # DDP averages gradients over ranks; scaling by world_size / global tokens turns that
        # average into the per-token mean of the whole global batch.
        scale = self.dist.world_size / max(self.dist.sum(local_tokens), 1)
        total_loss = torch.zeros((), device=self.device)
        for index, batch in enumerate(micro_batches):
            batch = batch.to(self.device, non_blocking=True)
            last = index == len(micro_batches) - 1
            no_sync = self.dist.enabled and not last
            with self.forward_model.no_sync() if no_sync else nullcontext():
                with self.precision.autocast():
                    logits = self.forward_model(batch.src, batch.src_mask, batch.tgt_in)
                loss = summed_cross_entropy(logits, batch.tgt_out, pad_id, self.cfg.label_smoothing)
                self.scaler.scale(loss * scale).backward()
            total_loss += loss.detach()
        self.scaler.unscale_(self.optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_norm)
        finite = bool(torch.isfinite(total_loss) and torch.isfinite(grad_norm))
        if finite or self.scaler.is_enabled():
            self.scaler.step(self.optimizer)  # GradScaler itself skips non-finite gradients
        self.scaler.update()  # and backs its scale off when it did
        self.optimizer.zero_grad(set_to_none=True)
        if finite:  # a skipped update leaves the schedule where it was
            self.scheduler.step()
        padded = sum(b.src.numel() + b.tgt_in.numel() for b in micro_batches)
        real = sum(b.src_tokens + b.tgt_tokens for b in micro_batches)
        return StepStats(
            loss=total_loss.item() / max(local_tokens, 1),
            grad_norm=grad_norm.item(),
            target_tokens=local_tokens,
            padded_tokens=padded,
            real_tokens=real,
            skipped=not finite,
        )

    # ---- the loop -----------------------------------------------------------------------------

    def fit(self) -> dict[str, float]:
        """Train the planned steps (or until max_epochs or early stopping); return dev metrics."""
        self.resume()
        if self.progress.finished:
            logger.info(
                "%s is finished at step %d: nothing to train", self.run_dir, self.progress.step
            )
            return {}
        if self.dist.is_main:
            discard_snapshots_after(self.run_dir, self.progress.step)
        self._plan_budget()
        validator = self._validator()
        if self.dist.is_main:
            logger.info(
                "model: %s parameters (%d encoder and %d decoder layers); device %s, precision %s; "
                "run directory %s",
                f"{self.model.num_parameters():,}",
                self.model.cfg.n_encoder_layers,
                self.model.cfg.n_decoder_layers,
                self.device,
                self.precision.name,
                self.run_dir,
            )
        log = RunLogger(self.run_dir / "tensorboard" if self.dist.is_main else None)
        started, window = self.clock(), LogWindow()
        start_elapsed, start_step = self.progress.elapsed, self.progress.step
        paused = 0.0  # seconds of validations and saves, which the re-plan prices apart
        trained_tokens = 0
        metrics: dict[str, float] = {}
        bar = TrainingBar(self.schedule.steps, self.progress.step, enabled=self.dist.is_main)
        try:
            for micro_batches in self._accumulated_batches():
                stats = self.update(micro_batches)
                self.progress.step += 1
                now = self.clock()
                self.progress.elapsed = start_elapsed + now - started
                self._guard(stats)
                window.add(stats)
                trained_tokens += stats.real_tokens
                bar.advance()
                step = self.progress.step
                if self._plan_costs is not None and step == self.schedule.warmup_steps:
                    self._replan(now - started - paused, step - start_step, trained_tokens)
                    bar.set_total(self.schedule.steps)
                pause_start = self.clock()
                if step % self.cfg.log_every == 0 or step == 1:
                    scalars = window.summary(self.dist.world_size)
                    scalars["train/lr"] = self.scheduler.get_last_lr()[0]
                    bar.show_training(scalars["train/loss"], scalars["train/tokens_per_second"])
                    log.scalars(scalars, step)
                    window = LogWindow()
                stop = self._should_stop()
                if step % self.schedule.eval_every == 0 or stop:
                    if validator is not None:
                        with bar.validating(len(validator.bleu_subset)):
                            metrics = validator.run(step, log)
                        self._track_best(metrics)
                        self._log_validation(metrics)
                        self._save_best_if_improved(metrics)
                        window = LogWindow()  # tokens/s measures training, not validation
                    stop = self._early_stop(stop)
                self.progress.finished = stop
                if step % self.schedule.save_every == 0 or stop:
                    # The snapshot first: a run killed between the two writes resumes from the
                    # previous last.pt and writes this snapshot again, so it averages the same.
                    self._snapshot(step)
                    self.save("last.pt")
                if stop:
                    break
                paused += self.clock() - pause_start
        finally:
            bar.close()
        if validator is not None:
            self.final = self._final_model(validator, log)
            log.hparams(self._hparams(), {f"hparam/{k}": v for k, v in metrics.items()})
        log.close()
        return metrics

    def _accumulated_batches(self):
        """Groups of `accumulation_steps` batches, epoch after epoch, from the saved position."""
        while True:
            loader = self.data.train_loader(
                self.progress.epoch,
                start_batch=self.progress.batch_in_epoch,
                rank=self.dist.rank,
                world_size=self.dist.world_size,
                device=self.device,
                batch_tokens=self.batch_tokens,
            )
            group: list[Batch] = []
            for batch in loader:
                group.append(batch)
                if len(group) == self.cfg.accumulation_steps:
                    self.progress.batch_in_epoch += len(group)
                    yield group
                    group = []
            if group:  # the epoch's remainder makes one smaller step
                self.progress.batch_in_epoch += len(group)
                yield group
            self.progress.epoch += 1
            self.progress.batch_in_epoch = 0

    def _guard(self, stats: StepStats) -> None:
        if not stats.skipped:
            self.progress.nonfinite_in_a_row = 0
            return
        self.progress.nonfinite_in_a_row += 1
        logger.warning(
            "step %d: non-finite loss or gradient norm (loss %s, grad norm %s); update skipped",
            self.progress.step,
            stats.loss,
            stats.grad_norm,
        )
        if self.progress.nonfinite_in_a_row >= self.cfg.max_nonfinite:
            raise TrainingError(
                f"{self.progress.nonfinite_in_a_row} non-finite updates in a row at step "
                f"{self.progress.step}: lower training.lr, raise training.warmup_steps, or use "
                "training.precision=fp32"
            )

    def _should_stop(self) -> bool:
        progress, cfg = self.progress, self.cfg
        stop = progress.step >= self.schedule.steps
        stop |= cfg.max_epochs is not None and progress.epoch >= cfg.max_epochs
        return self.dist.any(stop)

    def _track_best(self, metrics: dict[str, float]) -> None:
        if metrics["bleu"] > self.progress.best_bleu:
            self.progress.best_bleu = metrics["bleu"]
            self.progress.best_step = self.progress.step
            self.progress.evals_without_improvement = 0
        else:
            self.progress.evals_without_improvement += 1

    def _log_validation(self, metrics: dict[str, float]) -> None:
        progress = self.progress
        logger.info(
            "%s",
            validation_line(
                progress.step,
                self.schedule.steps,
                metrics,
                progress.best_bleu,
                progress.best_step,
                progress.elapsed,
            ),
        )

    def _save_best_if_improved(self, metrics: dict[str, float]) -> None:
        if self.progress.evals_without_improvement == 0:
            self.save("best.pt", metrics)

    def _early_stop(self, stop: bool) -> bool:
        patience = self.cfg.patience
        exhausted = patience is not None and self.progress.evals_without_improvement >= patience
        if exhausted and self.dist.is_main:
            logger.info("early stopping: no dev BLEU improvement in %d evaluations", patience)
        return self.dist.any(stop or exhausted)

    # ---- the time budget ----------------------------------------------------------------------

    def _plan_budget(self) -> None:
        """Under `training.max_time`, fix the run's recipe and step count before its first step:
        the step-budget run's recipe for as many steps as fit; where those are fewer than its
        `max_steps`, the short recipe (`training.short_run`) for as many of its steps as fit, if
        even its own length does not fit or the default's would be fewer than its
        `min_default_steps`."""
        budget = self.cfg.budget_seconds
        if budget is None or self.progress.planned_steps or self.progress.step:
            return  # no budget, or a resumed run: it keeps the schedule it started with
        full = self.schedule
        costs, tokens_per_second = self._probe()
        schedule = self._agreed(plan(self.cfg, self._seconds_left(budget), costs, full.short))
        short = self.cfg.short_run
        if short is not None and not schedule.short and schedule.steps < full.steps:
            self._use_schedule(Schedule.of(self.cfg, short.max_steps, short=True), announce=False)
            short_costs, short_speed = self._probe()  # its own model: its own steps and saves
            candidate = plan(self.cfg, self._seconds_left(budget), short_costs, short=True)
            candidate = self._agreed(candidate)
            too_few = schedule.steps < short.min_default_steps
            if too_few or candidate.steps < short.max_steps:
                schedule, tokens_per_second, costs = candidate, short_speed, short_costs
        self._use_schedule(schedule)
        self._plan_costs = costs
        self.progress.planned_steps = schedule.steps
        self.progress.planned_short = schedule.short
        if self.dist.is_main:
            logger.info("%s", describe(schedule, full, budget, tokens_per_second, self.cfg))

    def _replan(self, seconds: float, steps: int, tokens: int) -> None:
        """Plan the rest of the run from its own `steps` updates, which took `seconds` and
        trained on `tokens`: the warm-up stays, so the steps taken are the new plan's too."""
        budget, costs = self.cfg.budget_seconds, self._plan_costs
        assert budget is not None and costs is not None
        self._plan_costs = None
        run_costs = replace(costs, step=seconds / max(steps, 1))
        done = self.progress.step
        schedule = replan(self.cfg, self.schedule, done, self._seconds_left(budget), run_costs)
        schedule = self._agreed(schedule, warmup=self.schedule.warmup_steps)
        if schedule != self.schedule:
            # The steps taken had the warm-up's learning rates in either plan; the next one is
            # the new plan's.
            position = self.scheduler.state_dict()
            self.schedule = schedule
            self.scheduler = build_scheduler(self.optimizer, self.cfg.schedule, schedule)
            self.scheduler.load_state_dict(position)
            next_lr = lr_multiplier(self.scheduler.last_epoch, self.cfg.schedule, schedule)
            for group in self.optimizer.param_groups:
                group["lr"] = group["initial_lr"] * next_lr
            self.progress.planned_steps = schedule.steps
            self.progress.planned_warmup = schedule.warmup_steps
        if self.dist.is_main:
            full = Schedule.of(self.cfg)
            speed = tokens * self.dist.world_size / max(seconds, 1e-9)
            logger.info(
                "planned again at step %d from the run's own steps (%.2f s each, the probe's "
                "%.2f s): %s",
                done,
                run_costs.step,
                costs.step,
                describe(schedule, full, budget, speed, self.cfg),
            )

    def _seconds_left(self, budget: float) -> float:
        return budget - (self.clock() - self.started_at)

    def _agreed(self, schedule: Schedule, warmup: int | None = None) -> Schedule:
        """Rank 0's plan, on every rank: their probes time different batches (`warmup`: one
        kept from the first plan, which every rank agreed on)."""
        steps = self.dist.sum(schedule.steps if self.dist.is_main else 0)
        short = self.dist.sum(int(schedule.short) if self.dist.is_main else 0)
        return Schedule.of(self.cfg, steps, short=bool(short), warmup=warmup)

    def _use_schedule(self, schedule: Schedule, announce: bool = True) -> None:
        """Train `schedule`: its length and warm-up, and for a short run the short recipe's
        model, learning rate and batch size (`announce`: say so in the log)."""
        self.schedule = schedule
        if self.model_config != self.model.cfg:
            self._build_model()
        short = self._short_recipe
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"] = self.lr
        self.scheduler = build_scheduler(self.optimizer, self.cfg.schedule, schedule)
        if short is not None and announce and self.dist.is_main:
            logger.info(
                "the short recipe (training.short_run) for %s steps: %d encoder and %d decoder "
                "layers, dropout %g, learning rate %g, batches of %d tokens, warm-up %d steps, a "
                "snapshot every %d steps",
                f"{schedule.steps:,}",
                self.model.cfg.n_encoder_layers,
                self.model.cfg.n_decoder_layers,
                self.model.cfg.dropout,
                short.lr,
                self.batch_tokens,
                schedule.warmup_steps,
                schedule.save_every,
            )

    @property
    def _short_recipe(self) -> ShortRunConfig | None:
        """`training.short_run` when the schedule trains it, else None."""
        return self.cfg.short_run if self.schedule.short else None

    @property
    def lr(self) -> float:
        """The schedule's peak learning rate."""
        short = self._short_recipe
        return short.lr if short is not None else self.cfg.lr

    @property
    def batch_tokens(self) -> int:
        """Tokens per training batch under the schedule."""
        short = self._short_recipe
        if short is not None and short.batch_tokens is not None:
            return short.batch_tokens
        return self.config.data.loading.batch_tokens

    def _probe(self):
        """Time a few updates on the run's first batches, a validation and a save, then put back
        every state they touched: the run then starts exactly as it would have without them."""
        validator = self._validator()
        saved = {
            "model": copy.deepcopy(self.model.state_dict()),
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": _rng_state(),
            "progress": copy.deepcopy(self.progress),
        }
        batches = self._accumulated_batches()
        probe_file = self.run_dir / ".budget-probe.pt"

        def run_step() -> int:
            group = next(batches)
            self.update(group)
            return sum(batch.src_tokens + batch.tgt_tokens for batch in group)

        def save() -> None:
            if self.dist.is_main:
                save_checkpoint(probe_file, self.state())
                probe_file.unlink()

        def rehearse() -> None:
            if validator is not None:
                validator.rehearse()

        test_share = validator.test_share() if validator is not None else 0.0
        try:
            return measure_costs(
                run_step, rehearse, save, self.cfg.keep_snapshots, self.clock, test_share
            )
        finally:
            self.model.load_state_dict(saved["model"])
            self.optimizer.load_state_dict(saved["optimizer"])
            self.scheduler.load_state_dict(saved["scheduler"])
            self.scaler.load_state_dict(saved["scaler"])
            _set_rng_state(saved["rng"])
            self.progress = saved["progress"]

    # ---- checkpoints --------------------------------------------------------------------------

    @property
    def trained_config(self) -> RunConfig:
        """The run's config with the model it trains: what checkpoints store, so that translation
        builds that model."""
        return replace(self.config, model=self.model.cfg)

    def state(self, metrics: dict[str, float] | None = None) -> dict[str, Any]:
        state = inference_state(
            self.model, self.data.src_tok, self.data.tgt_tok, self.trained_config
        )
        state.update(
            optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(),
            scaler=self.scaler.state_dict(),
            precision=self.precision.name,
            progress=asdict(self.progress),
            metrics=metrics or {},
            rng=_rng_state(),
        )
        return state

    def save(self, name: str, metrics: dict[str, float] | None = None) -> None:
        if self.dist.is_main:
            save_checkpoint(self.run_dir / name, self.state(metrics))

    def _snapshot(self, step: int) -> None:
        """Weights only, for averaging; the oldest beyond `keep_snapshots` are deleted."""
        if not self.dist.is_main or self.cfg.keep_snapshots == 0:
            return
        state = inference_state(
            self.model, self.data.src_tok, self.data.tgt_tok, self.trained_config
        )
        save_checkpoint(snapshot_path(self.run_dir, step), state)
        for old in snapshot_paths(self.run_dir)[: -self.cfg.keep_snapshots]:
            old.unlink()

    def _final_model(self, validator: Validator, log: RunLogger) -> FinalModel | None:
        """The model the run hands over, `averaged.pt` from the kept snapshots, else `best.pt`,
        scored on dev and, once, on test (greedy, like every validation)."""
        kept = snapshot_paths(self.run_dir)[-self.cfg.keep_snapshots :]
        if self.cfg.keep_snapshots >= 2 and len(kept) >= 2:
            logger.info("averaging the last %d snapshots into averaged.pt", len(kept))
            path = self.run_dir / "averaged.pt"
            averaged = average_checkpoints(kept, path)
            weights = averaged["model"]
            description, dev = f"the average of the last {len(kept)} snapshots", None
        else:
            path = self.run_dir / "best.pt"
            if not path.is_file():
                return None
            state = load_checkpoint(path, map_location=self.device)
            weights, dev = state["model"], state["metrics"]
            description = f"the best dev BLEU, step {state['progress']['step']}"
        trained = {key: value.clone() for key, value in self.model.state_dict().items()}
        self.model.load_state_dict(weights)
        try:
            if dev is None:
                dev = validator.run(self.progress.step, log, tag="dev_averaged")
                logger.info("averaged.pt | dev %s", scores_text(dev))
                record_dev_scores(path, averaged, self.progress.step, dev)
            test_sentences = len(self.data.splits["test"])
            logger.info("translating the test split (%d sentences, greedy)", test_sentences)
            test = validator.score_test(self.progress.step, log)
        finally:
            self.model.load_state_dict(trained)
        return FinalModel(path, description, dev, test, test_sentences)

    def resume(self) -> None:
        """Continue from `<run_dir>/last.pt` when it exists (every rank reads the same file)."""
        path = self.run_dir / "last.pt"
        if not path.exists():
            return
        state = load_last(path, map_location=self.device)
        progress = Progress(**state["progress"])
        if progress.planned_steps:
            warmup = progress.planned_warmup or None  # 0: the plan's own (no re-plan yet)
            self._use_schedule(
                Schedule.of(self.cfg, progress.planned_steps, progress.planned_short, warmup)
            )
        check_compatible(state, self.model.cfg, self.data.src_tok, self.data.tgt_tok, path)
        load_weights(self.model, state["model"], str(path))
        check_stopping_settings(state, self.cfg, path)
        self.progress = progress
        self.progress.finished = is_finished(state)  # also for files from before the flag
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self._keep_saved_precision(state.get("precision"))
        self.scaler.load_state_dict(state["scaler"])
        _set_rng_state(state["rng"])
        if self.dist.is_main:
            logger.info("resumed %s at step %d", path, self.progress.step)

    def _keep_saved_precision(self, saved: str | None) -> None:
        """Under `auto`, continue at the checkpoint's precision: a CPU's pick is a timing that a
        busy moment can flip, and an exact continuation needs the same arithmetic."""
        if self.cfg.precision != "auto" or saved in (None, self.precision.name):
            return
        if saved == "fp16" and self.device.type != "cuda":
            return  # a GPU run continued on a CPU: fp16 is not an option here
        logger.info(
            "precision auto: continuing in %s, the precision %s started with",
            saved,
            self.run_dir,
        )
        self.precision = select_precision(saved, self.device)
        self.scaler = self.precision.grad_scaler()

    def _hparams(self) -> dict[str, Any]:
        config = self.config
        return {
            "model.d_model": config.model.d_model,
            "model.layers": self.model.cfg.n_encoder_layers + self.model.cfg.n_decoder_layers,
            "tokenizer.vocab_size": config.tokenizer.vocab_size,
            "training.lr": self.lr,
            "training.label_smoothing": self.cfg.label_smoothing,
            "data.loading.batch_tokens": self.batch_tokens,
            "precision": self.precision.name,
        }


def _rng_state() -> dict[str, Any]:
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": list(random.getstate()[1]),
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"].cpu())
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
    random.setstate((3, tuple(state["python"]), None))
