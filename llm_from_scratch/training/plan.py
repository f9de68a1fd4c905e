"""What a run trains, as one plain value: its `Plan` (the schedule, the rung of the recipe ladder,
the model, tokenizers, learning rate and batch), decided once before the data stage and never
holding the budget's machinery (`budget/` decides it; the loop only reads it).

The ladder, lowest first: `training.short_run` (the short recipe), the config's own recipe, then
`training.ladder`'s rungs (config.py `default_ladder`). A step budget trains the config's recipe,
or the short one where `max_steps` is at most its `max_steps`, or the rung `training.rung` names;
a time budget picks the rung (`budget/planner.py`). A rung other than the config's trains its own
model (layers, width, dropout), learning rate, batch and vocabulary, unless the command chose the
model or the tokenizers (`Choices`): those are kept, and the log says so. A resumed run keeps the
tokenizers it trained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.schema import to_data
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.config import RungConfig, ShortRunConfig, TrainConfig, TrainingConfig

# Untimed first updates: the allocator, kernel selection (again for each new batch shape) and
# torch.compile make them slower than the run's steady steps.
PROBE_WARMUP = 4
# The fewest of its own updates, after its first `PROBE_WARMUP`, that a run plans again from: a
# warm-up shorter than that keeps the probe's plan.
MIN_TIMED_STEPS = 4


@dataclass(frozen=True)
class Choices:
    """What the command line chose, which a plan keeps: the model (`model=tiny`,
    `model.dropout=0.2`), the tokenizers (`tokenizer=bpe_8k`), and `training.max_steps`, a time
    budget's cap (unchosen, it is only a step budget's length). A parent (`training.init_from`)
    chooses model and tokenizers."""

    model: bool = False
    tokenizers: bool = False
    max_steps: bool = False


NOTHING_CHOSEN = Choices()


@dataclass(frozen=True)
class Schedule:
    """The run's length, its warm-up and the intervals that depend on it, and its rung."""

    steps: int
    warmup_steps: int
    eval_every: int
    save_every: int
    short: bool = False  # trains `training.short_run`'s recipe
    rung: str | None = None  # trains `training.ladder`'s rung of that name
    decay_steps: int = 0  # `training.schedule=wsd`: the last steps, whose rate decays to zero

    @classmethod
    def of(
        cls,
        cfg: TrainingConfig,
        steps: int | None = None,
        short: bool | None = None,
        warmup: int | None = None,
        rung: str | None = None,
    ) -> Schedule:
        """The config's schedule, shrunk or grown to `steps` (default: `max_steps`, unchanged).
        `short`: the recipe, default: `training.short_run`'s for a run of at most its
        `max_steps` (unless `training.rung` names a rung), which takes its shares of the steps
        for warm-up and snapshots. `rung`: a rung of `training.ladder` (default: `training.rung`
        where `short` is not given). `warmup`: a warm-up kept from an earlier plan instead of the
        one `steps` implies."""
        if rung is None and short is None:
            rung = cfg.rung
        schedule = cls._of(cfg, steps, False if rung is not None else short)
        schedule = replace(schedule, rung=rung)
        if cfg.schedule == "wsd":
            decay = min(max(1, round(schedule.steps * cfg.decay_share)), schedule.steps)
            schedule = replace(schedule, decay_steps=decay)
            if cfg.keep_snapshots >= 2:
                # The averaged snapshots inside the decay: one from the peak averages weights of
                # a rate that has not come down, and scores below the decay's own on dev.
                spacing = max(1, decay // cfg.keep_snapshots)
                schedule = replace(schedule, save_every=min(schedule.save_every, spacing))
        return schedule if warmup is None else replace(schedule, warmup_steps=warmup)

    @classmethod
    def _of(cls, cfg: TrainingConfig, steps: int | None, short: bool | None) -> Schedule:
        steps = cfg.max_steps if steps is None else steps
        if short is None:
            short = cfg.short_run is not None and steps <= cfg.short_run.max_steps
        if short:
            recipe = cfg.short_run
            assert recipe is not None, "a short schedule needs training.short_run"
            save_every = max(1, round(steps * recipe.save_every))
            return cls(steps, round(steps * recipe.warmup), cfg.eval_every, save_every, short=True)
        length = cfg.recipe_steps or cfg.max_steps  # what the warm-up and snapshots are set for
        if steps == length:
            return cls(steps, cfg.warmup_steps, cfg.eval_every, cfg.save_every)
        scale = steps / length

        def scaled(interval: int) -> int:
            return max(1, round(interval * scale))

        # Long enough for the re-plan to time the run's own steps, where the recipe warms up that
        # long at all: a probe of a few steps misjudges even a short run.
        timeable = min(PROBE_WARMUP + MIN_TIMED_STEPS, cfg.warmup_steps, steps // 2)
        warmup = max(scaled(cfg.warmup_steps), timeable)
        return cls(steps, warmup, cfg.eval_every, scaled(cfg.save_every))

    def overrides(self, cfg: TrainingConfig) -> str:
        """The command-line overrides of the step-budget run that trains exactly this schedule."""
        budgetless = f"training.max_time=null training.max_steps={self.steps}"
        if self.short:  # its warm-up and snapshots follow from the step count
            recipe = cfg.short_run
            assert recipe is not None, "a short schedule needs training.short_run"
            if self.steps > recipe.max_steps:  # more steps than a step budget gives the recipe
                budgetless += f" training.short_run.max_steps={self.steps}"
            if self.warmup_steps == Schedule.of(cfg, self.steps, short=True).warmup_steps:
                return budgetless
            # a re-planned run kept the warm-up of its first plan; this share rounds back to it
            return f"{budgetless} training.short_run.warmup={self.warmup_steps / self.steps!r}"
        overrides = (
            f"{budgetless} training.warmup_steps={self.warmup_steps} "
            f"training.save_every={self.save_every}"
        )
        if self.rung is not None:
            return f"{overrides} training.rung={self.rung}"
        if Schedule.of(cfg, self.steps, short=None, rung=None).short and cfg.rung is None:
            overrides += " training.short_run=null"  # that many steps would take the short recipe
        return overrides

    def settled_from(self, keep_snapshots: int) -> int:
        """The last step whose weights the step count does not decide: up to it the learning
        rate is the same for any count (the warm-up; wsd's peak too, until its decay) and no
        snapshot the final average takes (the last `keep_snapshots`) is written. A re-plan after
        this many steps of both its old and its new schedule trains the weights of the
        step-budget run of the new count."""
        if not self.decay_steps:
            return self.warmup_steps
        averaged = self.steps - keep_snapshots * self.save_every
        return max(self.warmup_steps, min(self.steps - self.decay_steps, averaged))

    def validations(self) -> int:
        """Dev evaluations in the run: every `eval_every` steps and at the last step."""
        return math.ceil(self.steps / self.eval_every)

    def saves(self) -> int:
        return math.ceil(self.steps / self.save_every)


@dataclass(frozen=True)
class Plan:
    """A run's schedule, the model, tokenizers, peak learning rate and batch size it trains."""

    schedule: Schedule
    model: ModelConfig
    tokenizer: TokenizerConfig
    lr: float
    batch_tokens: int
    budgeted: bool = False  # a time budget fixed the step count (stored in the checkpoints)
    model_kept: bool = False  # another rung that keeps the model the command chose

    def with_schedule(self, schedule: Schedule) -> Plan:
        """The same plan, re-planned to `schedule` (a time budget's step count, same rung)."""
        return replace(self, schedule=schedule)


def recipe_plan(
    config: TrainConfig,
    schedule: Schedule | None = None,
    chosen: Choices = NOTHING_CHOSEN,
    saved_config: dict[str, Any] | None = None,
) -> Plan:
    """The plan of `schedule` (default: `config`'s step budget): its rung's settings (`chosen`:
    what the command or a parent chose, which the rung then keeps). `saved_config`: the config
    the run's `last.pt` stored, whose tokenizers a resumed run keeps."""
    schedule = schedule or Schedule.of(config.training)
    recipe = rung_recipe(config.training, schedule)
    tokenizer = _tokenizer(config, recipe, chosen.tokenizers, saved_config)
    if recipe is None:
        lr, batch_tokens = config.training.lr, config.data.loading.batch_tokens
        return Plan(schedule, config.model, tokenizer, lr, batch_tokens)
    model = config.model
    if not chosen.model:
        model = replace(
            model,
            dropout=model.dropout if recipe.dropout is None else recipe.dropout,
            n_heads=getattr(recipe, "n_heads", None) or model.n_heads,
            n_encoder_layers=recipe.n_encoder_layers or model.n_encoder_layers,
            n_decoder_layers=recipe.n_decoder_layers or model.n_decoder_layers,
            d_model=recipe.d_model or model.d_model,
            d_ff=recipe.d_ff or model.d_ff,
        )
    lr = recipe.lr or config.training.lr
    batch_tokens = recipe.batch_tokens or config.data.loading.batch_tokens
    return Plan(schedule, model, tokenizer, lr, batch_tokens, model_kept=chosen.model)


def rung_recipe(cfg: TrainingConfig, schedule: Schedule) -> ShortRunConfig | RungConfig | None:
    """The settings `schedule`'s rung trains instead of the config's (None: the config's own)."""
    if schedule.short:
        return cfg.short_run
    return None if schedule.rung is None else cfg.rung_named(schedule.rung)


def _tokenizer(
    config: TrainConfig,
    recipe: ShortRunConfig | RungConfig | None,
    keep: bool,
    saved_config: dict[str, Any] | None,
) -> TokenizerConfig:
    """The tokenizers a run of `recipe` trains: its `vocab_size` where it sets one, unless the
    command or a parent chose the tokenizers (`keep`); a resumed run (`saved_config`) the config's
    where it did not train the recipe's (it started before the recipe had its own)."""
    if keep or recipe is None or recipe.vocab_size is None:
        return config.tokenizer
    own = replace(config.tokenizer, vocab_size=recipe.vocab_size)
    if saved_config is not None and saved_config["tokenizer"] != to_data(own):
        return config.tokenizer
    return own
