"""A time budget (`training.max_time`) plans the run's steps; the run stays exact and resumable."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import load_checkpoint, restore_for_inference
from llm_from_scratch.data.datamodule import build_data
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import RunDir
from llm_from_scratch.training.budget import planner as planner_module
from llm_from_scratch.training.budget import probe as probe_module
from llm_from_scratch.training.budget.recipe import describe_recipe, ladder
from llm_from_scratch.training.budget.schedule import (
    SAFETY_MARGIN,
    Costs,
    Deadline,
    Rehearsal,
    measure_costs,
    plan,
    replan,
    run_seconds,
    slower_clock,
)
from llm_from_scratch.training.budget.stand_in import stand_in_data
from llm_from_scratch.training.budget.timing import WINDOW_STEPS, RunTiming, TimeBudget
from llm_from_scratch.training.config import ShortRunConfig, TrainingConfig, parse_duration
from llm_from_scratch.training.finished import finished_run
from llm_from_scratch.training.learner import Learner
from llm_from_scratch.training.optim import lr_multiplier
from llm_from_scratch.training.plan import PROBE_WARMUP, Choices, Schedule, recipe_plan
from llm_from_scratch.training.resume import FinishedRunError, read_saved_run, saved_plan
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers
from llm_from_scratch.training.trainer import Trainer
from llm_from_scratch.training.validation import Validator

from .test_trainer import Run, crashing_after_step, fp32

# The default recipe's lengths under cosine, whose count a plan fixes at the warm-up's end: the
# arithmetic below; wsd's re-plans and snapshot spacing are tests/training/test_wsd.py's.
DEFAULT = TrainingConfig(
    max_steps=4200,
    warmup_steps=600,
    eval_every=500,
    save_every=250,
    keep_snapshots=5,
    short_run=None,
    schedule="cosine",
)
WITH_SHORT_RUN = dataclasses.replace(
    DEFAULT,
    short_run=ShortRunConfig(max_steps=1500, lr=2e-3, dropout=0.0, warmup=0.143, save_every=0.06),
)
SLOW_CPU = Costs(step=1.9, validation=25.0, save=0.4, averaging=27.0)


class FakeClock:
    """Each reading is one second after the previous one."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class StepClock(FakeClock):
    """Each update takes `probe_step` seconds in the budget probe and `run_step` in the run; a
    reading takes `reading` seconds (a millisecond)."""

    def __init__(
        self, monkeypatch, probe_step: float = 1.0, run_step: float = 1.0, reading: float = 0.001
    ) -> None:
        super().__init__()
        self.reading = reading
        self.probing = False
        update, probe = Learner.update, planner_module.probe_costs

        def timed(learner, micro_batches):
            self.now += probe_step if self.probing else run_step
            return update(learner, micro_batches)

        def probing(*args, **kwargs):
            self.probing = True
            try:
                return probe(*args, **kwargs)
            finally:
                self.probing = False

        monkeypatch.setattr(Learner, "update", timed)
        monkeypatch.setattr(planner_module, "probe_costs", probing)

    def __call__(self) -> float:
        self.now += self.reading
        return self.now


def logged_step_budget_run(log: str) -> dict:
    """The settings of the step-budget run that the last plan in `log` names."""
    overrides = log.rsplit("the same run without a budget: ", 1)[1].splitlines()[0].split()
    settings: dict = {}
    for override in overrides:
        key, value = override.removeprefix("training.").split("=")
        if key in ("max_time", "short_run"):  # the only settings set to null
            settings[key] = None
        elif key == "short_run.warmup":
            settings[key] = float(value)
        else:
            settings[key] = int(value)
    return settings


def first_steps(log: str) -> int:
    """The steps of the first plan in `log`."""
    return int(log.split("), ")[1].split()[0].replace(",", ""))


def step_budget_config(config, run_dir: Path, log: str, **changes):
    """`budgeted(config, run_dir, **changes)` with the step-budget run's settings from `log`."""
    settings = {**changes, **logged_step_budget_run(log)}
    recipe = {key: settings.pop(key) for key in list(settings) if key.startswith("short_run.")}
    if recipe:
        settings["short_run"] = dataclasses.replace(
            settings["short_run"],
            **{key.removeprefix("short_run."): v for key, v in recipe.items()},
        )
    return budgeted(config, run_dir, **settings)


def assert_same_weights(ours, theirs, atol: float = 0.0) -> None:
    for mine, other in zip(ours.model.parameters(), theirs.model.parameters(), strict=True):
        torch.testing.assert_close(mine, other, atol=atol, rtol=0)


