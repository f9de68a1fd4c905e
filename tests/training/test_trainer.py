"""The training loop: learning, accumulation, exact resume, checkpoints, the non-finite guard."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
import torch

from llm_from_scratch import precision as precision_module
from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from llm_from_scratch.paths import RunDir
from llm_from_scratch.programs.train import TrainConfig, prepare_data
from llm_from_scratch.training.budget.planner import BudgetPlanner
from llm_from_scratch.training.final import finish
from llm_from_scratch.training.finished import finished_run
from llm_from_scratch.training.plan import Choices
from llm_from_scratch.training.resume import read_saved_run, saved_plan
from llm_from_scratch.training.stats import LogWindow, StepBatches, TrainingError, guard
from llm_from_scratch.training.trainer import Trainer
from tests.decoding.builders import MISFIT_MESSAGES, misfit_weights


def with_trainer(config: TrainConfig, run_dir: Path, **changes) -> TrainConfig:
    """`config` training in `run_dir`, with `changes` to its `training` section."""
    return dataclasses.replace(
        config,
        paths=dataclasses.replace(config.paths, run_dir=str(run_dir)),
        training=dataclasses.replace(config.training, **changes),
    )


def fp32(config: TrainConfig, run_dir: Path, **changes) -> TrainConfig:
    return with_trainer(config, run_dir, precision="fp32", device="cpu", **changes)


def run_trainer(config: TrainConfig, data, *args, **kwargs) -> Trainer:
    """The trainer of `config`'s run as it stands: continued from its `last.pt`, if it has one."""
    saved = read_saved_run(config.run_dir, config.training)
    return Trainer(config, data, *args, saved=saved, **kwargs)


def finished_run_of(run_dir: RunDir, config: TrainConfig):
    """`finished_run` as the train program asks it, after its one read of the run's `last.pt`."""
    saved = read_saved_run(run_dir, config.training)
    return finished_run(run_dir, config, saved, saved_plan(config, saved, Choices()))


# What the runs of these tests chose: their tokenizers, and max_steps as a time budget's cap.
AS_BEFORE = Choices(tokenizers=True, max_steps=True)


class Run:
    """A run as `make train` runs it (`programs/train.run`: the plan, the data stage, training,
    the final model; a finished run trains nothing), on `data` where the plan keeps its
    tokenizers, started by `fit`; then its trainer's attributes, and `final`.
    `chosen`: what the command chose (default: the tokenizers, and `max_steps` as a time
    budget's cap); `Choices(tokenizers=False)`: a plan of the short recipe trains its own
    tokenizers, and the data stage tokenizes with them."""

    def __init__(
        self,
        config: TrainConfig,
        data,
        parent=None,
        chosen: Choices = AS_BEFORE,
        **planning,
    ) -> None:
        self.arguments = (config, data, parent, chosen, planning)

    def fit(self) -> dict[str, float]:
        config, data, parent, chosen, planning = self.arguments
        saved = read_saved_run(config.run_dir, config.training)
        planner = BudgetPlanner(config, chosen=chosen, **planning)
        plan, pacing = planner.plan(saved_plan(config, saved, chosen))
        if plan.tokenizer != config.tokenizer:
            config = dataclasses.replace(config, tokenizer=plan.tokenizer)
            data = prepare_data(config)
        self.trainer = Trainer(config, data, plan, saved=saved, parent=parent, pacing=pacing)
        if self.trainer.progress.finished:
            return self.trainer.fit()  # which trains nothing and writes nothing
        with closing(self.trainer.run_logger()) as log:
            metrics = self.trainer.fit(log)
            self.final = finish(self.trainer, metrics, log)
        return metrics

    def __getattr__(self, name: str):
        return getattr(self.__dict__["trainer"], name)


@pytest.mark.slow
def test_copy_task_reaches_high_bleu(copy_task, tmp_path):
    config, data, _ = copy_task
    model = dataclasses.replace(config.model, d_model=64, n_heads=4, d_ff=128)
    config = dataclasses.replace(config, model=model)
    config = with_trainer(
        config, tmp_path, max_steps=400, warmup_steps=50, lr=3e-3, eval_every=400, save_every=400
    )
    metrics = Trainer(config, data).fit()
    assert metrics["bleu"] >= 90, metrics
    assert (tmp_path / "best.pt").is_file() and (tmp_path / "last.pt").is_file()
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))


