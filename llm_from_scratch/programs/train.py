"""`make train`: fetch the data, train or load the tokenizers, train a model, average snapshots.

    make train ARGS="model=base data=tanaka_graded training.max_steps=20000"

A run lives in `paths.run_dir` (`runs/<name>/`); starting it again resumes from its `last.pt`.
SIGTERM or Ctrl-C stops it after the current step, with `last.pt` saved (`training/stop.py`).
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import fields, replace
from pathlib import Path

import datasets
import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from llm_from_scratch.data.config import SPLITS
from llm_from_scratch.data.datamodule import DataModule, build_data
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.device import contention, resolve_device, set_threads
from llm_from_scratch.display import shown
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.paths import RunDir, check_directory, config_dir, project_root
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.programs.common import compose_config, override_key, register_schema
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.budget.planner import BudgetPlanner
from llm_from_scratch.training.budget.schedule import slower_clock
from llm_from_scratch.training.compiling import load_compile_cache, save_compile_cache
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import (
    Distributed,
    init_distributed,
    shutdown_distributed,
)
from llm_from_scratch.training.final import finish
from llm_from_scratch.training.finished import FinishedRun, finished_run
from llm_from_scratch.training.lock import check_writable, claim
from llm_from_scratch.training.parent import Parent, adopt_parent, read_parent
from llm_from_scratch.training.plan import NOTHING_CHOSEN, Choices
from llm_from_scratch.training.report import FinalModel, format_elapsed, scores_text
from llm_from_scratch.training.resume import read_saved_run, saved_plan
from llm_from_scratch.training.stop import Stopped, closed_output_dropped
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers, tokenizer_paths
from llm_from_scratch.training.trainer import Trainer

logger = logging.getLogger(__name__)


register_schema("train_schema", TrainConfig)


def train(
    config: TrainConfig,
    launch: DictConfig | None = None,
    chosen: Choices = NOTHING_CHOSEN,
    clock: Callable[[], float] = time.perf_counter,
    started_at: float | None = None,
) -> dict[str, float]:
    """The run, top to bottom (`run`); its final dev metrics (none: it had finished). `launch`:
    Hydra's config, for `.hydra/`; `chosen`: what the command chose (`model=...`,
    `tokenizer=...`, `training.max_steps=...`), which the plan keeps; `clock`: what a time
    budget reads, from `started_at` (default: now)."""
    # A time budget counts data and tokenizer preparation too.
    started_at = clock() if started_at is None else started_at
    dist = distributed_with_logging(config)
    try:
        return run(config, dist, launch, chosen, clock, started_at)
    finally:
        # Once the run's frame is gone: a DDP model that outlives its process group can hang
        # its rank at exit, waiting on peers that have left.
        shutdown_distributed()


def run(
    config: TrainConfig,
    dist: Distributed,
    launch: DictConfig | None,
    chosen: Choices,
    clock: Callable[[], float],
    started_at: float,
) -> dict[str, float]:
    """Decide, prepare, train, finish (see `train`)."""
    # Decide: the parent, what last.pt says (read once), whether anything is left to train,
    # then the plan, tokenizers included, before any tokenizer is trained.
    check_directory(config.run_dir.root, "paths.run_dir")
    config, parent = with_parent(config, command_overrides())
    if parent is not None:  # its model and tokenizers
        chosen = replace(chosen, model=True, tokenizers=True)
    saved = read_saved_run(config.run_dir, config.training)
    resumed = saved_plan(config, saved, chosen)
    finished = finished_run(config.run_dir, config, saved, resumed)
    if finished is not None:  # nothing written yet
        return told_finished(finished, config, dist)
    with claim(config.run_dir, dist):
        record_launch(launch, config.run_dir, dist)
        datasets.disable_progress_bars()  # the log says what reading and tokenizing did
        use_threads(config, dist)
        clock = budget_clock(config, clock, started_at, dist)
        compile_cache = config.training.compile_cache
        if compile_cache is not None:  # before the planner's probes compile
            load_compile_cache(Path(compile_cache))
        # The planner reads the corpora's lines: fetch them first (cheap, and idempotent).
        raw_dirs = fetch(config, dist)
        planner = BudgetPlanner(config, dist, clock, started_at, chosen)
        plan, pacing = planner.plan(resumed)
        config = replace(config, tokenizer=plan.tokenizer)
        # Prepare the tokenizers and the data, once.
        data = prepare(config, dist, parent, raw_dirs)
        # Train, then hand over the final model.
        trainer = Trainer(config, data, plan, dist, saved, parent, pacing)
        with closing(trainer.run_logger()) as log:
            metrics = trainer.fit(log)
            if compile_cache is not None and dist.is_main:
                save_compile_cache(Path(compile_cache))
            log_summary(finish(trainer, metrics, log), config, started_at)
        return metrics


def distributed_with_logging(config: TrainConfig) -> Distributed:
    """This process in the torchrun job (alone: a job of one), logging at INFO on the main one."""
    dist = init_distributed(resolve_device(config.training.device, "training.device").type)
    logging.basicConfig()  # without Hydra's logging (the Python API): to stderr
    # Hydra sets the root level for every rank; the other ranks would repeat each line.
    logging.getLogger().setLevel(logging.INFO if dist.is_main else logging.WARNING)
    return dist


def told_finished(finished: FinishedRun, config: TrainConfig, dist: Distributed) -> dict:
    """Say that the run is finished and where its model is; no metrics: nothing was trained."""
    if dist.is_main:  # printed, not logged: the log is a file of the run directory
        print(finished.report(translate_command(config, finished.model)))
    return {}


def with_parent(
    config: TrainConfig, overrides: Sequence[str] = ()
) -> tuple[TrainConfig, Parent | None]:
    """`config` adopted to the parent `training.init_from` names (training/parent.py), and the
    parent; `config` and None without one. `overrides`: the command line's, whose model and
    tokenizer settings, like those an experiment changed from the defaults, may not change the
    parent's."""
    spec = config.training.init_from
    if spec is None:
        return config, None
    parent = read_parent(spec, config.paths.runs_dir)
    chosen = {override_key(override) for override in overrides}
    for group, defaults in (("model", ModelConfig()), ("tokenizer", TokenizerConfig())):
        settings = getattr(config, group)
        chosen.update(
            f"{group}.{item.name}"
            for item in fields(settings)
            if getattr(settings, item.name) != getattr(defaults, item.name)
        )
    return adopt_parent(config, parent, chosen), parent


