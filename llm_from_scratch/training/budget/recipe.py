"""The ladder of recipes a time budget climbs, and the rule that picks a rung.

The rungs, lowest first: the short recipe (`training.short_run`), the config's own recipe, then
`training.ladder`'s (config.py `default_ladder`, where each comes from). The measure of a budget
is its compute: the tokens the config's own recipe would process in it, at the speed the probe
measured on this machine. The rule, from the bottom:

- the short recipe where fewer than `training.short_run.min_default_steps` of the config's
  recipe's steps fit (the crossover docs/results.md measured);
- else the highest rung of the ladder whose `min_tokens` the compute reaches, and whose epochs
  lie between its `min_epochs` and `max_epochs`: epochs are the compute over the corpus's tokens
  (its train split's pieces, estimated from its raw lines as the stand-in is), so a corpus seen
  often enough to be overfitted takes a rung with dropout, and one too small to feed a larger
  model at its dropout keeps the run on the rung below;
- a model the command chose (`model=...`, `model.dropout=...`) does not climb: it trains the
  config's recipe; `training.rung` forces a rung.

The rung chosen is then timed on its own model and planned to fill the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_from_scratch.training.config import RungConfig, TrainingConfig
from llm_from_scratch.training.plan import Plan, Schedule


@dataclass(frozen=True)
class Rung:
    """A rung of the ladder: its place (`number` of `of`, from 1), its name, and the schedule
    settings that select it."""

    number: int
    of: int
    name: str  # "short", "default" (the config's own), or a `training.ladder` rung's
    short: bool = False
    ladder_name: str | None = None  # the `training.ladder` rung's name

    def trial(self, cfg: TrainingConfig) -> Schedule:
        """A schedule of this rung to time: its step-budget length."""
        if self.short:
            assert cfg.short_run is not None
            return Schedule.of(cfg, cfg.short_run.max_steps, short=True)
        return Schedule.of(cfg, cfg.max_steps, short=False, rung=self.ladder_name)


def ladder(cfg: TrainingConfig) -> list[Rung]:
    """The rungs of `cfg`'s ladder, lowest first."""
    names: list[tuple[str, bool, str | None]] = [("default", False, None)]
    if cfg.short_run is not None:
        names.insert(0, ("short", True, None))
    names += [(rung.name, False, rung.name) for rung in cfg.ladder]
    return [
        Rung(number, len(names), name, short, ladder_name)
        for number, (name, short, ladder_name) in enumerate(names, 1)
    ]


def rung_of(cfg: TrainingConfig, schedule: Schedule) -> Rung:
    """The rung `schedule` trains."""
    rungs = ladder(cfg)
    if schedule.short:
        return rungs[0]
    return next(rung for rung in rungs if not rung.short and rung.ladder_name == schedule.rung)


def choose_rung(
    cfg: TrainingConfig,
    default_steps: int,
    compute_tokens: float,
    epoch_tokens: float,
    model_chosen: bool = False,
) -> Rung:
    """The rung a budget affords (the module's rule): `default_steps`, the config's recipe's
    steps that fit it; `compute_tokens`, the tokens those process; `epoch_tokens`, the corpus's
    train split's."""
    rungs = ladder(cfg)
    default = next(rung for rung in rungs if rung.name == "default")
    if cfg.rung is not None:
        return next(rung for rung in rungs if rung.ladder_name == cfg.rung)
    short = cfg.short_run
    if short is not None and default_steps < short.min_default_steps:
        return rungs[0]
    if model_chosen:
        return default
    chosen = default
    epochs = compute_tokens / max(epoch_tokens, 1.0)
    for settings, rung in zip(cfg.ladder, rungs[default.number :], strict=True):
        fed = settings.max_epochs is None or epochs <= settings.max_epochs
        seen_enough = settings.min_epochs is None or epochs >= settings.min_epochs
        if compute_tokens >= settings.min_tokens * 1e6 and fed and seen_enough:
            chosen = rung
    return chosen


def describe(
    rung: Rung,
    schedule: Schedule,
    budget: str,
    tokens_per_second: float,
    compute_tokens: float,
    epochs: float,
    cfg: TrainingConfig,
    model_chosen: bool = False,
) -> str:
    """The log line of a budget's plan: the rung, why, its steps, and the step-budget command
    that trains the same weights."""
    return (
        f"{budget} at {tokens_per_second / 1000:.1f}k tokens/s: rung {rung.number} of {rung.of} "
        f"({rung.name}), {schedule.steps:,} steps ({compute_tokens / 1e6:,.1f}M tokens of the "
        f"config's recipe, {epochs:,.1f} epochs of the corpus: {why(rung, cfg, model_chosen)}); "
        f"the same run without a budget: {schedule.overrides(cfg)}"
    )


def why(rung: Rung, cfg: TrainingConfig, model_chosen: bool = False) -> str:
    """What put the run on `rung`, and what the next one needs."""
    if cfg.rung is not None:
        return "training.rung chose it"
    if rung.short:
        assert cfg.short_run is not None
        return f"fewer than {cfg.short_run.min_default_steps:,} steps of the config's fit"
    if model_chosen:
        return "the model the command or the parent chose, which does not climb"
    reached = f"from {requirement(cfg.rung_named(rung.ladder_name))}; " if rung.ladder_name else ""
    following = rung.number - (1 if cfg.short_run is None else 2)  # the next rung's in cfg.ladder
    if following >= len(cfg.ladder):
        return f"{reached}the top rung"
    return f"{reached}{cfg.ladder[following].name} needs {requirement(cfg.ladder[following])}"


def requirement(rung: RungConfig) -> str:
    """What the compute must reach for `rung`: "190M and at most 100 epochs", "8 epochs"."""
    needs = [f"{rung.min_tokens:,.0f}M"] if rung.min_tokens else []
    if rung.min_epochs is not None:
        needs.append(f"{rung.min_epochs:,.0f} epochs")
    if rung.max_epochs is not None:
        needs.append(f"at most {rung.max_epochs:,.0f} epochs")
    return " and ".join(needs) or "nothing more"


def describe_recipe(plan: Plan, rung: Rung) -> str:
    """The log line of a plan on a rung other than the config's own."""
    schedule, model = plan.schedule, plan.model
    kept = " (the model the command chose, kept)" if plan.model_kept else ""
    return (
        f"rung {rung.number} ({rung.name}) for {schedule.steps:,} steps: "
        f"{model.n_encoder_layers} encoder and {model.n_decoder_layers} decoder layers of width "
        f"{model.d_model} (feed-forward {model.d_ff}){kept}, "
        f"vocabularies of {plan.tokenizer.vocab_size:,} pieces, "
        f"dropout {model.dropout:g}, learning rate {plan.lr:g}, batches of {plan.batch_tokens} "
        f"tokens, warm-up {schedule.warmup_steps} steps, a snapshot every "
        f"{schedule.save_every} steps"
    )
