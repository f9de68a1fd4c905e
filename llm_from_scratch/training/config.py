"""Schema of the `training` config group (`configs/training/*.yaml`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import MISSING

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.errors import ConfigError, check_choice, check_range
from llm_from_scratch.model.config import ModelConfig, check_width
from llm_from_scratch.paths import PathsConfig, RunDir, check_inside
from llm_from_scratch.precision import PRECISIONS
from llm_from_scratch.tokenizer.config import TokenizerConfig

if TYPE_CHECKING:
    import torch

SCHEDULES = ("inverse_sqrt", "cosine", "wsd")
COMPILE_CHOICES = ("auto", "true", "false")
RESUME_FROM = ("last", "snapshot")
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?")


def averages(keep_snapshots: int, snapshots: int) -> bool:
    """Whether a run that keeps `keep_snapshots` and has written `snapshots` hands over their
    average (`averaged.pt`, validated after training) rather than `best.pt`."""
    return keep_snapshots >= 2 and snapshots >= 2


def parse_duration(text: str, key: str = "training.max_time") -> float:
    """Seconds in `1800`, `90s`, `30m`, `1h` or `1h30m`."""
    match = _DURATION.fullmatch(str(text).strip().lower())
    if match is None or not any(match.groups()):
        raise ConfigError(f"{key}={text!r} is not a duration: write e.g. 1800, 30m, 1h or 1h30m")
    hours, minutes, seconds = (float(part) if part else 0.0 for part in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise ConfigError(f"{key}={text!r} must be longer than zero")
    return total


@dataclass
class ShortRunConfig:
    """The recipe of a run that `training.max_steps` sets to at most `max_steps` steps, or that a
    time budget switches to for as many steps as fit: half the default's batches (at equal time,
    smaller batches make more updates, with a peak learning rate for that batch size), and fewer
    layers, whose cheaper steps buy more updates too, and smaller vocabularies. Its dropout is set
    apart because the best value depends on how often the run sees each pair: 0 wins for a few
    epochs (the everyday mixture in this recipe's steps), 0.1 over more (small_parallel_enja
    alone, from about 3,000 short steps on). Warm-up and snapshot interval are shares of the
    run's steps."""

    max_steps: int = 4100
    # A budget shrinks the default recipe only where at least this many of its steps fit; below,
    # this recipe learns more in the same time.
    min_default_steps: int = 3600
    lr: float = 2.5e-3  # chosen on dev for width 128 (a narrower model takes a larger step)
    dropout: float = 0.0  # instead of model.dropout
    batch_tokens: int | None = 2048  # instead of data.loading.batch_tokens (null: the same)
    n_encoder_layers: int | None = 2  # instead of model.n_encoder_layers (null: the same)
    n_decoder_layers: int | None = 2  # instead of model.n_decoder_layers (null: the same)
    # Instead of model.d_model and model.d_ff (null: the same): at a slow CPU's compute a
    # narrower model's cheaper steps learn more than a wider one's fewer.
    d_model: int | None = 128
    d_ff: int | None = 512
    # Instead of tokenizer.vocab_size (null: the same): few updates learn a smaller vocabulary's
    # frequent pieces sooner. A command or parent that chose the tokenizers keeps them.
    vocab_size: int | None = 4000
    warmup: float = 0.143  # the default's 600 of 4,200
    save_every: float = 0.06  # the 5 averaged snapshots cover the run's last 30%

    def __post_init__(self) -> None:
        key = "training.short_run."
        check_range(f"{key}max_steps", self.max_steps, 1)
        check_range(f"{key}lr", self.lr, 0, low_open=True)
        check_range(f"{key}min_default_steps", self.min_default_steps, 0)
        for name in (
            "batch_tokens",
            "n_encoder_layers",
            "n_decoder_layers",
            "d_model",
            "d_ff",
            "vocab_size",
        ):
            check_range(f"{key}{name}", getattr(self, name), 1)
        check_range(f"{key}dropout", self.dropout, 0, 1, high_open=True)
        check_range(f"{key}warmup", self.warmup, 0, 1, high_open=True)
        check_range(f"{key}save_every", self.save_every, 0, 1, low_open=True)


