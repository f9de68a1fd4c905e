"""The command line of `scripts/train.py`: run as a user runs it, and on the copy task (see
conftest.py's `copy_corpus`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_train_script(arguments: list[str]) -> subprocess.CompletedProcess:
    """`scripts/train.py ARGUMENTS` in a child process from the project root, on one thread."""
    return subprocess.run(
        [sys.executable, "scripts/train.py", *arguments],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1"},
    )


def copy_task_overrides(corpus: Path, work: Path, run_dir: Path) -> list[str]:
    """The smoke experiment on the copy task, training in `run_dir` with caches under `work`;
    the caller adds the steps, the precision and the intervals."""
    return [
        "experiment=smoke",
        "data=local_tsv",
        "data.name=copy",
        "data.corpus.splits={train: train.tsv, dev: dev.tsv, test: test.tsv}",
        f"paths.raw_dir={corpus / 'raw'}",
        f"paths.cache_dir={work / 'cache'}",
        f"paths.tokenizer_dir={work / 'tok'}",
        f"paths.run_dir={run_dir}",
        "data.loading.batch_tokens=600",
        "tokenizer.vocab_size=320",
        "training.device=cpu",
        "training.dev_bleu_sentences=8",
    ]
