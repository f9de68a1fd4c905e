"""The training loop: `Trainer(config, data, plan, pacing=...).fit()` trains one model on one
schedule, the plan `budget/planner.py` fixed (`programs/train.py` `train` runs the whole run in
order). `_train` is the loop; what a time budget asks of it is behind one `pacing.Pacing`, the
re-plan at the warm-up's end included.

Its optimizer steps are its `Learner`'s (`learner.py`), which holds the model, the optimizer, the
schedule and the loss scaling. Everything needed to continue exactly where a run stopped
(weights, optimizer, scheduler, scaler, sampler position, RNG states) goes into `last.pt`; a
snapshot holds all of it but the optimizer. SIGTERM and SIGINT stop the run cleanly (`stop.py`).
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader

from llm_from_scratch.checkpoint import (
    check_compatible,
    inference_state,
    load_weights,
    save_checkpoint,
)
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.training.config import TrainConfig, averages, parse_duration
from llm_from_scratch.training.distributed import Distributed, training_precision
from llm_from_scratch.training.learner import build_learner, shape_batches
from llm_from_scratch.training.pacing import Pacing
from llm_from_scratch.training.parent import Parent
from llm_from_scratch.training.plan import Plan, Schedule, recipe_plan
from llm_from_scratch.training.profiling import StepProfiler, fetched
from llm_from_scratch.training.report import TrainingBar, model_line, validation_line
from llm_from_scratch.training.resume import (
    SavedRun,
    check_stopping_settings,
    continued_precision,
    discard_snapshots_after,
    restore_optimizer,
)
from llm_from_scratch.training.state import (
    Progress,
    dropout_seed,
    out_of_patience,
    out_of_steps,
    rng_state,
    set_rng_state,
)
from llm_from_scratch.training.stats import (
    LogWindow,
    RunLogger,
    StepBatches,
    StepStats,
    guard,
    step_batches,
)
from llm_from_scratch.training.stop import Stopped, StopRequest
from llm_from_scratch.training.validation import Validator, corpus_metric

logger = logging.getLogger(__name__)


class Trainer:
    def __init__(
        self,
        config: TrainConfig,
        data: DataModule,
        plan: Plan | None = None,
        dist: Distributed | None = None,
        saved: SavedRun | None = None,
        parent: Parent | None = None,
        pacing: Pacing | None = None,
    ):
        """A model of `plan` (default: `config`'s step budget), ready to train: restored from
        `saved` (`resume.read_saved_run`'s read of the run's `last.pt`), else, where the run
        fine-tunes one (`training.init_from`), with the weights of `parent`, whose lineage its
        checkpoints record. `pacing`: what the plan's budget asks of the loop (default: a step
        budget's, nothing)."""
        self.config = config
        self.data = data
        self.dist = dist or Distributed()
        self.plan = plan or recipe_plan(config)
        self.schedule = self.plan.schedule
        self.pacing = pacing or Pacing()  # what the budget asks of the loop; its clock
        self.run_dir = config.run_dir
        self.lineage = parent.lineage if parent is not None else None
        training = config.training
        precision = training_precision(training.device, training.precision, self.dist)
        self.device = precision.device
        vocab_sizes = (data.src_tok.vocab_size, data.tgt_tok.vocab_size)
        self.learner = build_learner(
            config,
            self.plan,
            vocab_sizes,
            data.tgt_tok.pad_id,
            precision,
            self.dist,
            self.batch_shapes,
        )
        self.progress = Progress()
        if self.plan.budgeted:
            self.progress.record_plan(self.schedule, first=True)
        if saved is not None:
            self._restore(saved)
        elif parent is not None:
            load_weights(self.model, parent.weights, str(parent.path))
            if self.dist.is_main:
                logger.info("starting from %s: its weights, a fresh optimizer and schedule", parent)

    # What updates the model, the learner's: the model, its optimizer, schedule, loss scaling
    # and precision.
    model = property(lambda self: self.learner.model)
    optimizer = property(lambda self: self.learner.optimizer)
    scheduler = property(lambda self: self.learner.scheduler)
    scaler = property(lambda self: self.learner.scaler)
    precision = property(lambda self: self.learner.precision)
    model_loss = property(lambda self: self.learner.model_loss)
    forward_model = property(lambda self: self.learner.forward_model)

    def batch_shapes(self) -> int:
        """The distinct shapes of the first epoch's batches on this rank."""
        loader = self.data.train_loader(
            0,
            rank=self.dist.rank,
            world_size=self.dist.world_size,
            device=self.device,  # a CUDA loader's are static (`data.loading.static_shapes`)
            batch_tokens=self.plan.batch_tokens,
        )
        return len(loader.batch_sampler.batch_shapes())

    def validator(self) -> Validator | None:
        """Validation of the current model, on the main process."""
        if not self.dist.is_main:
            return None
        return Validator(self.model, self.data, self.precision, self.config)

    # ---- one optimizer step -------------------------------------------------------------------

    def update(self, step: StepBatches) -> StepStats:
        """Forward/backward every micro-batch of `step`, then one (guarded) optimizer step."""
        return self.learner.update(step)

    # ---- the loop -----------------------------------------------------------------------------

    def fit(self, log: RunLogger | None = None) -> dict[str, float]:
        """Train the planned steps (or until max_epochs or early stopping); return the last dev
        metrics. `log`: TensorBoard's (default: one of the run's own, closed at the end)."""
        if self.progress.finished:
            logger.info(
                "%s is finished at step %d: nothing to train", self.run_dir, self.progress.step
            )
            return {}
        if self.dist.is_main:
            discard_snapshots_after(self.run_dir, self.progress.step)
            logger.info("%s", model_line(self.model, self.precision, self.run_dir))
        own_log = log is None
        log = log or self.run_logger()
        bar = TrainingBar(self.schedule.steps, self.progress.step, enabled=self.dist.is_main)
        profile_dir = self.run_dir.profile if self.dist.is_main else None
        profile_steps = self.config.training.profile_steps
        try:
            with (
                StopRequest() as request,
                StepProfiler(profile_steps, profile_dir, self.device) as profiler,
            ):
                return self._train(log, bar, request, profiler)
        finally:
            bar.close()
            if own_log:
                log.close()

    def run_logger(self) -> RunLogger:
        return RunLogger(self.run_dir.tensorboard if self.dist.is_main else None)

    def _train(
        self, log: RunLogger, bar: TrainingBar, request: StopRequest, profiler: StepProfiler
    ) -> dict[str, float]:
        training, pacing, progress = self.config.training, self.pacing, self.progress
        validator = self.validator()
        self._compile_every_shape()
        pacing.start(progress.step)
        window, metrics = LogWindow(), {}
        started, start_elapsed = pacing.clock(), progress.elapsed
        self._last_written: float | None = None  # this start has written no last.pt yet

        def now() -> float:
            time_now = pacing.time(self.device)
            progress.elapsed = start_elapsed + time_now - started
            return time_now

        # A fine-tuning scores its parent first: the dev score it has to beat (best.pt stays the
        # parent's weights if no step does), and, for a time budget's re-plan, what a validation
        # of a trained model costs, which a stand-in's rehearsal does not tell.
        scored_yet = self.lineage is not None and progress.step == 0  # on every rank alike
        if validator is not None and scored_yet:
            began = now()
            metrics = self._validate(validator, log, bar)
            pacing.validated(now() - began)

        for step_group in fetched(self.batches()):
            stats = self.update(step_group)
            progress.step += 1
            step = progress.step
            window.add(step, stats)
            bar.advance()
            # Every rank has taken the same steps of the same epochs (each epoch gives every
            # rank as many batches): no rank needs to ask the others.
            stop = out_of_steps(progress, self.schedule.steps, training)
            replans = pacing.replan_due(step, self.schedule)  # a time budget's, after warm-up
            # The re-plan prices the validations, the averaging and the test decoding left from
            # one of the run's own validations: an early model's outputs run longer than the
            # stand-in's rehearsal assumes, so a warm-up that ends before the first validation
            # ends with one.
            validates = step % self.schedule.eval_every == 0 or stop or (replans and not scored_yet)
            scored_yet = scored_yet or validates
            saves = step % self.schedule.save_every == 0 or stop
            logs = step % training.log_every == 0 or step == 1
            # Only these steps read the clock: a read waits for the device.
            timed = logs or validates or saves or pacing.needs_time(step, self.schedule)
            step_end = now() if timed else None
            pacing.step_done(step, step_end, stats.real_tokens)
            if logs:
                self._log_step(window, bar, log, step)
                window = LogWindow()
            if validates or saves:
                self._guard(window)  # what a checkpoint saves includes every step
            paused_from = step_end  # what validating and saving took is no update's
            if validates:
                # The last validation gives way too where the averaged model's comes after it.
                required = stop and not self._averaged_after()
                fits = required or pacing.validation_fits(step_end, self.schedule, step)
                if validator is not None and fits:
                    metrics = self._validate(validator, log, bar)
                    validated = now()
                    pacing.validated(validated - paused_from)
                    paused_from = validated
                    window = LogWindow()  # tokens/s measures training, not validation
                stop = self._early_stop(stop)
            if replans and not stop:
                self._follow(pacing.replanned(self.schedule, step, now()))
                bar.set_total(self.schedule.steps)
            progress.finished = stop
            wrote_last = False
            if saves:
                # The snapshot first: a run killed between the two writes resumes from the
                # previous last.pt and writes this snapshot again, so it averages the same.
                self._snapshot(step)
                wrote_last = self._save_last(step_end, final=stop)
                pacing.saved(now() - paused_from)
            if stop:
                return metrics
            # Every rank stops at the same step: under DDP they agree at the steps that log,
            # validate or save, so that no other step waits for the others.
            agree = not self.dist.enabled or logs or validates or saves
            if agree and self.dist.any(request.requested):
                self._guard(window)
                now()
                self._stop_on_signal(request.signum, saved=wrote_last)
            profiler.step()
        return metrics

    def _averaged_after(self) -> bool:
        """Whether the final model is the average of the snapshots, this step's (still to be
        written) included, which `final.py` validates after training."""
        snapshots = len(self.run_dir.snapshot_paths()) + 1
        return averages(self.config.training.keep_snapshots, snapshots)

    def _log_step(self, window: LogWindow, bar: TrainingBar, log: RunLogger, step: int) -> None:
        """Read the window's steps on the host (the one wait for the device between log steps),
        check them for non-finite updates, and log their averages."""
        self._guard(window)
        scalars = window.summary(self.dist.world_size)
        scalars["train/lr"] = self.scheduler.get_last_lr()[0]
        if self.scaler.is_enabled():  # fp16: a scale that keeps falling says the run diverges
            scalars["train/loss_scale"] = self.scaler.get_scale()
        if self.device.type == "cuda":  # retries: the allocator ran short and freed its cache
            retries = torch.cuda.memory_stats(self.device).get("num_alloc_retries", 0)
            scalars["train/allocator_retries"] = retries
        bar.show_training(scalars["train/loss"], scalars["train/tokens_per_second"])
        log.scalars(scalars, step)

    def _guard(self, window: LogWindow) -> None:
        """Settle the window's steps on the host and stop the run at too many non-finite
        updates in a row (`stats.guard`)."""
        guard(window.settle(), self.progress, self.config.training.max_nonfinite)

    def _stop_on_signal(self, signum: int | None, saved: bool) -> None:
        """The step is done (validation and snapshot included, as an uninterrupted run does
        them): save `last.pt` unless this step did, and raise `Stopped`."""
        if not saved:
            self.save(self.run_dir.last)
        self.dist.barrier()  # the other ranks exit once rank 0 has saved
        path = self.run_dir.last
        raise Stopped(self.progress.step, path, signum or signal.SIGTERM)  # another rank's

    def _follow(self, schedule: Schedule) -> None:
        """Train on under the time budget's re-planned `schedule` from the step reached."""
        if schedule == self.schedule:
            return
        self.learner.follow(self.config.training.schedule, schedule)
        self.schedule = schedule
        self.progress.record_plan(schedule, first=False)
        self.plan = self.plan.with_schedule(schedule)

    def batches(self) -> Iterator[StepBatches]:
        """Each optimizer step's batches, from the saved position (`stats.step_batches`)."""
        accumulation = self.config.training.accumulation_steps
        return step_batches(self._loader, self.progress, accumulation, self.dist.enabled)

    def _loader(self, epoch: int, start_batch: int = 0) -> DataLoader:
        return self.data.train_loader(
            epoch,
            start_batch=start_batch,
            rank=self.dist.rank,
            world_size=self.dist.world_size,
            device=self.device,
            batch_tokens=self.plan.batch_tokens,
        )

    def _compile_every_shape(self) -> None:
        """A compiled step: compile it for every batch shape before the first update, so that the
        run's own timing (the time budget's re-plan) meets no compilation (`Learner.warm_up`)."""
        if not self.config.training.compiles(self.device):
            return
        started = time.perf_counter()
        batches = shape_batches(self._loader(self.progress.epoch), self.dist.enabled)
        self.learner.warm_up(batches)
        if self.dist.is_main:
            logger.info(
                "compiled the step for %d batch shapes (%.1f s)",
                len(batches),
                time.perf_counter() - started,
            )

    def _validate(self, validator: Validator, log: RunLogger, bar: TrainingBar) -> dict[str, float]:
        """Validate the model at the step reached, and record the scores."""
        with bar.validating(len(validator.bleu_subset)):
            metrics = validator.run(self.progress.step, log)
        self._record_validation(metrics)
        return metrics

    def _record_validation(self, metrics: dict[str, float]) -> None:
        """Track the best dev BLEU, log the validation, and save `best.pt` when it improved."""
        progress = self.progress
        improved = progress.record_validation(metrics[self.selection_metric])
        line = validation_line(
            progress.step,
            self.schedule.steps,
            metrics,
            progress.best_bleu,
            progress.best_step,
            progress.elapsed,
        )
        logger.info("%s", line)
        if improved:
            self.save(self.run_dir.best, metrics)

    @property
    def selection_metric(self) -> str:
        """The dev score that picks `best.pt` and counts for patience: `data.dev_corpus`'s BLEU,
        else all of dev's."""
        corpus = self.config.data.dev_corpus
        return "bleu" if corpus is None else corpus_metric(corpus, "bleu")

    def _early_stop(self, stop: bool) -> bool:
        exhausted = out_of_patience(self.progress, self.config.training)
        if exhausted and self.dist.is_main:
            patience = self.config.training.patience
            logger.info("early stopping: no dev BLEU improvement in %d evaluations", patience)
        return self.dist.any(stop or exhausted)

    # ---- checkpoints --------------------------------------------------------------------------

    def state(self, metrics: dict[str, float] | None = None) -> dict[str, Any]:
        """`last.pt`: a snapshot and the optimizer, all that continues the run exactly."""
        optimizer = self.optimizer.state_dict()
        return {**self.snapshot_state(), "optimizer": optimizer, "metrics": metrics or {}}

    def save(self, path: Path, metrics: dict[str, float] | None = None) -> None:
        if self.dist.is_main:
            save_checkpoint(path, self.state(metrics))

    def snapshot_state(self) -> dict[str, Any]:
        """A snapshot: the weights with the run's config (its `model`, the plan's), and where the
        run stands, all that `training.resume_from=snapshot` continues from."""
        trained = replace(self.config, model=self.model.cfg)
        state = inference_state(self.model, self.data.src_tok, self.data.tgt_tok, trained)
        state.update(
            scheduler=self.scheduler.state_dict(),
            scaler=self.scaler.state_dict(),
            precision=self.precision.name,
            progress=asdict(self.progress),
            rng=rng_state(self.device),
        )
        if self.lineage is not None:
            state["parent"] = self.lineage
        return state

    def _save_last(self, now: float, final: bool) -> bool:
        """`last.pt` at a save step ending at `now`: at the first of this start (so that a run
        with snapshots always has one to continue from) and the run's last (`final`), else once
        `training.last_every` has passed since the last one (without it: at every save step).
        Whether it was written. Resuming from an older `last.pt` trains the same steps again."""
        interval, written = self.config.training.last_every, self._last_written
        paced = not final and interval is not None and written is not None
        if paced and now - written < parse_duration(interval, "training.last_every"):
            return False
        self.save(self.run_dir.last)
        self._last_written = now
        return True

    def _averaged(self, step: int) -> bool:
        """Whether the snapshot due at `step` can be among the `keep_snapshots` that the run's
        end averages. Past the warm-up (at whose end a time budget's re-plan fixes the step
        count), in a run that stops only at its last step, a snapshot followed by that many
        later ones cannot: it would be written, fsynced and deleted unread."""
        training, schedule = self.config.training, self.schedule
        if step <= schedule.warmup_steps or training.patience or training.max_epochs:
            return True
        every = schedule.save_every
        later = schedule.steps // every - step // every + int(schedule.steps % every > 0)
        return step >= schedule.steps or later < training.keep_snapshots

    def _snapshot(self, step: int) -> None:
        """A snapshot, for averaging, naming the one before it so that a gap shows; the oldest
        beyond `keep_snapshots` are deleted. None where averaging would never read it."""
        keep = self.config.training.keep_snapshots
        if keep == 0 or not self._averaged(step):
            return
        previous, self.progress.last_snapshot = self.progress.last_snapshot, step
        if not self.dist.is_main:
            return
        state = {**self.snapshot_state(), "previous_snapshot": previous}
        save_checkpoint(self.run_dir.snapshot(step), state)
        for old in self.run_dir.snapshot_paths()[:-keep]:
            old.unlink()

    def _restore(self, saved: SavedRun) -> None:
        """Continue from `saved`: `last.pt`, or under `training.resume_from=snapshot` the newest
        snapshot (`resume.py`); the plan is the one it stored (the planner read it)."""
        training = self.config.training
        check_compatible(
            saved.state, self.model.cfg, self.data.src_tok, self.data.tgt_tok, saved.path
        )
        load_weights(self.model, saved.state["model"], str(saved.path))
        check_stopping_settings(saved, training)
        self.lineage = saved.state.get("parent", self.lineage)
        # A copy, finished also where the flag is unset but no step of the schedule is left.
        self.progress = replace(saved.progress, finished=saved.finished)
        self.scheduler.load_state_dict(saved.state["scheduler"])
        restore_optimizer(self.optimizer, self.scheduler, saved)
        precision = continued_precision(
            training.precision, self.precision, saved.state.get("precision"), self.run_dir
        )
        if precision is not None:
            self.learner.precision, self.learner.scaler = precision, precision.grad_scaler()
            self.model_loss.precision = precision
        self.scaler.load_state_dict(saved.state["scaler"])
        set_rng_state(saved.state["rng"], self.device)
        if self.dist.rank:  # the state saved is rank 0's
            world_size = self.dist.world_size
            torch.manual_seed(
                dropout_seed(training.seed, self.dist.rank, world_size, saved.progress.step)
            )
        if self.dist.is_main:
            afresh = "" if saved.has_optimizer else " (the optimizer's moments start afresh)"
            logger.info("resumed %s at step %d%s", saved.path, self.progress.step, afresh)
