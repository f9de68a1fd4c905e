"""The warm-up, stable, decay schedule (`training.schedule=wsd`): its rate does not depend on the
step count until its decay, so a time budget plans the count again at the validations before
then, and the run stays the step-budget run its log names last."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from llm_from_scratch.training.budget.schedule import Costs, Deadline, replan
from llm_from_scratch.training.budget.timing import RunTiming, TimeBudget
from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.learner import Learner
from llm_from_scratch.training.optim import lr_multiplier
from llm_from_scratch.training.plan import Choices, Schedule
from llm_from_scratch.training.trainer import Trainer

from .test_budget import (
    FakeClock,
    StepClock,
    assert_same_weights,
    budgeted,
    logged_step_budget_run,
    step_budget_config,
)
from .test_trainer import Run

WSD = TrainingConfig(
    max_steps=1000, warmup_steps=100, save_every=50, eval_every=100, schedule="wsd", short_run=None
)


def test_wsd_holds_the_peak_until_its_decay_and_ends_at_zero():
    schedule = Schedule.of(WSD)
    assert schedule.decay_steps == 200  # training.decay_share's 0.2 of 1,000
    rates = [lr_multiplier(step, "wsd", schedule) for step in range(schedule.steps)]
    assert rates[49] == 0.5 and rates[99] == 1.0  # the linear warm-up
    assert set(rates[99:800]) == {1.0}  # the peak until the decay
    assert rates[800] == pytest.approx(1 - (1 / 200) ** 0.5)  # 1 - sqrt of the decay's share
    assert all(later < earlier for earlier, later in itertools.pairwise(rates[800:]))
    assert rates[-1] == 0.0


def test_the_averaged_snapshots_are_taken_inside_the_decay():
    for steps in (1000, 777, 120):
        schedule = Schedule.of(WSD, steps, warmup=10)
        # a snapshot every save_every steps and at the last (Schedule.saves)
        snapshots = sorted({*range(schedule.save_every, steps, schedule.save_every), steps})
        assert len(snapshots) == schedule.saves()
        averaged = snapshots[-WSD.keep_snapshots :]
        assert len(averaged) == WSD.keep_snapshots
        assert min(averaged) > steps - schedule.decay_steps
    # a decay with room for them keeps the recipe's interval
    roomy = dataclasses.replace(WSD, decay_share=0.5)
    assert Schedule.of(roomy).save_every == roomy.save_every
    assert Schedule.of(WSD).save_every == 200 // 5  # 0.2 of 1,000 steps, 5 snapshots


def test_two_step_counts_share_their_rates_until_the_shorter_settles():
    shorter, longer = Schedule.of(WSD, 800, warmup=100), Schedule.of(WSD, 1200, warmup=100)
    settled = shorter.settled_from(WSD.keep_snapshots)
    assert settled == 800 - 160  # the decay's start: the averaged snapshots lie inside it
    assert all(
        lr_multiplier(step, "wsd", shorter) == lr_multiplier(step, "wsd", longer)
        for step in range(settled)
    )
    after = settled + 160  # in the shorter's decay, at the longer's peak
    assert lr_multiplier(after, "wsd", shorter) < lr_multiplier(after, "wsd", longer) == 1.0
    # cosine's rate depends on the count from the warm-up's end
    cosine = dataclasses.replace(WSD, schedule="cosine")
    assert Schedule.of(cosine, 800, warmup=100).settled_from(cosine.keep_snapshots) == 100


def test_a_slower_host_cannot_shorten_a_run_past_the_steps_it_settled():
    current = Schedule.of(WSD)  # settles at step 800: the decay begins
    slow = Costs(step=10.0, validation=1.0, save=0.1, averaging=1.0)
    again = replan(WSD, current, 700, 600.0, slow)  # 60 more steps fit; 700 are done
    assert again.steps < current.steps
    assert again.settled_from(WSD.keep_snapshots) >= 700
    shorter = Schedule.of(WSD, again.steps - 1, warmup=current.warmup_steps)
    assert shorter.settled_from(WSD.keep_snapshots) < 700  # the least count that keeps them


def test_a_validation_before_a_replan_is_kept_where_the_deadline_has_passed():
    """wsd's re-plan right after the validation fits the steps to the time left; cosine's count
    is final, so its validation gives way, and so does wsd's once it settles."""
    costs = Costs(step=1.0, validation=5.0, save=0.1, averaging=1.0)

    def fits(config: TrainingConfig, step: int) -> bool:
        schedule = Schedule.of(config)
        budget = TimeBudget(FakeClock(), lambda plan, *_: plan, Deadline(0.0, costs), False, 5)
        budget.start(0)
        for done in range(1, step + 1):  # a second an update, all past the deadline
            budget.step_done(done, float(done), tokens=10)
            if budget.replan_due(done, schedule) and done < step:
                budget.replanned(schedule, done, float(done))
        return budget.validation_fits(float(step), schedule, step)

    cosine = dataclasses.replace(WSD, schedule="cosine")
    assert fits(WSD, 200) and not fits(cosine, 200)
    assert not fits(WSD, 900)  # past the decay's start (800)