@pytest.fixture
def float64_parameters() -> Iterator[None]:
    """Models built in the block hold float64 parameters: rounding then sits far below any
    tolerance a test states, whatever kernels the CPU runs."""
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(dtype)


def test_accumulation_equals_one_big_batch(copy_task, tmp_path, float64_parameters):
    config, data, _ = copy_task
    batches = list(data.eval_loader("dev"))[:1]
    (big,) = batches
    rows = big.src.shape[0]
    assert rows >= 8
    pieces = [slice(i, i + 2) for i in range(0, 8, 2)]
    small = [
        dataclasses.replace(
            big, **{f.name: getattr(big, f.name)[piece] for f in dataclasses.fields(big)}
        )
        for piece in pieces
    ]
    whole = dataclasses.replace(
        big, **{f.name: getattr(big, f.name)[:8] for f in dataclasses.fields(big)}
    )
    first_lr = config.training.lr / config.training.warmup_steps
    parameters = []
    for micro_batches, accumulation in (([whole], 1), (small, 4)):
        cfg = fp32(config, tmp_path / str(accumulation), accumulation_steps=accumulation)
        trainer = Trainer(
            dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, dropout=0.0)), data
        )
        assert next(trainer.model.parameters()).dtype == torch.float64
        initial = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
        trainer.update(StepBatches.alone(micro_batches))
        parameters.append(torch.cat([p.detach().flatten() for p in trainer.model.parameters()]))
        assert (parameters[-1] - initial).abs().max() > 0.5 * first_lr  # the update moved them
    # Adam's first update is lr * g / (|g| + eps) for each entry, whose slope in g is at most
    # lr / eps: the two sums of the same gradient terms differ by about float64's 2**-52 times
    # their size (at most the clipped norm, 1), so the parameters differ by at most about
    # lr * 2**-52 / eps, under a millionth of the learning rate. In float32 the same bound is
    # lr * 2**-23 / eps, a dozen learning rates: any entry whose gradient cancels to Adam's eps
    # could then flip its step, so the comparison is made in float64.
    assert torch.allclose(parameters[0], parameters[1], atol=1e-6 * first_lr, rtol=0)


class Crash(Exception):
    """Stands in for a killed process."""


@contextmanager
def crashing_after_step(monkeypatch: pytest.MonkeyPatch, step: int) -> Iterator[None]:
    """Within the block, a training run dies when it starts the update after `step`."""
    update = Trainer.update

    def crash(trainer: Trainer, micro_batches):
        if trainer.progress.step == step:
            raise Crash
        return update(trainer, micro_batches)

    monkeypatch.setattr(Trainer, "update", crash)
    with pytest.raises(Crash):
        yield
    monkeypatch.setattr(Trainer, "update", update)


@pytest.mark.parametrize("schedule", ["cosine", "inverse_sqrt"])
@pytest.mark.slow
def test_resume_after_a_crash_continues_exactly(copy_task, tmp_path, monkeypatch, schedule):
    config, data, _ = copy_task
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    settings = {"max_steps": 30, "eval_every": 1000, "schedule": schedule}
    reference = Trainer(fp32(config, tmp_path / "straight", save_every=1000, **settings), data)
    reference.fit()
    reference_weights = torch.cat([p.flatten() for p in reference.model.parameters()])

    resumed_cfg = fp32(config, tmp_path / "resumed", save_every=12, **settings)
    with crashing_after_step(monkeypatch, 13):  # last.pt was written at step 12
        run_trainer(resumed_cfg, data).fit()
    resumed = run_trainer(resumed_cfg, data)
    resumed.fit()
    assert resumed.progress.step == 30
    resumed_weights = torch.cat([p.flatten() for p in resumed.model.parameters()])
    torch.testing.assert_close(resumed_weights, reference_weights, atol=1e-6, rtol=0)