@dataclass
class RungConfig:
    """A rung of the ladder above the config's own recipe (`training.ladder`): the model, peak
    learning rate, batch and vocabulary it trains instead (null: the config's), from how much
    compute on, and for at most how many passes over the corpus. Its warm-up and snapshot
    interval are the config's shares of `max_steps`, its step count what the budget fits."""

    name: str = MISSING
    # Tokens processed in the budget at the config's own recipe's measured speed (millions), from
    # which this rung is chosen over the one below.
    min_tokens: float = MISSING
    # Epochs (those tokens over the corpus's) above which the corpus is too small to feed this
    # rung at its dropout: the run stays on the rung below. null: no limit.
    max_epochs: float | None = None
    # Epochs from which the rung below, seeing the corpus this often, overfits it: a rung that
    # regularises rather than grows. null: none needed.
    min_epochs: float | None = None
    d_model: int | None = None
    n_heads: int | None = None
    n_encoder_layers: int | None = None
    n_decoder_layers: int | None = None
    d_ff: int | None = None
    dropout: float | None = None
    lr: float | None = None
    batch_tokens: int | None = None
    vocab_size: int | None = None

    def __post_init__(self) -> None:
        key = f"training.ladder.{self.name}."
        check_range(f"{key}min_tokens", self.min_tokens, 0)
        check_range(f"{key}max_epochs", self.max_epochs, 0, low_open=True)
        check_range(f"{key}min_epochs", self.min_epochs, 0)
        if self.min_epochs is not None and self.max_epochs is not None:
            check_range(f"{key}min_epochs", self.min_epochs, high=self.max_epochs)
        for name in (
            "d_model",
            "n_heads",
            "n_encoder_layers",
            "n_decoder_layers",
            "d_ff",
            "batch_tokens",
            "vocab_size",
        ):
            check_range(f"{key}{name}", getattr(self, name), 1)
        check_range(f"{key}lr", self.lr, 0, low_open=True)
        check_range(f"{key}dropout", self.dropout, 0, 1, high_open=True)


def default_ladder() -> list[RungConfig]:
    """`make train`'s rungs above model=small's own recipe. First the same model with dropout,
    from the epochs at which model=small without it overfits the everyday corpus (measured:
    docs/results.md, The everyday default; between the budget whose dev loss had levelled off
    and the one whose dev loss and test BLEU had turned). Then, where a budget's compute passes
    the point at which the rung below is compute-optimal, a larger model. The short recipe's
    crossover into model=small and the dropout rung are this project's measurements; the larger
    rungs come from the literature until a GPU or CPU measures them. Hoffmann et al. 2022 put
    a model's compute-optimal training at about 20 tokens per parameter, and the optimal size
    grows with compute; Ghorbani et al. 2021 and Gordon, Duh and Kaplan 2021 find the same
    power-law growth for encoder-decoder NMT, and that a small corpus, seen for many epochs, stops
    a larger model's gains (hence `max_epochs` and the dropout). So a rung starts at 20 tokens per
    parameter of the rung below: model=small's 9.6M from 190M tokens, the 22.7M-parameter rung's
    from 450M. model=small learned less in 2 hours of KFTT when made wider or deeper
    (docs/results.md, KFTT), short of 190M tokens, which agrees."""
    return [
        RungConfig(
            name="default_dropout",
            min_tokens=0.0,
            min_epochs=8.0,
            dropout=0.1,
        ),
        RungConfig(
            name="medium",
            min_tokens=190.0,
            max_epochs=100.0,
            d_model=384,
            n_heads=6,
            n_encoder_layers=4,
            n_decoder_layers=4,
            d_ff=1536,
            # Many epochs of a 150k-pair corpus: Transformer base's dropout.
            dropout=0.1,
            lr=1.5e-3,  # between model=small's 2e-3 and base's 1e-3: wider takes smaller steps
            batch_tokens=8192,  # a larger model's rate tolerates a larger batch (Popel & Bojar)
        ),
        RungConfig(
            name="base",
            min_tokens=450.0,
            max_epochs=300.0,
            d_model=512,
            n_heads=8,
            n_encoder_layers=6,
            n_decoder_layers=6,
            d_ff=2048,
            # fairseq's recipe for IWSLT'14 (160k pairs, as many as the everyday mixture) trains
            # this size at 0.3 for tens of epochs; a GPU's 30 minutes hold more.
            dropout=0.3,
            lr=1e-3,  # experiment=kftt_gpu's (Ott et al. 2018)
            batch_tokens=32768,  # about 25k target tokens, Transformer base's (Vaswani et al.)
        ),
    ]


