"""The update time of training recipes against a reference, timed alternately in one process.

Each recipe is a set of train overrides (the first is the reference); all must share the data
and tokenizers, though not their batching (`data.loading`); another vocabulary is another data
stage: time it as its own reference. Each builds the trainer `make train` would, on the run's
own batches, and the recipes take turns for `--rounds` rounds of `--steps` updates, so a host's
drifting load falls on all alike. For each recipe: the median update time, its ratio to the
reference's, its target tokens a second (which differ where recipes batch differently), and how
many of its updates take the time of the reference's `--budget-steps` (the step budget that
searches a recipe at another's compute, e.g. a slow CPU's 30 minutes). Without
recipes: the short recipe against itself at the default recipe's batch size. `--table-rows`
prints only rows of the `make bench` table (the details go to stderr).

    python scripts/bench_recipe.py --budget-steps 2263 \\
        "experiment=short tokenizer=bpe_4k training.short_run.dropout=0.0" \\
        "experiment=short tokenizer=bpe_4k training.short_run.dropout=0.0 \\
         training.short_run.batch_tokens=1024"
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

try:
    from llm_from_scratch.data.config import LoadingConfig
    from llm_from_scratch.data.datamodule import DataModule
    from llm_from_scratch.device import set_threads
    from llm_from_scratch.programs.common import compose_config
    from llm_from_scratch.programs.train import TrainConfig, prepare_data
    from llm_from_scratch.training.plan import PROBE_WARMUP, Schedule, recipe_plan
    from llm_from_scratch.training.trainer import Trainer
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)


DEFAULT_RECIPES = ["experiment=short", "experiment=short training.short_run.batch_tokens=4096"]


def with_recipe_tokenizers(config: TrainConfig) -> TrainConfig:
    """`config` with the tokenizers its recipe trains (a short recipe may have its own)."""
    return replace(config, tokenizer=recipe_plan(config).tokenizer)


def prepared(config: TrainConfig) -> tuple[object, ...]:
    """What the data stage prepares from: the tokenizers and the data settings but
    `data.loading`, which only batches the prepared splits (a recipe may set its own)."""
    return config.tokenizer, replace(config.data, loading=LoadingConfig())


def timed_trainer(config: TrainConfig, data: DataModule) -> tuple[Trainer, Iterator]:
    schedule = Schedule.of(config.training)
    trainer = Trainer(config, data, recipe_plan(config, schedule))
    batches = trainer.batches()
    for _ in range(PROBE_WARMUP):  # allocator and kernel selection: not the steady state
        trainer.update(next(batches))
    return trainer, batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "recipes", nargs="*", default=DEFAULT_RECIPES, help="train overrides, one quoted each"
    )
    parser.add_argument("--budget-steps", type=int, default=2263)
    parser.add_argument("--steps", type=int, default=10, help="updates a turn")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()
    set_threads(args.threads)
    configs = [
        with_recipe_tokenizers(
            compose_config("train", [*shlex.split(text), "name=bench"], TrainConfig)
        )
        for text in args.recipes
    ]
    if any(prepared(config) != prepared(configs[0]) for config in configs):
        parser.error("the recipes must share the data and tokenizers (time another as its own)")
    data = prepare_data(configs[0])
    # Each its own batching over the shared splits.
    trainers = [timed_trainer(config, replace(data, cfg=config.data)) for config in configs]
    times: list[list[float]] = [[] for _ in configs]
    tokens = [0 for _ in configs]  # the timed updates' target tokens, filler rows' none
    for _ in range(args.rounds):
        for index, (trainer, batches) in enumerate(trainers):
            start = time.perf_counter()
            for _ in range(args.steps):
                group = next(batches)
                trainer.update(group)
                tokens[index] += sum(batch.tgt_tokens for batch in group.batches)
            times[index].append((time.perf_counter() - start) / args.steps)
    reference = statistics.median(times[0])
    details = sys.stderr if args.table_rows else sys.stdout
    header = f"{'update (s)':>10} {'ratio':>6} {'steps':>6} {'tgt tok/s':>9}  recipe"
    print(header, file=details)
    for index, (text, seconds) in enumerate(zip(args.recipes, times, strict=True)):
        step = statistics.median(seconds)
        steps = round(args.budget_steps * reference / step)
        speed = tokens[index] / (sum(seconds) * args.steps)
        print(
            f"{step:10.3f} {step / reference:6.2f} {steps:6d} {speed:9,.0f}  {text}", file=details
        )
        if args.table_rows and index:
            print(
                f"| recipe update (s): {text} | {step:.3f} | {reference:.3f} ({args.recipes[0]}) "
                f"| {step / reference:.2f} | {steps} steps in the reference's "
                f"{args.budget_steps} |"
            )


if __name__ == "__main__":
    main()
