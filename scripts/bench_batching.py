"""An epoch's training batches on a corpus's real lengths: the vectorized `pack` against its
pair-by-pair reference, and static shapes against the dynamic batches they replace.

    DATA_MIRROR=../shared/corpora python scripts/bench_batching.py [--table-rows] [overrides...]

The overrides are `make train`'s (default `experiment=kyoto_wiki`); the data stage is the run's
own (the tokenizers and the tokenized cache, built on first use). One epoch of the train split is
cut three ways: the dynamic batches (pools sorted by length, cut by `pack`), the same with
`reference_pack` (tests/reference/batching.py; these two timed, the median of three cuts each),
and the static plan (`data.loading.static_shapes=true`).
Rows: the seconds to cut the dynamic epoch (reference: the pair-by-pair pack, which must cut the
same batches), the distinct batch shapes as the collator pads them, and the padded tokens
(rows × (source + target), specials included) of the epoch, static against dynamic.
`--table-rows` prints only rows of the `make bench` table (the details go to stderr).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

try:
    from llm_from_scratch.data import batching
    from llm_from_scratch.data.batching import TokenBudgetBatchSampler
    from llm_from_scratch.data.cleaning import column
    from llm_from_scratch.programs.common import compose_config
    from llm_from_scratch.programs.train import TrainConfig, prepare_data
except ModuleNotFoundError as missing:  # a Python outside the project's .venv
    from _environment import explain_and_exit

    explain_and_exit(missing)

# The reference the tests check `pack` against, from the checkout (not shipped).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reference.batching import reference_pack

REPEATS = 3


def timed(function: Callable[[], list[list[int]]]) -> tuple[list[list[int]], float]:
    """`function`'s result and its median time over `REPEATS` calls."""
    seconds = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
    return result, statistics.median(seconds)


def padded_tokens(shapes: list[tuple[int, int, int]]) -> int:
    return sum(rows * (src_len + tgt_len) for rows, src_len, tgt_len in shapes)


def epoch_shapes(sampler: TokenBudgetBatchSampler) -> list[tuple[int, int, int]]:
    """The padded (rows, source, target) of each of the epoch's batches, in order."""
    return [sampler.padded_shape(batch) for batch in sampler]


def number(value: float) -> str:
    return f"{value:,.2f}" if isinstance(value, float) else f"{value:,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overrides", nargs="*", default=["experiment=kyoto_wiki"])
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()
    config = compose_config("train", [*args.overrides, "name=bench"], TrainConfig)
    data = prepare_data(config)
    train, loading = data.splits["train"], config.data.loading
    src, tgt = column(train, "src_len"), column(train, "tgt_len")

    def sampler(static: bool) -> TokenBudgetBatchSampler:
        shapes = data.shape_plan(loading.batch_tokens) if static else None
        return TokenBudgetBatchSampler(
            src,
            tgt,
            loading.batch_tokens,
            seed=loading.shuffle_seed,
            pool_size=loading.pool_size,
            shapes=shapes,
        )

    batches, ours = timed(lambda: sampler(static=False).epoch_batches())
    with mock.patch.object(batching, "pack", reference_pack):
        reference_batches, reference = timed(lambda: sampler(static=False).epoch_batches())
    if batches != reference_batches:
        sys.exit("bench_batching: pack and reference_pack cut different batches")
    static_shapes = epoch_shapes(sampler(static=True))
    dynamic = sampler(static=False)  # only to pad the batches cut above: it cuts none itself
    dynamic_shapes = [dynamic.padded_shape(batch) for batch in batches]
    static_padded, dynamic_padded = padded_tokens(static_shapes), padded_tokens(dynamic_shapes)
    distinct_static, distinct_dynamic = len(set(static_shapes)), len(set(dynamic_shapes))

    conditions = (
        f"{config.data.name} train, {len(src):,} pairs, {loading.batch_tokens:,}-token batches"
    )
    details = sys.stderr if args.table_rows else sys.stdout
    print(
        f"{conditions}: {len(batches):,} dynamic batches, {len(static_shapes):,} static\n"
        f"  cut an epoch (s):   pack {ours:.2f}, reference_pack {reference:.2f}\n"
        f"  distinct shapes:    static {distinct_static}, dynamic {distinct_dynamic}\n"
        f"  padded tokens:      static {static_padded:,}, dynamic {dynamic_padded:,}",
        file=details,
    )
    rows = [
        ("cut an epoch's batches (s)", ours, reference, "reference_pack", ours / reference),
        (
            "batch shapes in an epoch",
            distinct_static,
            distinct_dynamic,
            "dynamic",
            distinct_static / distinct_dynamic,
        ),
        (
            "padded tokens in an epoch",
            static_padded,
            dynamic_padded,
            "dynamic",
            static_padded / dynamic_padded,
        ),
    ]
    if args.table_rows:
        for name, value, reference_value, reference_name, ratio in rows:
            print(
                f"| batching: {name} | {number(value)} | {number(reference_value)} "
                f"({reference_name}) | {ratio:.2f} | {conditions} |"
            )


if __name__ == "__main__":
    main()