@dataclass
class TrainingConfig:
    """The `training` group: its defaults are `make train`'s, with why each is what it is; the
    measurements behind them are in docs/results.md (The everyday default, The short recipe for
    slow CPUs)."""

    seed: int = 1234
    device: str = "auto"  # auto: CUDA when available, else CPU
    precision: str = "auto"
    compile: str = "auto"  # auto: CUDA only; on CPUs compiling cost more than it saved
    # A file of the compiler's cache artifacts (training/compiling.py): read before the run
    # compiles, written with its graphs at its end. null: the compiler's own caches only.
    compile_cache: str | None = None
    threads: int | None = None  # CPU threads; null: $OMP_NUM_THREADS, else the usable cores
    max_steps: int = 4200
    # The length `warmup_steps` and `save_every` are set for, which a time budget's steps scale
    # them from; null: `max_steps`. `make train` sets it to the config's own `max_steps` where the
    # command's `training.max_steps` caps a time budget, so a cap shrinks the recipe as a budget
    # does instead of warming up for the whole run.
    recipe_steps: int | None = None
    max_epochs: int | None = None
    # A wall-clock budget (`1800`, `30m`, `1h`), setup included, that the run's schedule is
    # planned to fit (training/budget/); null trains exactly `max_steps` on any machine.
    max_time: str | None = "30m"
    # Plan the budget as a CPU this many times slower would (training/budget/, `slower_clock`):
    # the run trains that CPU's steps, so a fast machine can search a slow CPU's recipe.
    budget_slowdown: float = 1.0
    # Plan it as a machine this many times faster would (a GPU's step on a CPU): the plan is that
    # machine's, and the run takes this many times its budget.
    budget_speedup: float = 1.0
    lr: float = 2e-3
    weight_decay: float = 0.01
    # wsd (warm-up, stable, decay; Hägele et al. 2024): the peak until the last `decay_share` of
    # the steps, then down to zero as 1 - sqrt, so a time budget may plan its step count again
    # until the decay (budget/timing.py), not only at the warm-up's end, and fills its budget
    # where the host's speed changes; `save_every` shrinks so that the averaged snapshots fall
    # inside the decay. It scored level with cosine or above at equal steps (docs/results.md).
    # cosine: decays to zero at the last step, its count fixed at the warm-up's end.
    # inverse_sqrt: the paper's.
    schedule: str = "wsd"
    decay_share: float = 0.2  # wsd's decay, as a share of the steps (their 20% cooldown)
    warmup_steps: int = 600
    label_smoothing: float = 0.1
    accumulation_steps: int = 1
    clip_norm: float = 1.0
    eval_every: int = 500
    save_every: int = 250
    keep_snapshots: int = 5  # weight-only snapshots kept (one per save_every); ≥ 2: averaged.pt
    # last.pt (the optimizer's moments too) at a save step only once this long (`10m`) has passed
    # since the last one; each start's first save, its last step and a stop write it. null: at
    # every save.
    last_every: str | None = None
    patience: int | None = None  # evaluations without a dev-BLEU improvement before stopping
    log_every: int = 50
    # Dev pairs decoded (greedy) for BLEU at each evaluation: the first ones, or, where dev mixes
    # several corpora, an even share of each corpus's first ones.
    dev_bleu_sentences: int = 500
    max_nonfinite: int = 20  # consecutive skipped updates (non-finite loss or gradient) tolerated
    # last: continue from last.pt. snapshot: where last.pt is gone, from the newest snapshot (its
    # weights and position; the optimizer's moments start afresh).
    resume_from: str = "last"
    # A new run's starting point, a trained model (training/parent.py): a checkpoint file, or
    # `run:NAME` for a run's final model. Its weights, tokenizers and model shape; a fresh
    # optimizer and schedule. null: random weights.
    init_from: str | None = None
    # Steps traced by torch.profiler after the first few, into <run>/profile/
    # (training/profiling.py); 0: none.
    profile_steps: int = 0
    # null: every run length trains the recipe above
    short_run: ShortRunConfig | None = field(default_factory=ShortRunConfig)
    # The rungs above the config's own recipe, lowest first, that a time budget climbs
    # (`default_ladder`); [] : none. The short recipe is the rung below it.
    ladder: list[RungConfig] = field(default_factory=default_ladder)
    # A rung of the ladder by name, for a step budget (the command a budgeted run logs) or to
    # force one under a time budget; null: the budget picks (a step budget: the config's recipe).
    rung: str | None = None

    def compiles(self, device: torch.device) -> bool:
        """Whether the model is wrapped in `torch.compile` on `device`."""
        return self.compile == "true" or (self.compile == "auto" and device.type == "cuda")

    @property
    def budget_seconds(self) -> float | None:
        return None if self.max_time is None else parse_duration(self.max_time)

    def __post_init__(self) -> None:
        check_choice("training.precision", self.precision, PRECISIONS)
        check_choice("training.schedule", self.schedule, SCHEDULES)
        self.compile = str(self.compile).lower()  # `compile=true` reaches a str field as "True"
        check_choice("training.compile", self.compile, COMPILE_CHOICES)
        check_choice("training.resume_from", self.resume_from, RESUME_FROM)
        at_least_one = (
            "max_steps", "accumulation_steps", "eval_every", "save_every", "log_every",
            "max_nonfinite", "max_epochs", "patience", "dev_bleu_sentences", "threads",
            "recipe_steps",
        )  # fmt: skip
        for key in at_least_one:
            check_range(f"training.{key}", getattr(self, key), 1)
        for key in ("keep_snapshots", "warmup_steps", "weight_decay", "profile_steps"):
            check_range(f"training.{key}", getattr(self, key), 0)
        for key in ("lr", "clip_norm"):
            check_range(f"training.{key}", getattr(self, key), 0, low_open=True)
        check_range("training.label_smoothing", self.label_smoothing, 0, 1, high_open=True)
        check_range("training.decay_share", self.decay_share, 0, 1, low_open=True)
        if self.max_time is not None:
            parse_duration(self.max_time)
        if self.last_every is not None:
            parse_duration(self.last_every, "training.last_every")
        for key in ("budget_slowdown", "budget_speedup"):
            check_range(f"training.{key}", getattr(self, key), 0, low_open=True)
            if getattr(self, key) != 1 and self.max_time is None:
                raise ConfigError(
                    f"training.{key} plans a time budget: set training.max_time too "
                    "(null trains exactly max_steps on any machine)"
                )
        names = [rung.name for rung in self.ladder]
        if len(set(names)) != len(names):
            raise ConfigError(f"training.ladder names a rung twice: {names}")
        if self.rung is not None:
            check_choice("training.rung", self.rung, tuple(names))

    def rung_named(self, name: str) -> RungConfig:
        return next(rung for rung in self.ladder if rung.name == name)

    @property
    def budget_factor(self) -> float:
        """How many of the planned machine's seconds one of this machine's counts as."""
        return self.budget_slowdown / self.budget_speedup


