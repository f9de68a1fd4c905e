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
from collections.abc import Sequence
from dataclasses import fields
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
from llm_from_scratch.programs.common import compose_config, register_schema
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.budget.schedule import slower_clock
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import (
    Distributed,
    init_distributed,
    shutdown_distributed,
)
from llm_from_scratch.training.finished import finished_run
from llm_from_scratch.training.lock import claim
from llm_from_scratch.training.parent import Parent, adopt_parent, read_parent
from llm_from_scratch.training.report import FinalModel, format_elapsed, scores_text
from llm_from_scratch.training.resume import SavedRun, read_saved_run
from llm_from_scratch.training.run import recipe_config, train_run
from llm_from_scratch.training.stop import Stopped
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers, tokenizer_paths

logger = logging.getLogger(__name__)


register_schema("train_schema", TrainConfig)


def train(
    config: TrainConfig,
    launch: DictConfig | None = None,
    keep_model: bool = False,
    keep_tokenizers: bool = False,
) -> dict[str, float]:
    """Build the data and the model, train, and return the final dev metrics (none when the run
    had already finished). `launch`: the config Hydra composed, recorded in `<run_dir>/.hydra/`;
    `keep_model`: the command chose the model (`model=...`), which the short recipe then keeps;
    `keep_tokenizers`: the command chose the tokenizers (`tokenizer=...`), which it keeps too."""
    started_at = time.perf_counter()  # a time budget counts data and tokenizer preparation too
    dist = init_distributed(resolve_device(config.training.device, "training.device").type)
    logging.basicConfig()  # without Hydra's logging (the Python API): to stderr
    # Hydra sets the root level for every rank; the other ranks would repeat each line.
    logging.getLogger().setLevel(logging.INFO if dist.is_main else logging.WARNING)
    run_dir = RunDir.of(config.paths, config.name)
    try:
        check_directory(run_dir.root, "paths.run_dir")
        config, parent = with_parent(config, command_overrides())
        keep_model = keep_model or parent is not None  # a short recipe keeps the parent's layers
        keep_tokenizers = keep_tokenizers or parent is not None
        saved = read_saved_run(run_dir, config.training)  # the one read of the run's last.pt
        config = recipe_config(config, keep_tokenizers, saved)
        finished = finished_run(run_dir, config, keep_model, saved)  # before anything is written
        if finished is not None:
            if dist.is_main:
                # Printed, not logged: the log is a file of the run directory.
                print(finished.report(translate_command(config, finished.model)))
            return {}
        with claim(run_dir, dist):
            if dist.is_main and launch is not None:
                record_launch(launch, run_dir)
            return _train(config, dist, started_at, keep_model, keep_tokenizers, parent, saved)
    finally:
        shutdown_distributed()


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
    chosen = {override.lstrip("+~").split("=")[0] for override in overrides}
    for group, defaults in (("model", ModelConfig()), ("tokenizer", TokenizerConfig())):
        settings = getattr(config, group)
        chosen.update(
            f"{group}.{item.name}"
            for item in fields(settings)
            if getattr(settings, item.name) != getattr(defaults, item.name)
        )
    return adopt_parent(config, parent, chosen), parent


def _train(
    config: TrainConfig,
    dist: Distributed,
    started_at: float,
    keep_model: bool,
    keep_tokenizers: bool,
    parent: Parent | None = None,
    saved: SavedRun | None = None,
) -> dict[str, float]:
    warning = contention(set_threads(config.training.threads))
    if warning is not None and dist.is_main:
        logger.warning("%s", warning)
    datasets.disable_progress_bars()  # the log says what the data stage did
    if parent is not None and dist.is_main:
        logger.info("fine-tuning %s: its model shape and tokenizers", parent)
    if not dist.is_main:
        dist.barrier()  # let the main process train the tokenizers and fill the cache first
    data = prepare_data(config, parent)
    if dist.is_main:
        dist.barrier()
    slowdown = config.training.budget_slowdown
    clock = time.perf_counter if slowdown == 1 else slower_clock(slowdown, started_at)
    if slowdown != 1 and dist.is_main:
        logger.info(
            "planning the budget as a CPU %.2fx slower would (training.budget_slowdown): "
            "the plan and the elapsed times of its steps are that CPU's",
            slowdown,
        )
    run = train_run(
        config, data, dist, started_at=started_at, clock=clock, keep_model=keep_model,
        parent=parent, prepare=None if keep_tokenizers else prepare_data, saved=saved,
    )  # fmt: skip
    if run.final is not None:
        for line in summary(run.final, config, time.perf_counter() - started_at):
            logger.info("%s", line)
    return run.metrics


def record_launch(cfg: DictConfig, run_dir: RunDir) -> None:
    """Write what Hydra writes to `.hydra/` at launch, which `configs/train.yaml` turns off so that
    a run that trains nothing writes nothing: the composed config, Hydra's and the overrides."""
    if not HydraConfig.initialized():
        return
    hydra_cfg = HydraConfig.get()
    directory = run_dir.launch
    directory.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, directory / "config.yaml")
    OmegaConf.save(OmegaConf.create({"hydra": hydra_cfg}), directory / "hydra.yaml")
    OmegaConf.save(hydra_cfg.overrides.task, directory / "overrides.yaml")


def prepare_data(config: TrainConfig, parent: Parent | None = None) -> DataModule:
    """Fetch the data, load or train the tokenizers (a `parent`'s: its own), tokenize and clean.
    Each stage logs what it does when it has work to do; here, one line per stage says it is
    ready and how long it took."""
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
    config or a file in the directory's way is refused here first, in one line."""
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
    check_directory(RunDir.of(config.paths, config.name).root, "paths.run_dir")


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="train")
def _main(cfg: DictConfig) -> None:
    with exit_on_user_error():
        try:
            config = to_schema(cfg, TrainConfig)
            train(config, cfg, keep_model=model_chosen(), keep_tokenizers=tokenizers_chosen())
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
    return [override.lstrip("+~").split("=")[0] for override in command_overrides()]


def model_chosen() -> bool:
    """Whether the command line chose the model group (`model=tiny`), not a default or an
    experiment."""
    return "model" in command_keys()


def tokenizers_chosen() -> bool:
    """Whether the command line chose the tokenizers (`tokenizer=bpe_4k`,
    `tokenizer.vocab_size=6000`), not a default or an experiment."""
    return any(key == "tokenizer" or key.startswith("tokenizer.") for key in command_keys())