@pytest.mark.parametrize(("requested", "resumed_in"), [("auto", "bf16"), ("fp32", "fp32")])
@pytest.mark.slow
def test_resume_keeps_the_precision_auto_started_with(
    copy_task, tmp_path, monkeypatch, requested, resumed_in
):
    config, data, _ = copy_task
    started = with_trainer(
        config, tmp_path, device="cpu", precision="auto", max_steps=3, eval_every=1000, save_every=2
    )
    monkeypatch.setattr(precision_module, "cpu_bf16_is_faster", lambda: True)
    with crashing_after_step(monkeypatch, 2):  # last.pt was written at step 2
        run_trainer(started, data).fit()
    assert load_checkpoint(tmp_path / "last.pt")["precision"] == "bf16"

    # The timing comes out the other way this time; an explicit precision still wins.
    monkeypatch.setattr(precision_module, "cpu_bf16_is_faster", lambda: False)
    resumed = run_trainer(with_trainer(started, tmp_path, precision=requested), data)
    resumed.fit()
    assert resumed.progress.step == 3
    assert resumed.precision.name == resumed_in


def test_changed_model_is_refused_on_resume(copy_task, tmp_path):
    config, data, _ = copy_task
    run_trainer(fp32(config, tmp_path, max_steps=2, eval_every=1000, save_every=2), data).fit()
    other = dataclasses.replace(config, model=dataclasses.replace(config.model, d_ff=96))
    with pytest.raises(CheckpointError, match=r"model\.d_ff: 64 != 96"):
        run_trainer(fp32(other, tmp_path, max_steps=4), data).fit()


@pytest.mark.parametrize("problem", sorted(MISFIT_MESSAGES))
def test_weights_that_do_not_fit_are_refused_on_resume(copy_task, tmp_path, problem):
    config, data, _ = copy_task
    run_trainer(fp32(config, tmp_path, max_steps=2, eval_every=1000, save_every=2), data).fit()
    path = tmp_path / "last.pt"
    state = load_checkpoint(path)
    state["model"] = misfit_weights(state["model"], config.model, data.tgt_tok.vocab_size, problem)
    save_checkpoint(path, state)  # whole, as saved: only its weights misfit
    with pytest.raises(CheckpointError, match="its weights do not fit") as error:
        run_trainer(fp32(config, tmp_path, max_steps=4), data).fit()
    assert re.search(MISFIT_MESSAGES[problem], str(error.value))
    assert "\n" not in str(error.value)


def test_a_weights_only_file_as_last_pt_is_refused_on_resume(copy_task, tmp_path):
    config, data, _ = copy_task
    cfg = fp32(config, tmp_path, max_steps=2, eval_every=1000, save_every=2, keep_snapshots=1)
    run_trainer(cfg, data).fit()
    (snapshot,) = RunDir(tmp_path).snapshot_paths()
    shutil.copyfile(snapshot, tmp_path / "last.pt")  # e.g. to "continue from" a snapshot
    with pytest.raises(CheckpointError, match=r"last\.pt is not a training checkpoint") as error:
        run_trainer(fp32(config, tmp_path, max_steps=4), data).fit()
    assert "\n" not in str(error.value)


def test_truncated_checkpoint_gives_clear_error(copy_task, tmp_path):
    config, data, _ = copy_task
    run_trainer(fp32(config, tmp_path, max_steps=2, eval_every=1000, save_every=2), data).fit()
    path = tmp_path / "last.pt"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="is truncated: a zip archive without its end"):
        load_checkpoint(path)


def test_nonfinite_loss_skips_the_update(copy_task, tmp_path, monkeypatch):
    config, data, _ = copy_task
    trainer = Trainer(fp32(config, tmp_path, max_nonfinite=3), data)
    batch = next(iter(data.eval_loader("dev")))
    before = [p.detach().clone() for p in trainer.model.parameters()]
    original_forward = trainer.model.forward
    monkeypatch.setattr(trainer.model, "forward", lambda *a: original_forward(*a) * float("nan"))
    window = LogWindow()
    for step in (1, 2, 3):
        window.add(step, trainer.update(StepBatches.alone([batch])))
    for old, new in zip(before, trainer.model.parameters(), strict=True):
        assert torch.equal(old, new)
    settled = window.settle()
    assert [step.skipped for step in settled] == [True] * 3
    guard(settled[:2], trainer.progress, max_nonfinite=3)
    with pytest.raises(TrainingError, match="3 non-finite updates in a row at step 3"):
        guard(settled[2:], trainer.progress, max_nonfinite=3)