@pytest.mark.parametrize(
    ("text", "seconds"), [("1800", 1800), ("30m", 1800), ("1h", 3600), ("1h30m", 5400), ("90s", 90)]
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds
    assert TrainingConfig(max_time=text).budget_seconds == seconds


@pytest.mark.parametrize("text", ["", "soon", "30 min", "-5", "0", "1d"])
def test_bad_durations_are_refused(text):
    with pytest.raises(ConfigError, match=r"training\.max_time"):
        TrainingConfig(max_time=text)


def test_a_slower_clock_counts_each_second_slowdown_times():
    readings = iter([10.0, 10.5, 13.0])
    clock = slower_clock(2.0, origin=10.0, clock=lambda: next(readings))
    assert [clock(), clock(), clock()] == [10.0, 11.0, 16.0]


@pytest.mark.parametrize("slowdown", [0, -1.5])
def test_a_slowdown_must_be_positive(slowdown):
    with pytest.raises(ConfigError, match=r"training\.budget_slowdown"):
        TrainingConfig(budget_slowdown=slowdown)


def test_a_slowdown_without_a_budget_is_refused():
    with pytest.raises(ConfigError, match=r"training\.budget_slowdown.*training\.max_time"):
        TrainingConfig(max_time=None, budget_slowdown=2.0)


@pytest.mark.slow
def test_a_run_planned_as_a_slower_cpu_trains_that_cpus_run(copy_task, tmp_path):
    """A machine twice as fast, planning as one twice as slow, trains the slow one's run: the
    same plan, log line and weights. Times are powers of two, so both clocks read exactly."""
    config, data, _ = copy_task
    runs = {}
    for name, seconds, slowdown in (("slow", 1.0, 1.0), ("fast", 0.5, 2.0)):
        with pytest.MonkeyPatch.context() as patch:
            clock = StepClock(patch, probe_step=seconds, run_step=seconds, reading=seconds / 1024)
            settings = {"max_time": "35", "budget_slowdown": slowdown}
            run = Run(
                budgeted(config, tmp_path / name, **settings),
                data,
                clock=slower_clock(slowdown, 0.0, clock),
                started_at=0.0,
            )
            run.fit()
            runs[name] = run
    slow, fast = runs["slow"], runs["fast"]
    assert 1 < slow.schedule.steps < 60
    assert fast.schedule == slow.schedule
    assert_same_weights(fast, slow)


@pytest.mark.parametrize("budget", [300.0, 900.0, 1800.0, 3600.0])
def test_the_plan_is_the_longest_run_that_fits(budget):
    schedule = plan(DEFAULT, budget, SLOW_CPU)
    assert run_seconds(schedule, SLOW_CPU) <= budget
    assert schedule.steps < DEFAULT.max_steps
    longer = Schedule.of(DEFAULT, schedule.steps + 1)
    assert run_seconds(longer, SLOW_CPU) > budget * (1 - SAFETY_MARGIN)  # the margin held back


def test_a_budget_that_holds_every_step_of_a_cap_the_command_set_changes_nothing():
    fast = Costs(step=0.3, validation=8.0, save=0.2, averaging=9.0)
    assert plan(DEFAULT, 1800.0, fast, cap=DEFAULT.max_steps) == Schedule.of(DEFAULT)
    assert plan(DEFAULT, 1800.0, fast).steps > DEFAULT.max_steps  # no cap: the budget fills
    assert Schedule.of(DEFAULT) == Schedule(4200, 600, 500, 250)


def test_a_cap_below_the_recipe_scales_its_warmup_as_a_budget_does():
    """A command's `training.max_steps` below the recipe's length (`recipe_steps`, which the
    program reads from the config without the cap) shrinks the warm-up and the snapshot interval
    in proportion, so the re-plan at the warm-up's end comes early, not at the last step."""
    general = TrainingConfig(
        max_steps=30000,
        warmup_steps=3000,
        save_every=1500,
        eval_every=2000,
        short_run=None,
        schedule="cosine",  # the snapshot interval as scaled (wsd's would shrink into its decay)
    )
    capped = dataclasses.replace(general, max_steps=3000, recipe_steps=30000)
    fast = Costs(step=0.3, validation=8.0, save=0.2, averaging=9.0)
    schedule = plan(capped, 7200.0, fast, cap=3000)
    assert schedule == plan(general, 7200.0, fast, cap=3000) == Schedule(3000, 300, 2000, 150)
    assert "training.warmup_steps=300 training.save_every=150" in schedule.overrides(capped)
    # without the recipe's length the cap was taken for it: a warm-up as long as the run
    assert plan(dataclasses.replace(general, max_steps=3000), 7200.0, fast, cap=3000) == Schedule(
        3000, 3000, 2000, 1500
    )


def test_a_shorter_schedule_scales_warmup_and_snapshots_and_still_reaches_zero():
    schedule = Schedule.of(DEFAULT, 1050)
    assert (schedule.warmup_steps, schedule.save_every, schedule.eval_every) == (150, 62, 500)
    # averaged.pt covers the same share of the run: 5 snapshots of 62 steps out of 1,050
    assert abs(5 * schedule.save_every / 1050 - 5 * 250 / 4200) < 0.01
    last = schedule.steps - 1
    assert lr_multiplier(last, "cosine", schedule) == 0.0
    assert lr_multiplier(last - 1, "cosine", schedule) > 0.0
    assert lr_multiplier(schedule.warmup_steps - 1, "cosine", schedule) == 1.0


def test_a_short_run_takes_the_short_recipe_whether_planned_or_set_by_max_steps():
    planned = Schedule.of(WITH_SHORT_RUN, 1000)
    assert (planned.warmup_steps, planned.save_every, planned.short) == (143, 60, True)
    assert Schedule.of(dataclasses.replace(WITH_SHORT_RUN, max_steps=1000)) == planned
    assert planned.overrides(WITH_SHORT_RUN) == "training.max_time=null training.max_steps=1000"
    assert lr_multiplier(planned.steps - 1, "cosine", planned) == 0.0
    assert not Schedule.of(WITH_SHORT_RUN, 1501).short
    # The default recipe at a short run's length: only with the short recipe turned off.
    default_recipe = Schedule.of(WITH_SHORT_RUN, 1000, short=False)
    assert default_recipe.overrides(WITH_SHORT_RUN).endswith("training.short_run=null")
    assert plan(WITH_SHORT_RUN, 600.0, SLOW_CPU, short=True).short
    assert Schedule.of(WITH_SHORT_RUN) == Schedule.of(DEFAULT)  # 4,200 steps: the default recipe


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_steps", 0),
        ("min_default_steps", -1),
        ("lr", 0.0),
        ("dropout", 1.0),
        ("warmup", 1.0),
        ("save_every", 0.0),
        ("d_model", 0),
        ("d_ff", 0),
    ],
)
def test_short_run_settings_are_checked(key, value):
    with pytest.raises(ConfigError, match=f"training.short_run.{key}="):
        ShortRunConfig(**{key: value})


