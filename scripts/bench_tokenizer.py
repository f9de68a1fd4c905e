"""Benchmark our BPE against sentencepiece BPE on tanaka_graded train, in the same process.

    DATA_MIRROR=../shared/corpora python scripts/bench_tokenizer.py [--limit N] [--vocab-size V]
        [--table-rows]

For each language it trains both (same vocabulary size, byte fallback, one thread), encodes every
sentence with one call each (as a data pipeline does; our piece cache starts cold; best of 3 with
garbage collection off during the loop, as `timeit` does), and prints
ours/sentencepiece ratios of training time, encode throughput and characters per token.
`--table-rows` prints only rows of the `make bench` table (the details go to stderr).
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path

import sentencepiece as spm
from omegaconf import OmegaConf

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.sources import fetch_data
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.training.tokenizers import read_train_texts

DATA_CONFIG = Path(__file__).resolve().parent.parent / "configs/data/tanaka_graded.yaml"


def timed(function: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def encode_seconds(
    make_encoders: list[Callable[[], Callable[[str], list[int]]]],
    texts: list[str],
    repeats: int = 3,
) -> list[float]:
    """Best-of-`repeats` seconds to encode `texts` one call each, per encoder, taken in turns.

    As `timeit` does, garbage collection is off while a loop runs: otherwise collections
    triggered by one loop's allocations scan everything the process holds, and the order of the
    loops changes the ratio by up to 2x. Each repeat starts from a fresh encoder (a cold cache).
    """
    best = [float("inf")] * len(make_encoders)
    for _ in range(repeats):
        for index, make_encoder in enumerate(make_encoders):
            encode = make_encoder()
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                for text in texts:
                    encode(text)
                best[index] = min(best[index], time.perf_counter() - start)
            finally:
                gc.enable()
    return best


def fresh_copy(tok: BPETokenizer) -> BPETokenizer:
    """The same tokenizer with an empty piece cache, as a freshly loaded one has."""
    return BPETokenizer.from_json(tok.to_json())


def train_sentencepiece(texts: list[str], vocab_size: int) -> spm.SentencePieceProcessor:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=model,
        model_type="bpe",
        vocab_size=vocab_size,
        byte_fallback=True,
        character_coverage=0.9995,
        num_threads=1,
        minloglevel=2,
    )
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


def compare(
    lang: str, texts: list[str], vocab_size: int, pretokenizer: str, table_rows: bool
) -> None:
    ours, ours_train = timed(
        lambda: BPETokenizer.train(texts, vocab_size, pretokenizer=pretokenizer)
    )
    theirs, theirs_train = timed(lambda: train_sentencepiece(texts, vocab_size))
    ours_ids = [ours.encode(text) for text in texts]
    theirs_ids = [theirs.encode(text) for text in texts]
    ours_encode, theirs_encode = encode_seconds(
        [lambda: fresh_copy(ours).encode, lambda: theirs.encode], texts
    )

    chars = sum(map(len, texts))
    ours_cpt = chars / sum(map(len, ours_ids))
    theirs_cpt = chars / sum(map(len, theirs_ids))
    rows = [
        ("training time (s)", ours_train, theirs_train, ours_train / theirs_train, "<= 10"),
        (
            "encode (sentences/s)",
            len(texts) / ours_encode,
            len(texts) / theirs_encode,
            theirs_encode / ours_encode,
            ">= 0.5",
        ),
        ("chars per token", ours_cpt, theirs_cpt, ours_cpt / theirs_cpt, ">= 0.97"),
    ]
    details = sys.stderr if table_rows else sys.stdout
    print(
        f"\n{lang}: {len(texts):,} sentences, {chars:,} characters, vocab {vocab_size}",
        file=details,
    )
    print(f"  {'':22} {'ours':>10} {'spm':>10} {'ours/spm':>9}  target", file=details)
    for name, ours_value, theirs_value, ratio, target in rows:
        line = f"  {name:22} {ours_value:10.2f} {theirs_value:10.2f} {ratio:9.2f}  {target}"
        print(line, file=details)
        if table_rows:
            print(
                f"| tokenizer {lang}: {name} | {ours_value:,.2f} | {theirs_value:,.2f} "
                f"(sentencepiece BPE) | {ratio:.2f} | target {target}, tanaka_graded train |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--limit", type=int, default=None, help="use the first N sentence pairs")
    parser.add_argument("--pretokenizer", default="okurigana")
    parser.add_argument("--table-rows", action="store_true", help="print `make bench` rows only")
    args = parser.parse_args()

    data_cfg = to_schema(OmegaConf.load(DATA_CONFIG), DataConfig)
    paths = PathsConfig()
    fetch_data(data_cfg, paths)
    src, tgt = read_train_texts(data_cfg, paths)
    print(
        f"tanaka_graded train, pretokenizer={args.pretokenizer}, sentencepiece {spm.__version__}",
        file=sys.stderr if args.table_rows else sys.stdout,
    )
    for lang, texts in ((data_cfg.source_lang, src), (data_cfg.target_lang, tgt)):
        compare(lang, texts[: args.limit], args.vocab_size, args.pretokenizer, args.table_rows)


if __name__ == "__main__":
    main()
