"""Evaluation: sacreBLEU metrics for Japanese (`metrics.py`) and the evaluation report
(`report.py`); `evaluate_cli.py` is `scripts/evaluate.py`."""

from llm_from_scratch.evaluation.metrics import (
    CorpusScores,
    MetricError,
    bleu,
    corpus_scores,
    japanese_bleu,
)

__all__ = ["CorpusScores", "MetricError", "bleu", "corpus_scores", "japanese_bleu"]