def use_threads(config: TrainConfig, dist: Distributed) -> None:
    """The run's CPU threads (`training.threads`), with a warning where others compete."""
    warning = contention(set_threads(config.training.threads))
    if warning is not None and dist.is_main:
        logger.warning("%s", warning)


def fetch(config: TrainConfig, dist: Distributed) -> list[Path]:
    """Every corpus the run reads, fetched (or found) on the main process first; their
    directories."""
    if not dist.is_main:
        dist.barrier()  # let the main process download or copy the files first
    started = time.perf_counter()
    raw_dirs = fetch_data(config.data, config.paths)
    if dist.is_main:
        logger.info("data ready: %s (%s)", ", ".join(map(shown, raw_dirs)), _since(started))
        dist.barrier()
    return raw_dirs


def prepare(
    config: TrainConfig, dist: Distributed, parent: Parent | None, raw_dirs: list[Path]
) -> DataModule:
    """The data stage (`prepare_data`) on corpora already fetched, on the main process first."""
    if parent is not None and dist.is_main:
        logger.info("fine-tuning %s: its model shape and tokenizers", parent)
    if not dist.is_main:
        dist.barrier()  # let the main process train the tokenizers and fill the cache first
    data = prepare_data(config, parent, raw_dirs)
    if dist.is_main:
        dist.barrier()
    return data