def budgeted(config, run_dir: Path, **changes):
    settings = {"max_steps": 60, "warmup_steps": 12, "eval_every": 1000, "save_every": 20}
    return fp32(config, run_dir, **{**settings, **changes})


@pytest.mark.slow
def test_a_budgeted_run_is_the_step_budget_run_its_log_names(copy_task, tmp_path, caplog):
    config, data, _ = copy_task
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    trainer = Run(budgeted(config, tmp_path / "budget", max_time="30"), data, clock=FakeClock())
    with caplog.at_level("INFO"):
        trainer.fit()
    schedule = trainer.schedule
    assert 1 < schedule.steps < 60 and trainer.progress.step == schedule.steps
    assert f"(default), {schedule.steps} steps" in caplog.text
    assert schedule.overrides(trainer.config.training) in caplog.text
    assert trainer.scheduler.get_last_lr()[0] == 0.0  # the schedule ended at the planned step
    assert load_checkpoint(tmp_path / "budget" / "last.pt")["progress"]["planned_steps"] == (
        schedule.steps
    )

    plain = Trainer(
        budgeted(
            config,
            tmp_path / "plain",
            max_steps=schedule.steps,
            warmup_steps=schedule.warmup_steps,
            save_every=schedule.save_every,
        ),
        data,
    )
    plain.fit()
    for ours, theirs in zip(trainer.model.parameters(), plain.model.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs, atol=0, rtol=0)


@pytest.mark.slow
def test_a_budgeted_short_run_is_the_step_budget_run_of_its_step_count(copy_task, tmp_path, caplog):
    config, data, _ = copy_task
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    short = ShortRunConfig(max_steps=60, lr=3e-3, dropout=0.0, warmup=0.2, save_every=0.25)
    trainer = Run(
        budgeted(config, tmp_path / "budget", max_time="31", short_run=short),
        data,
        clock=FakeClock(),
    )
    with caplog.at_level("INFO"):
        trainer.fit()
    steps = trainer.schedule.steps
    assert trainer.schedule.short and 1 < steps < 60
    assert f"without a budget: training.max_time=null training.max_steps={steps}" in caplog.text
    dropouts = [m.p for m in trainer.model.modules() if isinstance(m, torch.nn.Dropout)]
    assert dropouts and set(dropouts) == {0.0}

    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, short_run=short)
    plain = Trainer(plain_cfg, data)
    assert plain.schedule == trainer.schedule
    assert plain.scheduler.base_lrs == [3e-3, 3e-3]
    plain.fit()
    assert_same_weights(trainer, plain)


def prepared(config):
    """The train program's data stage for `config`'s tokenizers (trained once, then cached)."""
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
    return build_data(config.data, src_tok, tgt_tok, config.paths)


def test_the_short_recipe_chooses_the_tokenizers_unless_the_command_did(copy_task, tmp_path):
    config, _, _ = copy_task
    short = ShortRunConfig(max_steps=60, vocab_size=300)
    step_budget = budgeted(config, tmp_path / "run", max_time=None, short_run=short)
    # a step budget is short by its step count
    assert recipe_plan(step_budget).tokenizer.vocab_size == 300
    assert recipe_plan(step_budget, chosen=Choices(tokenizers=True)).tokenizer == config.tokenizer
    long = budgeted(config, tmp_path / "run", max_time=None, max_steps=61, short_run=short)
    assert recipe_plan(long).tokenizer == config.tokenizer


@pytest.mark.slow
def test_a_budget_that_picks_the_short_recipe_trains_with_its_tokenizers(
    copy_task, tmp_path, caplog, monkeypatch
):
    config, data, _ = copy_task
    short = ShortRunConfig(
        max_steps=60, lr=3e-3, dropout=0.0, warmup=0.2, save_every=0.25, vocab_size=300
    )
    budget = budgeted(config, tmp_path / "budget", max_time="60", short_run=short)
    # A second an update: the clock is read only where the run needs the time, so a clock that
    # ticks per reading would make the steps nearly free and every plan fit.
    trainer = Run(budget, data, clock=StepClock(monkeypatch), chosen=Choices(max_steps=True))
    with caplog.at_level("INFO"):
        trainer.fit()
    assert "vocabularies of 300 pieces" in caplog.text
    # one plan, made once before the data stage (and made again at the warm-up's end)
    assert caplog.text.count("timed on a stand-in of the corpus: an update") == 1
    planned = caplog.text.count("the same run without a budget")
    assert planned == 1 + caplog.text.count("planned again")
    assert caplog.text.count("tokenized splits ready") == 1
    steps = trainer.schedule.steps
    assert trainer.schedule.short and 1 < steps < 60
    saved = load_checkpoint(tmp_path / "budget" / "last.pt")
    assert saved["config"]["tokenizer"]["vocab_size"] == 300
    vocabulary = trainer.model.output_proj.out_features
    assert vocabulary == trainer.data.tgt_tok.vocab_size != data.tgt_tok.vocab_size

    # the step-budget run the log names is short by its step count: the same tokenizers
    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, short_run=short)
    plain_cfg = dataclasses.replace(plain_cfg, tokenizer=recipe_plan(plain_cfg).tokenizer)
    plain = Trainer(plain_cfg, prepared(plain_cfg))
    assert plain.schedule == trainer.schedule
    plain.fit()
    assert_same_weights(trainer, plain)


