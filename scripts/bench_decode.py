"""Decoding speed: greedy and beam-5, each with and without the KV cache, in this one process.

Translates the small_parallel_enja test split (or its first --sentences) four ways in fp32 and
prints sentences/s and the cached/uncached speed ratio; it also checks that the cache changes no
output (exact in fp32 only: bf16 rounds the cached and the full prefix's products differently).
Where `decoding.precision=auto` picks bf16 autocast, the cached searches also run in bf16, against
fp32: the speed ratio and how many outputs bf16 leaves unchanged.
The model is the --checkpoint given, else run `default`'s final model, else a fresh `model=small`
with the dataset's tokenizers of configs/train.yaml (loaded from paths.tokenizer_dir, or trained
there first). An untrained model rarely emits EOS, so its outputs run to the length limit: the
slowest case.

    .venv/bin/python scripts/bench_decode.py [--checkpoint runs/default/best.pt] [--sentences 500]
        [--table-rows]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from llm_from_scratch.checkpoint import (
    CheckpointError,
    build_model,
    load_checkpoint,
    restore_for_inference,
    run_model,
)
from llm_from_scratch.data.corpus import load_split
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.torch_engine import TorchModel
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.device import resolve_device
from llm_from_scratch.precision import select_precision
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.programs.common import compose_config
from llm_from_scratch.programs.train import TrainConfig
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers

VARIANTS = [("greedy", 1), ("beam-5", 5)]


def fresh_model(config: TrainConfig, device: torch.device):
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
    torch.manual_seed(config.training.seed)
    model = build_model(config.model, src_tok, tgt_tok, config.tokenizer.shared).to(device)
    return model.eval(), src_tok, tgt_tok


def default_model(runs_dir: str) -> Path | None:
    try:
        return run_model(runs_dir, "default")
    except CheckpointError:  # no trained default run: time a fresh model
        return None


def timed(translator: Translator, sources: list[str]) -> tuple[float, list[list[int]]]:
    """Sentences/s translating `sources` after a short warm-up (allocator, kernels), and the
    outputs' target ids."""
    translator.translate(sources[:8])
    start = time.perf_counter()
    translations = translator.translate(sources)
    seconds = time.perf_counter() - start
    return len(sources) / seconds, [t.candidates[0].tokens for t in translations]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkpoint", type=Path, help="default: runs/default's final model, else a fresh model"
    )
    parser.add_argument("--sentences", type=int, default=500, help="first N of the test split")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()

    device = resolve_device(args.device)
    config = compose_config("train", ["model=small", "decoding=beam"], TrainConfig)
    fetch_data(config.data, config.paths)
    checkpoint = args.checkpoint or default_model(config.paths.runs_dir)
    if checkpoint:
        model, src_tok, tgt_tok, _ = restore_for_inference(load_checkpoint(checkpoint), device)
        origin = f"checkpoint {checkpoint}"
    else:
        model, src_tok, tgt_tok = fresh_model(config, device)
        origin = "freshly initialised model=small (seed training.seed), the default tokenizers"
    sources = list(load_split(config.data, "test", config.paths)["src"])[: args.sentences]
    details = sys.stderr if args.table_rows else sys.stdout
    precision = select_precision("auto", device, key="decoding.precision").name
    conditions = (
        f"{len(sources)} sentences of small_parallel_enja test; {origin}; device {device}, "
        f"{torch.get_num_threads()} threads"
    )
    print(conditions, file=details)
    print(
        f"{'search':8} {'cached s/s':>11} {'uncached s/s':>13} {'speed-up':>9}  outputs",
        file=details,
    )
    for name, beam_size in VARIANTS:
        decode = DecodingConfig(beam_size=beam_size, precision="fp32")
        rates, outputs = [], []
        for use_cache in (True, False):
            rate, tokens = timed(
                Translator(TorchModel(model, src_tok, tgt_tok, use_cache), decode), sources
            )
            rates.append(rate)
            outputs.append(tokens)
        same = "identical" if outputs[0] == outputs[1] else "DIFFER"
        mean_len = sum(map(len, outputs[0])) / len(sources)
        print(
            f"{name:8} {rates[0]:11.1f} {rates[1]:13.1f} {rates[0] / rates[1]:8.2f}x  "
            f"{same}, {mean_len:.1f} tokens on average (fp32)",
            file=details,
        )
        if args.table_rows:
            print(
                f"| decoding {name}: sentences/s | {rates[0]:,.1f} | {rates[1]:,.1f} (no KV cache) "
                f"| {rates[0] / rates[1]:.2f} | outputs {same}; fp32; {conditions} |"
            )
        if precision == "fp32":
            continue
        decode = replace(decode, precision=precision)
        rate, tokens = timed(Translator(TorchModel(model, src_tok, tgt_tok), decode), sources)
        unchanged = sum(a == b for a, b in zip(outputs[0], tokens, strict=True))
        print(
            f"{name:8} {rate:11.1f} in {precision}: {rate / rates[0]:.2f}x fp32's speed, "
            f"{unchanged} of {len(sources)} outputs as in fp32",
            file=details,
        )
        if args.table_rows:
            print(
                f"| decoding {name}, {precision} autocast: sentences/s | {rate:,.1f} "
                f"| {rates[0]:,.1f} (fp32) | {rate / rates[0]:.2f} | {unchanged} of "
                f"{len(sources)} outputs as in fp32; {conditions} |"
            )


if __name__ == "__main__":
    with exit_on_user_error():
        main()
