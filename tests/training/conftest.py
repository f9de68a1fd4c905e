"""A copy task: pairs whose target repeats the source, learnable in seconds."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from llm_from_scratch.data.config import CorpusConfig, DataConfig, LoadingConfig
from llm_from_scratch.data.datamodule import build_data
from llm_from_scratch.data.sources import fetch_dataset
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers
from tests.composing import composed_train

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


@pytest.fixture(scope="session")
def copy_corpus(tmp_path_factory) -> Path:
    """A root holding `raw/copy/{train,dev,test}.tsv` (3000/60/60 pairs, fixed seed)."""
    root = tmp_path_factory.mktemp("copy")
    directory = root / "raw" / "copy"
    directory.mkdir(parents=True)
    rng = random.Random(0)
    for split, count in (("train", 3000), ("dev", 60), ("test", 60)):
        lines = []
        for _ in range(count):
            sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))
            lines.append(f"{sentence}\t{sentence}")
        (directory / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def copy_task(copy_corpus):
    """A composed smoke config pointed at the copy task, with its data built once."""
    root = copy_corpus
    config = composed_train("experiment=smoke")
    data_cfg = DataConfig(
        name="copy",
        source="local",
        corpus=CorpusConfig(
            format="tsv",
            splits={"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
            src_column="en",
            tgt_column="ja",
        ),
        loading=LoadingConfig(batch_tokens=600),
    )
    paths = PathsConfig(
        raw_dir=str(root / "raw"), cache_dir=str(root / "cache"), tokenizer_dir=str(root / "tok")
    )
    tokenizer = dataclasses.replace(config.tokenizer, vocab_size=320)
    config = dataclasses.replace(config, paths=paths, data=data_cfg, tokenizer=tokenizer)
    # What the train program does before training: fetch, tokenizers, tokenized splits.
    fetch_dataset(config.data, config.paths)
    src_tok, tgt_tok = load_or_train_tokenizers(config.data, config.tokenizer, config.paths)
    return config, build_data(config.data, src_tok, tgt_tok, config.paths), root
