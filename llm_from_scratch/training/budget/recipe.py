"""What a run trains: a `Plan`, its schedule and the model, tokenizers and settings of the
schedule's recipe.

A schedule of `training.short_run`'s recipe (a step budget of at most its `max_steps`, or a time
budget's choice, see `planner.py`) trains that recipe's learning rate and batch size, and its
layers, width and dropout in the run's model, unless the command chose the model (`model=...`):
then the model is the one chosen, and the log says so. Its vocabulary size, where it sets one, is
the run's tokenizers' unless the command or a parent chose the tokenizers; a resumed run keeps
the tokenizers it trained. The plan is made before the data stage, which then tokenizes with the
plan's tokenizers, once.
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
    """A run's schedule, the model, tokenizers, peak learning rate and batch size it trains, and
    what its budget asks of the loop while it trains."""

    schedule: Schedule
    model: ModelConfig
    tokenizer: TokenizerConfig
    lr: float
    batch_tokens: int
    budgeted: bool = False  # a time budget fixed the step count (stored in the checkpoints)
    model_kept: bool = False  # a short recipe that keeps the model the command chose
    budget: Budget = field(default_factory=Budget, compare=False)  # a step budget's: nothing


def recipe_plan(
    config: TrainConfig,
    schedule: Schedule | None = None,
    keep_model: bool = False,
    keep_tokenizers: bool = False,
    saved: SavedRun | None = None,
) -> Plan:
    """The plan of `schedule` (default: `config`'s step budget): the default recipe's settings,
    or the short recipe's for a short schedule (`keep_model`, `keep_tokenizers`: the command or
    a parent chose them, which the recipe then keeps). `saved`: the run's `last.pt`, whose
    tokenizers a resumed run keeps."""
    schedule = schedule or Schedule.of(config.training)
    tokenizer = _tokenizer(config, schedule.short, keep_tokenizers, saved)
    recipe = config.training.short_run if schedule.short else None
    if recipe is None:
        lr, batch_tokens = config.training.lr, config.data.loading.batch_tokens
        return Plan(schedule, config.model, tokenizer, lr, batch_tokens)
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
    return Plan(schedule, model, tokenizer, recipe.lr, batch_tokens, model_kept=keep_model)


def _tokenizer(
    config: TrainConfig, short: bool, keep: bool, saved: SavedRun | None
) -> TokenizerConfig:
    """The tokenizers a run of the short recipe (`short`) or the default trains:
    `training.short_run.vocab_size` for the short one, unless the command or a parent chose the
    tokenizers (`keep`); a resumed run (`saved`) the config's where it did not train the
    recipe's (it started before the recipe had its own)."""
    recipe = config.training.short_run
    if not short or keep or recipe is None or recipe.vocab_size is None:
        return config.tokenizer
    own = replace(config.tokenizer, vocab_size=recipe.vocab_size)
    if saved is not None and saved.state["config"]["tokenizer"] != to_data(own):
        return config.tokenizer
    return own


def describe_recipe(plan: Plan) -> str:
    """The log line of a short recipe's plan."""
    schedule, model = plan.schedule, plan.model
    kept = " (the model the command chose, kept)" if plan.model_kept else ""
    return (
        f"the short recipe (training.short_run) for {schedule.steps:,} steps: "
        f"{model.n_encoder_layers} encoder and {model.n_decoder_layers} decoder layers of width "
        f"{model.d_model} (feed-forward {model.d_ff}){kept}, "
        f"vocabularies of {plan.tokenizer.vocab_size:,} pieces, "
        f"dropout {model.dropout:g}, learning rate {plan.lr:g}, batches of {plan.batch_tokens} "
        f"tokens, warm-up {schedule.warmup_steps} steps, a snapshot every "
        f"{schedule.save_every} steps"
    )
