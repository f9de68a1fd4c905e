"""The ladder of recipes (issue 97): a time budget picks the rung its compute affords and fills the
budget with it; a step budget trains exactly its steps; a faster machine is simulated."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hydra import initialize_config_dir

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import config_dir
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.programs.train import budget_clock, command_choices, with_recipe_steps
from llm_from_scratch.training.budget.planner import BudgetPlanner
from llm_from_scratch.training.budget.recipe import choose_rung, ladder, why
from llm_from_scratch.training.budget.schedule import SAFETY_MARGIN, run_seconds
from llm_from_scratch.training.config import RungConfig, TrainConfig, TrainingConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.plan import Choices, Schedule, recipe_plan

from .test_budget import budgeted
from .test_trainer import Run, fp32

EVERYDAY_EPOCH = 4e6  # tokens an epoch of a 150k-pair corpus holds, about
# Small rungs of a copy task's ladder, so that timing each is quick.
TINY_LADDER = [
    RungConfig(name="wider", min_tokens=50.0, d_model=48, n_heads=2, d_ff=96, lr=2e-3),
    RungConfig(name="top", min_tokens=100.0, d_model=64, n_heads=2, d_ff=128, lr=1e-3),
]


@pytest.mark.parametrize(
    ("default_steps", "tokens", "epoch", "expected"),
    [
        (3000, 10e6, EVERYDAY_EPOCH, "short"),  # fewer of the default's steps than the crossover
        (4500, 27e6, EVERYDAY_EPOCH, "default"),  # 30 min of a Zen 5
        (7000, 28e6, EVERYDAY_EPOCH, "default"),  # an hour of a Zen 4: 7 epochs
        (18000, 108e6, EVERYDAY_EPOCH, "default_dropout"),  # 2 hours of a Zen 5: 27 epochs
        (18000, 108e6, 20e6, "default"),  # the same compute on a corpus five times larger
        (50000, 200e6, EVERYDAY_EPOCH, "medium"),
        (900000, 810e6, EVERYDAY_EPOCH, "base"),  # a GPU's 30 minutes
        (900000, 810e6, 0.5e6, "default_dropout"),  # too small to feed either larger rung
        (60000, 300e6, 2e6, "default_dropout"),  # medium's compute, but more epochs than it takes
    ],
)
def test_the_rung_is_the_highest_the_compute_and_the_corpus_afford(
    default_steps, tokens, epoch, expected
):
    assert choose_rung(TrainingConfig(), default_steps, tokens, epoch).name == expected


def test_a_model_the_command_chose_does_not_climb_and_training_rung_forces_one():
    assert choose_rung(TrainingConfig(), 900000, 810e6, EVERYDAY_EPOCH, True).name == "default"
    forced = TrainingConfig(rung="medium")
    assert choose_rung(forced, 4500, 27e6, EVERYDAY_EPOCH).name == "medium"


def test_the_plan_line_says_why_a_run_is_on_its_rung_and_what_the_next_needs():
    default, dropout, medium = ladder(TrainingConfig())[1:4]
    assert why(default, TrainingConfig()) == "default_dropout needs 8 epochs"
    assert why(dropout, TrainingConfig()) == (
        "from 8 epochs; medium needs 190M and at most 100 epochs"
    )
    assert why(medium, TrainingConfig()).startswith("from 190M and at most 100 epochs; base")
    chosen = why(default, TrainingConfig(), model_chosen=True)  # a fine-tuning's parent's model
    assert "does not climb" in chosen and "medium" not in chosen


def test_the_default_ladder_is_short_default_default_dropout_medium_base():
    rungs = ladder(TrainingConfig())
    assert [(rung.number, rung.of, rung.name) for rung in rungs] == [
        (1, 5, "short"),
        (2, 5, "default"),
        (3, 5, "default_dropout"),
        (4, 5, "medium"),
        (5, 5, "base"),
    ]


def test_the_dropout_rung_trains_the_default_model_with_dropout_and_nothing_else():
    config = compose_config("train", [], TrainConfig)
    own = recipe_plan(config)
    dropout = recipe_plan(config, Schedule.of(config.training, 10000, rung="default_dropout"))
    assert own.model.dropout == 0.0 and dropout.model.dropout == 0.1
    assert dataclasses.replace(dropout.model, dropout=0.0) == own.model
    assert dropout.lr == own.lr and dropout.batch_tokens == own.batch_tokens
    assert dropout.tokenizer == own.tokenizer


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ([], Choices()),
        (["model"], Choices(model=True)),
        (["model.dropout", "training.max_time"], Choices(model=True)),  # kept on every rung
        (["model_dir", "tokenizer.vocab_size"], Choices(tokenizers=True)),
        (["training.max_steps", "training.max_steps_cap"], Choices(max_steps=True)),
    ],
)
def test_what_the_command_line_chose_is_read_from_its_keys(keys, expected):
    assert command_choices(keys) == expected


@pytest.mark.parametrize(
    ("overrides", "recipe_steps"),
    [
        (["experiment=general", "training.max_time=2h", "training.max_steps=3000"], 30000),
        (["experiment=general", "training.max_time=null", "training.max_steps=3000"], None),
        (["experiment=general", "training.max_time=2h"], None),  # the config's own length
        # a warm-up the command sets is set for the command's length
        (["experiment=general", "training.max_steps=3000", "training.warmup_steps=300"], None),
    ],
)
def test_a_cap_the_command_sets_keeps_the_recipes_length(overrides, recipe_steps):
    """Under a time budget the command's `training.max_steps` is a cap, and the run learns the
    length the config's warm-up is set for from the config without it; a step budget's
    `max_steps` is its length."""
    config = compose_config("train", overrides, TrainConfig)
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        planned = with_recipe_steps(config, overrides)
    assert planned.training.recipe_steps == recipe_steps
    assert planned.training.max_steps == config.training.max_steps


def test_a_rung_whose_epochs_cannot_be_met_is_refused():
    with pytest.raises(ConfigError, match=r"min_epochs=200.0 must be at most 100"):
        RungConfig(name="odd", min_tokens=0.0, min_epochs=200.0, max_epochs=100.0)


def test_a_rung_unknown_or_named_twice_is_refused():
    with pytest.raises(ConfigError, match=r"training\.rung='huge'"):
        TrainingConfig(rung="huge")
    with pytest.raises(ConfigError, match="twice"):
        TrainingConfig(ladder=[*TINY_LADDER, TINY_LADDER[0]])


def test_a_speedup_without_a_budget_is_refused():
    with pytest.raises(ConfigError, match=r"training\.budget_speedup.*training\.max_time"):
        TrainingConfig(max_time=None, budget_speedup=50.0)


def test_a_gpu_speed_step_takes_the_top_rung_and_fills_the_budget(copy_task, tmp_path, caplog):
    """Planned as a machine 10,000 times faster (`training.budget_speedup`): the compute of a
    minute passes the top rung's threshold, which the CPU's does not, and the plan fills the
    minute with that rung's steps. Planned only: training it would take the CPU 10,000 minutes."""
    config, _, _ = copy_task
    settings = {"max_time": "60", "ladder": TINY_LADDER, "short_run": None}
    plans = {}
    for speedup in (1.0, 10000.0):
        cfg = budgeted(config, tmp_path / str(speedup), budget_speedup=speedup, **settings)
        started_at = time.perf_counter()
        clock = budget_clock(cfg, time.perf_counter, started_at, Distributed())
        with caplog.at_level("INFO"):
            plan, pacing = BudgetPlanner(cfg, clock=clock, started_at=started_at).plan()
        plans[speedup] = plan, pacing, clock() - started_at
    cpu, _, _ = plans[1.0]
    assert cpu.schedule.rung is None  # the config's own recipe: far below 50M tokens
    gpu, pacing, spent = plans[10000.0]
    assert gpu.schedule.rung == "top" and gpu.model.d_model == 64 and gpu.lr == 1e-3
    assert "rung 3 of 3 (top)" in caplog.text and "the top rung" in caplog.text
    # what the plan's run costs fills what the probe left of the budget, less the margin
    planned = run_seconds(gpu.schedule, pacing.deadline.costs)
    assert (60 - spent) * (1 - SAFETY_MARGIN) * 0.97 <= planned <= 60 - spent
    assert gpu.schedule.steps > 100 * config.training.max_steps  # no hidden ceiling


