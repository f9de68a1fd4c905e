"""What a run trains: a `Plan`, its schedule and the model and settings of the schedule's recipe.

A schedule of `training.short_run`'s recipe (a step budget of at most its `max_steps`, or a time
budget's choice, see `planner.py`) trains that recipe's learning rate and batch size, and its
layers, width and dropout in the run's model, unless the command chose the model (`model=...`):
then the model is the one chosen, and the log says so. Its vocabulary size, where it sets one, is
the run's tokenizers' (`recipe_tokenizers`) unless the command or a parent chose the tokenizers:
the data stage tokenizes with them, so a time budget that picks the recipe prepares the data
again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.schema import to_data
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.budget.schedule import Schedule
from llm_from_scratch.training.budget.timing import Budget
from llm_from_scratch.training.config import TrainConfig

if TYPE_CHECKING:
    from llm_from_scratch.training.resume import SavedRun


@dataclass(frozen=True)
class Plan:
    """A run's schedule, the model, peak learning rate and batch size it trains, and what its
    budget asks of the loop while it trains."""

    schedule: Schedule
    model: ModelConfig
    lr: float
    batch_tokens: int
    budgeted: bool = False  # a time budget fixed the step count (stored in the checkpoints)
    model_kept: bool = False  # a short recipe that keeps the model the command chose
    budget: Budget = field(default_factory=Budget, compare=False)  # a step budget's: nothing


def recipe_plan(
    config: TrainConfig, schedule: Schedule | None = None, keep_model: bool = False
) -> Plan:
    """The plan of `schedule` (default: `config`'s step budget): the default recipe's settings,
    or the short recipe's for a short schedule (`keep_model`: the command chose its model, which
    the recipe then keeps)."""
    schedule = schedule or Schedule.of(config.training)
    recipe = config.training.short_run if schedule.short else None
    if recipe is None:
        return Plan(schedule, config.model, config.training.lr, config.data.loading.batch_tokens)
    model = config.model
    if not keep_model:
        model = replace(
            model,
            dropout=recipe.dropout,
            n_encoder_layers=recipe.n_encoder_layers or model.n_encoder_layers,
            n_decoder_layers=recipe.n_decoder_layers or model.n_decoder_layers,
            d_model=recipe.d_model or model.d_model,
            d_ff=recipe.d_ff or model.d_ff,
        )
    batch_tokens = recipe.batch_tokens or config.data.loading.batch_tokens
    return Plan(schedule, model, recipe.lr, batch_tokens, model_kept=keep_model)


def recipe_tokenizers(config: TrainConfig, short: bool, keep: bool = False) -> TrainConfig:
    """`config` with the tokenizers a run of the short recipe (`short`) or the default trains:
    `training.short_run.vocab_size` for the short one, unless the command or a parent chose the
    tokenizers (`keep`)."""
    recipe = config.training.short_run
    if not short or keep or recipe is None or recipe.vocab_size is None:
        return config
    tokenizer: TokenizerConfig = replace(config.tokenizer, vocab_size=recipe.vocab_size)
    return replace(config, tokenizer=tokenizer)


def recipe_config(
    config: TrainConfig, keep_tokenizers: bool = False, saved: SavedRun | None = None
) -> TrainConfig:
    """`config` with the tokenizers of the recipe it trains, where the data stage can know it:
    a step-budget run's, or a resumed run's if it trained them (`keep_tokenizers`: the command
    or a parent chose them). A new time-budget run learns its recipe from the planner's probe.
    `saved`: what the run continues from, as `resume.read_saved_run` read it (None: a new
    run)."""
    if saved is None:
        short = config.training.budget_seconds is None and Schedule.of(config.training).short
        return recipe_tokenizers(config, short, keep_tokenizers)
    own = recipe_tokenizers(config, saved.schedule.short, keep_tokenizers)
    return own if saved.state["config"]["tokenizer"] == to_data(own.tokenizer) else config


def describe_recipe(plan: Plan) -> str:
    """The log line of a short recipe's plan."""
    schedule, model = plan.schedule, plan.model
    kept = " (the model the command chose, kept)" if plan.model_kept else ""
    return (
        f"the short recipe (training.short_run) for {schedule.steps:,} steps: "
        f"{model.n_encoder_layers} encoder and {model.n_decoder_layers} decoder layers of width "
        f"{model.d_model} (feed-forward {model.d_ff}){kept}, "
        f"dropout {model.dropout:g}, learning rate {plan.lr:g}, batches of {plan.batch_tokens} "
        f"tokens, warm-up {schedule.warmup_steps} steps, a snapshot every "
        f"{schedule.save_every} steps"
    )