@pytest.mark.slow
def test_where_the_default_recipe_does_not_fit_the_planner_trains_the_short_one(
    copy_task, tmp_path, caplog, monkeypatch
):
    config, data, _ = copy_task
    short = ShortRunConfig(max_steps=150, lr=3e-3, dropout=0.0, batch_tokens=300, save_every=0.25)
    batch_sizes = []
    loader = type(data).train_loader

    def spy(self, *args, **kwargs):
        batch_sizes.append(kwargs["batch_tokens"])
        return loader(self, *args, **kwargs)

    monkeypatch.setattr(type(data), "train_loader", spy)
    settings = {"max_time": "35", "max_steps": 200, "short_run": short}
    trainer = Run(budgeted(config, tmp_path / "budget", **settings), data, clock=FakeClock())
    with caplog.at_level("INFO"):
        trainer.fit()
    steps = trainer.schedule.steps
    assert trainer.schedule.short and 1 < steps < 150
    assert f"(short), {steps} steps" in caplog.text
    assert trainer.progress.planned_short
    assert batch_sizes[0] == 600 and batch_sizes[-1] == 300  # probed both, trained the short

    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, **settings)
    plain = Trainer(plain_cfg, data)
    assert plain.schedule == trainer.schedule
    plain.fit()
    assert_same_weights(trainer, plain)


def test_a_budget_switched_to_the_short_recipe_takes_as_many_of_its_steps_as_fit():
    recipe = dataclasses.replace(WITH_SHORT_RUN.short_run, max_steps=300)
    switched = plan(dataclasses.replace(WITH_SHORT_RUN, short_run=recipe), 1800.0, SLOW_CPU, True)
    assert switched.short and switched.steps > 300
    assert switched == plan(WITH_SHORT_RUN, 1800.0, SLOW_CPU, short=True)  # the time binds
    longer = Schedule.of(WITH_SHORT_RUN, switched.steps + 1, short=True)
    assert run_seconds(longer, SLOW_CPU) > 1800.0 * (1 - SAFETY_MARGIN)
    assert Schedule.of(WITH_SHORT_RUN, switched.steps, short=True) == switched
    # Planned again at the same step time, the steps done having taken what was planned: the
    # same length, give or take the margin held back from a smaller remainder.
    done = switched.warmup_steps
    spent = done * SLOW_CPU.step + done // switched.save_every * SLOW_CPU.save
    again = replan(WITH_SHORT_RUN, switched, done, 1800.0 - spent, SLOW_CPU)
    assert switched.steps <= again.steps <= switched.steps * 1.01
    # A run set to the short recipe by its own max_steps keeps them, however long the budget.
    chosen = dataclasses.replace(WITH_SHORT_RUN, max_steps=200)
    assert plan(chosen, 1e6, SLOW_CPU, short=True, cap=200) == Schedule.of(chosen)


@pytest.mark.slow
def test_a_budgeted_short_run_longer_than_the_recipes_step_budget_is_reproducible(
    copy_task, tmp_path, caplog
):
    config, data, _ = copy_task
    short = ShortRunConfig(max_steps=10, min_default_steps=1000, batch_tokens=300, save_every=0.25)
    # cosine: a clock a second a reading leaves wsd's decay of a few steps a save at each
    settings = {"max_time": "35", "max_steps": 200, "short_run": short, "schedule": "cosine"}
    trainer = Run(budgeted(config, tmp_path / "budget", **settings), data, clock=FakeClock())
    with caplog.at_level("INFO"):
        trainer.fit()
    steps = trainer.schedule.steps
    assert trainer.schedule.short and 10 < steps < 200 and trainer.progress.step == steps
    assert f"training.max_steps={steps} training.short_run.max_steps={steps}" in caplog.text
    assert trainer.scheduler.get_last_lr()[0] == 0.0

    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, **settings)
    assert plain_cfg.training.short_run.max_steps == steps
    plain = Trainer(plain_cfg, data)
    assert plain.schedule == trainer.schedule
    plain.fit()
    assert_same_weights(trainer, plain)


@pytest.mark.parametrize("min_default_steps", [0, 1000])
@pytest.mark.slow
def test_where_a_default_plan_falls_below_its_floor_the_short_recipe_fills_the_budget(
    copy_task, tmp_path, caplog, min_default_steps
):
    config, data, _ = copy_task
    short = ShortRunConfig(max_steps=5, min_default_steps=min_default_steps, save_every=0.5)
    settings = {"max_time": "35", "max_steps": 200, "short_run": short}
    trainer = Run(budgeted(config, tmp_path, **settings), data, clock=FakeClock())
    with caplog.at_level("INFO"):
        trainer.fit()
    steps = trainer.schedule.steps
    if min_default_steps:  # the short recipe, for more steps than a step budget gives it
        assert trainer.schedule.short and steps > 5
        assert f"(short), {steps} steps" in caplog.text
    else:  # the shrunk default recipe: no floor of default steps
        assert not trainer.schedule.short and 5 < steps < 200
        assert f"(default), {steps} steps" in caplog.text


