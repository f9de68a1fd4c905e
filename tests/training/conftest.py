"""A copy task: pairs whose target repeats the source, learnable in seconds."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

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