def budget_clock(
    config: TrainConfig, clock: Callable[[], float], started_at: float, dist: Distributed
) -> Callable[[], float]:
    """`clock`, or as a slower or faster machine would read it (`training.budget_slowdown`,
    `training.budget_speedup`)."""
    factor = config.training.budget_factor
    if factor == 1:
        return clock
    if dist.is_main:
        logger.info(
            "planning the budget as a machine %.2fx %s would (training.budget_slowdown, "
            "budget_speedup): the plan and the elapsed times of its steps are that machine's",
            factor if factor > 1 else 1 / factor,
            "slower" if factor > 1 else "faster",
        )
    return slower_clock(factor, started_at, clock)


def record_launch(cfg: DictConfig | None, run_dir: RunDir, dist: Distributed) -> None:
    """Write what Hydra writes to `.hydra/` at launch, which `configs/train.yaml` turns off so that
    a run that trains nothing writes nothing: the composed config, Hydra's and the overrides (on
    the main process; none outside a Hydra app)."""
    if cfg is None or not dist.is_main or not HydraConfig.initialized():
        return
    hydra_cfg = HydraConfig.get()
    directory = run_dir.launch
    directory.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, directory / "config.yaml")
    OmegaConf.save(OmegaConf.create({"hydra": hydra_cfg}), directory / "hydra.yaml")
    OmegaConf.save(hydra_cfg.overrides.task, directory / "overrides.yaml")


def prepare_data(
    config: TrainConfig, parent: Parent | None = None, raw_dirs: list[Path] | None = None
) -> DataModule:
    """Fetch the data (unless `raw_dirs` says where it was fetched), load or train the tokenizers
    (a `parent`'s: its own), tokenize and clean. Each stage logs what it does when it has work to
    do; here, one line per stage says it is ready and how long it took."""
    if raw_dirs is None:
        started = time.perf_counter()
        raw_dirs = fetch_data(config.data, config.paths)
        logger.info("data ready: %s (%s)", ", ".join(map(shown, raw_dirs)), _since(started))
    started = time.perf_counter()
    if parent is not None:
        src_tok, tgt_tok = parent.src_tok, parent.tgt_tok
        logger.info("tokenizers: the parent's, from %s", shown(parent.path))
    else:
        src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
        files = dict.fromkeys(tokenizer_paths(config.data, config.tokenizer, config.paths))
        logger.info("tokenizers ready: %s (%s)", ", ".join(map(shown, files)), _since(started))
    started = time.perf_counter()
    data = build_data(config.data, src_tok, tgt_tok, config.paths)
    sizes = ", ".join(f"{split} {len(data.splits[split]):,}" for split in SPLITS)
    logger.info("tokenized splits ready: %s pairs (%s)", sizes, _since(started))
    return data


# What the command shown at a run's end translates, in the language the model reads.
EXAMPLE_INPUTS = {"en": "Hello.", "ja": "こんにちは。"}


def summary(final: FinalModel, config: TrainConfig, seconds: float) -> list[str]:
    """The last lines of a run: which model it hands over, its scores, how to use it."""
    if final.test is None:
        test = "test: no test pairs"
    else:
        test = f"test {scores_text(final.test)} (greedy, {final.test_sentences:,} sentences)"
    return [
        f"finished in {format_elapsed(seconds)}; the model: {shown(final.path)} "
        f"({final.description})",
        f"dev {scores_text(final.dev)} (greedy)",
        test,
        f"translate with: {translate_command(config, final.path)}",
    ]


def log_summary(final: FinalModel | None, config: TrainConfig, started_at: float) -> None:
    """Log the `summary` of the model the run hands over (None: none, or not the main process)."""
    if final is not None:
        for line in summary(final, config, time.perf_counter() - started_at):
            logger.info("%s", line)


def translate_command(config: TrainConfig, model: Path) -> str:
    """The command that translates with this run's final model, from the current directory."""
    script = project_root() / "scripts" / "translate.py"
    run_dir = RunDir.of(config.paths, config.name)
    by_name = run_dir == RunDir.named(config.paths.runs_dir, config.name)
    choice = f"--run {shlex.quote(config.name)}" if by_name else f"--checkpoint {shown(model)}"
    example = EXAMPLE_INPUTS.get(config.data.source_lang, EXAMPLE_INPUTS["en"])
    return f'{shown(Path(sys.executable))} {shown(script)} {choice} "{example}"'