def test_a_budget_fills_past_max_steps_unless_the_command_caps_it(copy_task, tmp_path):
    config, _, _ = copy_task
    settings = {"max_time": "60", "max_steps": 5, "short_run": None, "ladder": []}
    cfg = budgeted(config, tmp_path, **settings)
    free, _ = BudgetPlanner(cfg).plan()
    capped, _ = BudgetPlanner(cfg, chosen=Choices(max_steps=True)).plan()
    assert free.schedule.steps > 5 and capped.schedule.steps == 5


@pytest.mark.parametrize("rung", [None, "top"])
def test_a_step_budget_trains_exactly_its_steps_on_its_rung(copy_task, tmp_path, rung):
    """`training.max_steps` without `max_time` trains exactly that many steps, whatever the
    ladder, of the rung `training.rung` names (the command a budgeted run logs)."""
    config, data, _ = copy_task
    settings = {"max_steps": 7, "eval_every": 7, "save_every": 7, "keep_snapshots": 0}
    cfg = fp32(config, tmp_path, **settings)
    training = dataclasses.replace(cfg.training, ladder=TINY_LADDER, rung=rung)
    cfg = dataclasses.replace(cfg, training=training)
    run = Run(cfg, data, chosen=Choices())
    run.fit()
    assert run.progress.step == 7 and run.schedule == Schedule.of(training)
    assert run.model.cfg.d_model == (64 if rung else config.model.d_model)