@pytest.mark.slow
def test_a_resumed_budgeted_run_keeps_its_plan_and_equals_an_uninterrupted_one(
    copy_task, tmp_path, monkeypatch
):
    config, data, _ = copy_task
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    settings = {"max_time": "60", "warmup_steps": 36, "save_every": 10}
    clock = StepClock(monkeypatch, probe_step=1.0, run_step=1.2)
    straight = Run(budgeted(config, tmp_path / "straight", **settings), data, clock=clock)
    straight.fit()
    schedule = straight.schedule
    assert straight.progress.planned_warmup == schedule.warmup_steps  # it planned again

    resumed_cfg = budgeted(config, tmp_path / "resumed", **settings)
    # last.pt was written one step before, after the re-plan at the warm-up's end
    crash_at = (schedule.warmup_steps // schedule.save_every + 1) * schedule.save_every + 1
    assert crash_at < schedule.steps
    with crashing_after_step(monkeypatch, crash_at):  # the probe's updates leave step at 0
        Run(resumed_cfg, data, clock=StepClock(monkeypatch, 1.0, 1.2)).fit()
    # A resumed run does not plan again, however long its start took this time.
    slow_start = FakeClock()
    slow_start.now = 10_000.0
    resumed = Run(resumed_cfg, data, clock=slow_start, started_at=0.0)
    resumed.fit()
    assert resumed.schedule == schedule and resumed.progress.step == schedule.steps
    assert_same_weights(resumed, straight, atol=1e-6)


@pytest.mark.parametrize(("run_step", "longer"), [(0.8, True), (1.25, False)])
@pytest.mark.slow
def test_the_run_plans_again_at_the_warmups_end_from_its_own_steps(
    copy_task, tmp_path, monkeypatch, caplog, run_step, longer
):
    config, data, _ = copy_task
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    settings = {"max_time": "60", "warmup_steps": 36, "save_every": 10}
    clock = StepClock(monkeypatch, probe_step=1.0, run_step=run_step)
    trainer = Run(budgeted(config, tmp_path / "budget", **settings), data, clock=clock)
    with caplog.at_level("INFO"):
        trainer.fit()
    first = Schedule.of(trainer.config.training, first_steps(caplog.text))
    schedule = trainer.schedule
    assert (schedule.steps > first.steps) == longer and schedule.steps != first.steps
    assert schedule.warmup_steps == first.warmup_steps  # the steps taken stay the new plan's
    assert f"planned again at step {first.warmup_steps} " in caplog.text
    # timed from its own updates after the first ones (which StepClock charges the probe's time)
    assert f"({run_step:.2f} s each, the probe's 1.00 s)" in caplog.text
    # what is left of the budget holds the rest of the run, and not one step more
    spent = clock.now
    assert spent <= 60 and spent + run_step > 60 * (1 - SAFETY_MARGIN) - 1
    assert trainer.scheduler.get_last_lr()[0] == 0.0

    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, **settings)
    plain = Trainer(plain_cfg, data)
    assert plain.schedule == schedule
    plain.fit()
    assert_same_weights(trainer, plain)


def test_a_short_run_planned_again_keeps_its_warmup_in_the_command_it_logs():
    replanned = dataclasses.replace(Schedule.of(WITH_SHORT_RUN, 1100), warmup_steps=143)
    overrides = replanned.overrides(WITH_SHORT_RUN)
    share = float(overrides.split("training.short_run.warmup=")[1])
    recipe = dataclasses.replace(WITH_SHORT_RUN.short_run, warmup=share)
    assert Schedule.of(dataclasses.replace(WITH_SHORT_RUN, short_run=recipe), 1100) == replanned


def test_replan_fits_the_rest_of_the_run_in_the_time_left():
    first = plan(DEFAULT, 1800.0, SLOW_CPU)
    slower = dataclasses.replace(SLOW_CPU, step=SLOW_CPU.step * 1.1)
    done = first.warmup_steps
    again = replan(DEFAULT, first, done, 1800.0 - done * slower.step, slower)
    assert again.steps < first.steps and again.warmup_steps == first.warmup_steps
    rest = run_seconds(again, slower) - done * slower.step
    assert rest <= (1800.0 - done * slower.step) * (1 - SAFETY_MARGIN)
    # never beyond a cap, never fewer than one more step
    assert replan(DEFAULT, first, done, 1e9, SLOW_CPU, cap=DEFAULT.max_steps).steps == 4200
    assert replan(DEFAULT, first, done, 0.0, SLOW_CPU).steps == done + 1


def test_a_validation_fits_only_where_the_rest_of_the_run_still_does():
    schedule = Schedule.of(DEFAULT)  # 4,200 steps, a save every 250
    costs = Costs(step=0.4, validation=20.0, save=0.5, averaging=22.5, final_test=40.0)
    deadline = Deadline(ends_at=1800.0, costs=costs)
    # at step 2,000: 2,200 steps, 9 saves, the last validation, averaging and test decoding
    rest = 2200 * 0.4 + 9 * 0.5 + 20.0 + 22.5 + 40.0
    latest = 1800.0 - 20.0 - rest
    assert deadline.fits_validation(latest, schedule, 2000, costs.step)
    assert not deadline.fits_validation(latest + 1.0, schedule, 2000, costs.step)
    assert not deadline.fits_validation(latest - 1.0, schedule, 2000, costs.step * 1.05)
    # the last step's: its save, the averaging and the test decoding follow, no validation
    last = 1800.0 - 20.0 - (0.5 + 22.5 + 40.0)
    assert deadline.fits_validation(last, schedule, 4200, costs.step)
    assert not deadline.fits_validation(last + 1.0, schedule, 4200, costs.step)