def _since(started: float) -> str:
    return f"{time.perf_counter() - started:.1f} s"


def main() -> None:
    """`scripts/train.py`: Hydra makes the run directory before the program runs, so an invalid
    config or a file in the directory's way is refused here first, in one line. Output nobody
    reads any more (`| tee log`, stopped by the same Ctrl-C) is dropped, never costs a step."""
    with closed_output_dropped():
        with exit_on_user_error():
            check_config_before_hydra(sys.argv[1:])
        _main()


def check_config_before_hydra(arguments: list[str]) -> None:
    """Compose and validate the config as Hydra will, and refuse a `paths.run_dir` that a file is
    in the way of. Hydra's own options and settings (`--help`, `hydra.run.dir=...`) are left to
    Hydra."""
    if any(argument.startswith(("-", "hydra.", "hydra/", "+hydra")) for argument in arguments):
        return
    config = compose_config("train", arguments, TrainConfig)
    run_dir = RunDir.of(config.paths, config.name)
    check_directory(run_dir.root, "paths.run_dir")
    if not run_dir.root.exists():  # which Hydra creates; an existing one: `claim` checks it
        check_writable(run_dir)


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="train")
def _main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        try:
            chosen = command_choices(command_keys())
            config = with_recipe_steps(to_schema(cfg, TrainConfig), command_overrides())
            train(config, cfg, chosen, started_at=time.perf_counter() - process_age())
        except Stopped as stopped:
            if int(os.environ.get("RANK", "0")) == 0:  # one line for a torchrun job
                print(stopped, file=sys.stderr)
            sys.exit(stopped.exit_status)
        except KeyboardInterrupt:  # Ctrl-C before the first step or after the last
            print("\ninterrupted: run the same command to go on", file=sys.stderr)
            sys.exit(130)


def command_overrides() -> list[str]:
    """The command line's overrides (none outside a Hydra app: the Python API)."""
    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def command_keys() -> list[str]:
    """The keys the command line set (`model`, `tokenizer.vocab_size`)."""
    return [override_key(override) for override in command_overrides()]


def command_choices(keys: list[str]) -> Choices:
    """What the command line's keys (`command_keys`) chose, not a default or an experiment: the
    model (`model=tiny`, `model.dropout=0.2`), which a rung of the ladder does not replace; the
    tokenizers (`tokenizer=bpe_8k`, `tokenizer.vocab_size=6000`); and `training.max_steps`, a
    time budget's cap."""

    def chose(group: str) -> bool:
        return any(key == group or key.startswith(f"{group}.") for key in keys)

    return Choices(chose("model"), chose("tokenizer"), "training.max_steps" in keys)


def with_recipe_steps(config: TrainConfig, overrides: Sequence[str]) -> TrainConfig:
    """`config`, where the command's `training.max_steps` (in `overrides`) caps a time budget,
    with `training.recipe_steps` the config's own `max_steps` (composed without that override),
    the length its warm-up and snapshots are set for, so that a cap scales them as the budget's
    steps do. A command that sets the warm-up or the snapshot interval too sets them for its own
    `max_steps`. Inside Hydra's app, whose config search path the composition uses."""
    training = config.training
    keys = [override_key(override) for override in overrides]
    capping = [o for o, key in zip(overrides, keys, strict=True) if key == "training.max_steps"]
    scaled_settings = {"training.warmup_steps", "training.save_every"}
    if not capping or scaled_settings & set(keys):
        return config
    if training.budget_seconds is None or training.recipe_steps is not None:
        return config
    uncapped = [o for o in overrides if o not in capping]
    own = hydra.compose(config_name="train", overrides=uncapped).training.max_steps
    return replace(config, training=replace(training, recipe_steps=own))


def process_age() -> float:
    """Seconds since this process started (0 where the system does not say): a time budget
    counts Python's start and the config's composition too."""
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
