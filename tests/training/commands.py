"""The command line of `scripts/train.py` on the copy task (see conftest.py's `copy_corpus`)."""

from __future__ import annotations

from pathlib import Path


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