class DriftingClock(StepClock):
    """`StepClock` whose updates take `drift` times as long from `from_step` on, where each
    validation takes `validation` seconds, the probe's rehearsal of one `rehearsal` seconds
    (default: as long), and the final test decoding as many validations as the probe prices it."""

    def __init__(
        self,
        monkeypatch,
        from_step: int,
        drift: float,
        validation: float,
        rehearsal: float | None = None,
    ) -> None:
        super().__init__(monkeypatch)
        rehearsed = validation if rehearsal is None else rehearsal
        update, run, rehearse, score_test = (
            Learner.update,
            Validator.run,
            Validator.rehearse_decoding,
            Validator.score_test,
        )

        def drifting(learner, micro_batches):  # the run's learner: its schedule counts its steps
            if not self.probing and learner.scheduler.last_epoch >= from_step:
                self.now += drift - 1.0
            return update(learner, micro_batches)

        def timed(method, seconds):
            def wrapper(validator, *args, **kwargs):
                self.now += seconds(validator)
                return method(validator, *args, **kwargs)

            return wrapper

        monkeypatch.setattr(Learner, "update", drifting)
        monkeypatch.setattr(Validator, "run", timed(run, lambda _: validation))
        monkeypatch.setattr(Validator, "rehearse_decoding", timed(rehearse, lambda _: rehearsed))
        share = timed(score_test, lambda validator: validation * validator.test_share())
        monkeypatch.setattr(Validator, "score_test", share)


@pytest.mark.parametrize(("slower_from", "drift"), [(24, 1.5), (1, 3.0)])
@pytest.mark.slow
def test_validations_give_way_to_the_budget_when_steps_slow_down_after_the_replan(
    copy_task, tmp_path, monkeypatch, caplog, slower_from, drift
):
    """Steps slower than the probe's from `slower_from` on: after the re-plan (at step 8) the
    validations give way; before it none does, since the re-plan fits the steps to the time."""
    config, data, _ = copy_task
    settings = {"max_time": "120", "warmup_steps": 12, "eval_every": 3, "save_every": 10}
    settings["dev_bleu_sentences"] = 8
    clock = DriftingClock(monkeypatch, from_step=slower_from, drift=drift, validation=3.0)
    trainer = Run(budgeted(config, tmp_path / "budget", **settings), data, clock=clock)
    with caplog.at_level("INFO"):
        trainer.fit()
    assert "planned again at step 8 " in caplog.text  # the warm-up shrunk with the plan
    validations = caplog.text.count("| dev loss")
    skipped = caplog.text.count("validation skipped to keep the time budget")
    assert clock.now <= 120  # planned to fit, and kept to it though the steps slowed down
    assert validations > 1 and "step 6/" in caplog.text  # the last one before the re-plan
    assert skipped > 0 or slower_from < 8
    assert trainer.progress.step == trainer.schedule.steps

    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, **settings)
    plain = Trainer(plain_cfg, data)
    plain.fit()
    assert_same_weights(trainer, plain)  # skipped validations leave the weights as they were


@pytest.mark.slow
def test_a_warmup_that_ends_before_the_first_validation_ends_with_one_that_prices_the_rest(
    copy_task, tmp_path, monkeypatch, caplog
):
    """The run's validations take four times the probe's rehearsal (an early model's outputs
    run long): the re-plan prices the last validation, the averaging and the test decoding from
    one at the warm-up's end, where none had come yet, and the run ends inside its budget."""
    config, data, _ = copy_task
    settings = {"max_time": "120", "warmup_steps": 12, "eval_every": 1000, "save_every": 10}
    settings["dev_bleu_sentences"] = 8
    clock = DriftingClock(monkeypatch, from_step=1, drift=1.0, validation=4.0, rehearsal=1.0)
    trainer = Run(budgeted(config, tmp_path / "budget", **settings), data, clock=clock)
    with caplog.at_level("INFO"):
        trainer.fit()
    warmup = trainer.schedule.warmup_steps
    first = first_steps(caplog.text)
    assert f"step {warmup}/{first} | dev loss" in caplog.text  # the plan before the re-plan's
    assert f"planned again at step {warmup} " in caplog.text
    assert "validations (4.0 s, the probe's 1.0 s)" in caplog.text
    assert caplog.text.count("| dev loss") == 2 + 1  # the warm-up's, the last step's, averaged
    assert trainer.schedule.steps < first and clock.now <= 120, clock.now

    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, **settings)
    plain = Trainer(plain_cfg, data)
    plain.fit()
    assert_same_weights(trainer, plain)  # the warm-up's validation leaves the weights as they are