@dataclass
class TrainConfig:
    """`configs/train.yaml`: a run's whole config, stored in its checkpoints."""

    name: str = "default"  # names the run directory, <paths.runs_dir>/<name>/
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig = MISSING
    tokenizer: TokenizerConfig = MISSING
    model: ModelConfig = MISSING
    training: TrainingConfig = MISSING
    decoding: DecodingConfig = MISSING

    def __post_init__(self) -> None:
        check_inside(Path(self.paths.runs_dir), self.name, f"name={self.name}")  # before any work
        short = self.training.short_run
        if short is not None and short.batch_tokens is not None:
            self.data.check_batch_tokens(short.batch_tokens, "training.short_run.batch_tokens")
        if short is not None and short.d_model is not None:
            check_width(short.d_model, self.model.n_heads, "training.short_run.d_model")
        for rung in self.training.ladder:
            key = f"training.ladder.{rung.name}."
            if rung.batch_tokens is not None:
                self.data.check_batch_tokens(rung.batch_tokens, f"{key}batch_tokens")
            heads = rung.n_heads or self.model.n_heads
            check_width(rung.d_model or self.model.d_model, heads, f"{key}d_model")

    @property
    def run_dir(self) -> RunDir:
        """The run's directory: `paths.run_dir`, else `<paths.runs_dir>/<name>/`."""
        return RunDir.of(self.paths, self.name)