def test_a_later_replan_times_the_updates_since_the_last():
    timing, now = RunTiming(0), 0.0
    timing.add(0, now, 0)
    for step in range(1, 101):  # a second an update
        now += 1.0
        timing.add(step, now, 10)
    timing.mark(now)
    for step in range(101, 103):
        now += 0.5
        timing.add(step, now, 10)
    assert timing.typical_step(now) == 1.0  # too few since the mark: the whole run's
    for step in range(103, 201):  # half a second an update
        now += 0.5
        timing.add(step, now, 10)
    assert timing.typical_step(now) == 0.5


class SpeedingClock(StepClock):
    """`StepClock`, whose run's updates after the `after`th take `faster` seconds."""

    def __init__(self, monkeypatch, after: int, faster: float) -> None:
        super().__init__(monkeypatch)
        timed, updates = Learner.update, [0]

        def speeding(learner, micro_batches):
            if not self.probing:
                updates[0] += 1
                if updates[0] > after:
                    self.now -= 1.0 - faster  # StepClock's second, less the speed-up
            return timed(learner, micro_batches)

        monkeypatch.setattr(Learner, "update", speeding)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cosine", "wsd"])
def test_a_host_that_speeds_up_is_followed_until_the_schedule_settles(
    copy_task, tmp_path, caplog, monkeypatch, kind
):
    """Updates of a second that take half of one after the 10th: cosine keeps the count of its
    one re-plan at the warm-up's end; wsd plans again at its validations and trains more steps,
    the step-budget run its log names last, within the budget."""
    config, data, _ = copy_task
    settings = {"max_time": "60", "warmup_steps": 20, "eval_every": 5, "save_every": 10}
    settings |= {"max_steps": 100, "schedule": kind, "keep_snapshots": 2}
    settings |= {"short_run": None, "ladder": [], "dev_bleu_sentences": 4}
    clock = SpeedingClock(monkeypatch, after=10, faster=0.5)
    budget = budgeted(config, tmp_path / "budget", **settings)
    trainer = Run(budget, data, clock=clock, chosen=Choices(tokenizers=True))  # no cap
    with caplog.at_level("INFO"):
        trainer.fit()
    replans = caplog.text.count("planned again at step")
    first_replan = int(caplog.text.split("planned again at step ")[1].split()[0])
    assert clock.now <= 60  # the budget, setup included
    if kind == "cosine":
        assert replans == 1 and first_replan == trainer.schedule.warmup_steps
        return
    assert replans > 1
    first_count = int(caplog.text.split("planned again")[1].split("(default), ")[1].split()[0])
    assert trainer.schedule.steps > first_count  # the later re-plans used the faster steps
    assert trainer.progress.step == trainer.schedule.steps

    plain_cfg = step_budget_config(config, tmp_path / "plain", caplog.text, **settings)
    assert logged_step_budget_run(caplog.text)["max_steps"] == trainer.schedule.steps
    plain = Trainer(plain_cfg, data)
    assert plain.schedule == trainer.schedule
    plain.fit()
    assert_same_weights(trainer, plain)