@pytest.mark.parametrize("keep_snapshots", [5, 0])
@pytest.mark.slow
def test_the_last_validation_gives_way_only_where_the_averaged_models_follows(
    copy_task, tmp_path, monkeypatch, caplog, keep_snapshots
):
    """Steps three times slower after the re-plan: the last step's validation is skipped where
    averaged.pt is validated after it, and kept where best.pt, which it may pick, is the final
    model."""
    config, data, _ = copy_task
    settings = {"max_time": "120", "warmup_steps": 12, "eval_every": 1000, "save_every": 10}
    settings |= {"dev_bleu_sentences": 8, "keep_snapshots": keep_snapshots}
    clock = DriftingClock(monkeypatch, from_step=13, drift=3.0, validation=2.0)
    trainer = Run(budgeted(config, tmp_path, **settings), data, clock=clock)
    with caplog.at_level("INFO"):
        trainer.fit()
    steps = trainer.schedule.steps
    skipped = f"step {steps}: validation skipped to keep the time budget" in caplog.text
    assert skipped == (keep_snapshots > 0)
    assert (f"step {steps}/{steps} | dev loss" in caplog.text) == (keep_snapshots == 0)


def test_the_final_test_decoding_is_part_of_the_plan():
    with_test = dataclasses.replace(SLOW_CPU, final_test=120.0)
    schedule = Schedule.of(DEFAULT, 1000)
    assert run_seconds(schedule, with_test) == run_seconds(schedule, SLOW_CPU) + 120.0
    assert plan(DEFAULT, 1800.0, with_test).steps < plan(DEFAULT, 1800.0, SLOW_CPU).steps


@pytest.mark.slow
def test_the_probe_prices_the_test_decoding_from_a_validations_decoding_alone(
    copy_task, tmp_path, monkeypatch
):
    """A validation is its scoring (the dev loss pass) and its decoding; the final test decoding
    repeats only the decoding, on `test_share` times the tokens."""
    clock = FakeClock()  # one second a reading; the rehearsal's parts take 2 and 5 more

    def taking(seconds: float):
        def rehearse() -> None:
            clock.now += seconds

        return rehearse

    rehearsal = Rehearsal(scoring=taking(2.0), decoding=taking(5.0))
    costs = measure_costs(lambda: 1, rehearsal, lambda: None, 5, clock, test_share=2.5)[0]
    assert costs.validation == (2.0 + 1.0) + (5.0 + 1.0)
    assert costs.final_test == 2.5 * (5.0 + 1.0)

    config, data, _ = copy_task
    shares = []

    def spy(*args):
        shares.append(args[5])
        return measure_costs(*args)

    monkeypatch.setattr(probe_module, "measure_costs", spy)
    settings = {"max_time": "1h", "max_steps": 2, "warmup_steps": 1, "dev_bleu_sentences": 8}
    Run(budgeted(config, tmp_path, **settings), data).fit()
    # The stand-in's pieces, as many as the raw characters suggest: test's over those of the
    # dev sentences a validation decodes.
    stand_in = stand_in_data(config.data, config.paths)
    dev_tokens = sum(stand_in.splits["dev"]["tgt_len"][:8])
    assert shares == [sum(stand_in.splits["test"]["tgt_len"]) / dev_tokens]


def layer_counts(model) -> tuple[int, int]:
    return len(model.encoder.layers), len(model.decoder.layers)


@pytest.mark.slow
def test_a_short_run_trains_the_short_recipes_model_and_its_checkpoints_name_it(
    copy_task, tmp_path
):
    config, data, _ = copy_task
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, dropout=0.1))
    short = ShortRunConfig(
        max_steps=60, dropout=0.0, n_encoder_layers=2, n_decoder_layers=3, save_every=0.5
    )
    cfg = budgeted(config, tmp_path, max_steps=6, short_run=short, keep_snapshots=2)
    trainer = Run(cfg, data)
    trainer.fit()
    assert (config.model.n_encoder_layers, config.model.n_decoder_layers) == (1, 1)
    assert layer_counts(trainer.model) == (2, 3)
    for name in ("last.pt", "averaged.pt"):
        state = load_checkpoint(tmp_path / name)
        stored = state["config"]["model"]
        layers = (stored["n_encoder_layers"], stored["n_decoder_layers"])
        assert layers == (2, 3) and stored["dropout"] == 0.0
        model = restore_for_inference(state)[0]  # what translate.py and serve.py build
        assert layer_counts(model) == (2, 3)
    # Running the finished command again is this run, not another one with another model.
    saved = read_saved_run(RunDir(tmp_path), cfg.training)
    assert finished_run(RunDir(tmp_path), cfg, saved, saved_plan(cfg, saved, Choices())).step == 6
    # The same command without the short recipe describes another run.
    default_recipe = dataclasses.replace(cfg.training, short_run=None)
    with pytest.raises(FinishedRunError, match=r"model\.n_decoder_layers: 3 != 1"):
        other = dataclasses.replace(cfg, training=default_recipe)
        finished_run(RunDir(tmp_path), other, saved, saved_plan(other, saved, Choices()))


@pytest.mark.slow
def test_a_resumed_planned_short_run_rebuilds_its_model_and_equals_an_uninterrupted_one(
    copy_task, tmp_path, monkeypatch
):
    config, data, _ = copy_task
    short = ShortRunConfig(max_steps=150, lr=3e-3, batch_tokens=300, save_every=0.25)
    settings = {"max_time": "35", "max_steps": 200, "short_run": short}
    straight = Run(budgeted(config, tmp_path / "straight", **settings), data, clock=FakeClock())
    straight.fit()
    assert straight.schedule.short and layer_counts(straight.model) == (2, 2)

    resumed_cfg = budgeted(config, tmp_path / "resumed", **settings)
    with crashing_after_step(monkeypatch, straight.schedule.save_every + 1):
        Run(resumed_cfg, data, clock=FakeClock()).fit()
    resumed = Run(resumed_cfg, data, clock=FakeClock())
    resumed.fit()
    assert resumed.progress.step == straight.schedule.steps
    for ours, theirs in zip(resumed.model.parameters(), straight.model.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=0)


@pytest.mark.parametrize(("budget", "tolerance"), [(120.0, 0.10), (300.0, 0.05), (1800.0, 0.05)])
@pytest.mark.parametrize("drift", [0.85, 1.0, 1.2])
def test_budgets_from_two_minutes_up_end_within_their_tolerance(budget, tolerance, drift):
    """Planned from the probe, planned again from the run's own steps at the warm-up's end (which
    run `drift` times the probe's): the whole command ends inside its budget, close to it."""
    setup = 12.0  # data, tokenizers and the probe, before the first step
    probed = Costs(step=0.6, validation=8.0, save=0.3, averaging=10.0, final_test=8.0)
    actual = dataclasses.replace(probed, step=probed.step * drift)
    first = plan(DEFAULT, budget - setup, probed)
    done = first.warmup_steps
    spent = setup + done * actual.step + done // first.save_every * actual.save
    again = replan(DEFAULT, first, done, budget - spent, actual)
    assert again.warmup_steps == first.warmup_steps
    total = setup + run_seconds(again, actual)
    assert budget * (1 - tolerance) <= total <= budget


def test_the_run_is_timed_after_its_first_updates_as_the_probe_is():
    timing = RunTiming(from_step=PROBE_WARMUP)
    readings = [10.0, 13.0, 13.5, 14.0, 14.5, 14.75, 15.0]  # the first updates are slower
    for step, now in enumerate(readings, start=1):
        if step > 1:
            timing.pause(0.1 if step == 6 else 0.0)  # a save after step 5
        timing.add(step, now, tokens=100)
    assert timing.start == 14.0 and timing.steps == 3 and timing.tokens == 300
    assert timing.paused == 0.1


def test_the_replans_step_time_leaves_out_windows_another_process_slowed():
    timing = RunTiming(from_step=PROBE_WARMUP)
    now, step = 100.0, PROBE_WARMUP
    timing.add(step, now, tokens=100)
    # Five windows of 0.4 s an update, the second at 1.2 s (another process on the cores), and a
    # validation of 6 s inside the fourth, which is no update's.
    for window in range(5):
        for _ in range(WINDOW_STEPS):
            step += 1
            now += 1.2 if window == 1 else 0.4
            if window == 3 and step % WINDOW_STEPS == 10:
                timing.pause(6.0)
                now += 6.0
            timing.add(step, now if timing.needs_time(step) else None, tokens=100)
    assert timing.windows == pytest.approx([0.4, 1.2, 0.4, 0.4, 0.4])
    assert timing.typical_step(now) == pytest.approx(0.4)
    mean = (now - timing.start - timing.paused) / timing.steps
    assert mean == pytest.approx(0.56)  # what a mean would have planned the run at


def test_the_replan_prices_validations_and_saves_at_their_median():
    """One validation and one save that another process held up (a minute's pause) do not
    price the rest of the run's."""
    probe = Costs(step=1.0, validation=4.0, save=0.5, averaging=6.5, final_test=8.0)
    seen: list[Costs] = []

    def replan(schedule: Schedule, done: int, costs: Costs, speed: float) -> Schedule:
        seen.append(costs)
        return schedule

    budget = TimeBudget(FakeClock(), replan, Deadline(1800.0, probe), False, keep_snapshots=5)
    schedule = Schedule.of(DEFAULT, 100)
    for step in range(schedule.warmup_steps + 1):
        budget.step_done(step, float(step), tokens=10)
    for seconds in (5.0, 65.0, 6.0):
        budget.validated(seconds)
    for seconds in (0.3, 60.3, 0.4):
        budget.saved(seconds)
    budget.replanned(schedule, schedule.warmup_steps, 500.0)
    assert (seen[0].validation, seen[0].save) == (6.0, 0.4)
    assert seen[0].final_test == 6.0 * 8.0 / 4.0  # the test decoding scales with them


def test_a_warmup_of_few_windows_is_timed_by_its_mean():
    timing = RunTiming(from_step=0)
    timing.add(0, 0.0, tokens=1)
    for step in range(1, 2 * WINDOW_STEPS + 1):
        timing.add(step, step * 0.5 if timing.needs_time(step) else None, tokens=1)
    assert len(timing.windows) == 2
    assert timing.typical_step(2 * WINDOW_STEPS * 0.5) == pytest.approx(0.5)


def test_a_model_the_command_chose_is_kept_by_the_short_recipe(copy_task):
    config, _, _ = copy_task
    short = ShortRunConfig(max_steps=60, lr=3e-3, dropout=0.0, batch_tokens=300)
    config = dataclasses.replace(
        config, training=dataclasses.replace(config.training, max_steps=20, short_run=short)
    )
    schedule = Schedule.of(config.training)
    assert schedule.short
    recipe = recipe_plan(config, schedule)
    assert (recipe.model.n_encoder_layers, recipe.model.dropout) == (2, 0.0)
    assert (recipe.model.d_model, recipe.model.d_ff) == (short.d_model, short.d_ff)
    kept = recipe_plan(config, schedule, Choices(model=True))
    assert kept.model == config.model and (kept.lr, kept.batch_tokens) == (3e-3, 300)
    kept_line = "1 encoder and 1 decoder layers of width 32 (feed-forward 64) (the model the"
    assert kept_line in describe_recipe(kept, ladder(config.training)[0])
