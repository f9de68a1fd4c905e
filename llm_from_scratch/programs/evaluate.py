"""`scripts/evaluate.py`: translate a held-out split with a checkpoint and score it.

    python scripts/evaluate.py checkpoint=runs/default/best.pt split=test decoding=greedy
    python scripts/evaluate.py checkpoint=runs/a/averaged.pt ensemble=[runs/b/averaged.pt]

Arguments are Hydra overrides of `configs/evaluate.yaml`. Writes `hypotheses.txt` and
`metrics.json` to `output_dir` (default: `eval-<split>/` beside the checkpoint; for an ensemble,
`eval-<split>-ensemble/`) and prints the scores with their sacreBLEU signatures.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import MISSING

from llm_from_scratch.data.config import SPLITS, DataConfig
from llm_from_scratch.data.corpus import detokenize_ja, is_segmented, load_split
from llm_from_scratch.data.sources import fetch_dataset
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.translator import (
    Translation,
    Translator,
    joiner_for,
    restore_models,
)
from llm_from_scratch.device import resolve_device
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.evaluation.metrics import bleu, corpus_scores
from llm_from_scratch.evaluation.report import (
    REPEAT_NGRAM,
    bleu_by_source_length,
    has_repeated_ngram,
    write_evaluation,
)
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.programs.common import (
    check_output_dir,
    compose_config,
    register_schema,
    run_main,
)
from llm_from_scratch.programs.translate import newest_checkpoint
from llm_from_scratch.schema import to_schema


@dataclass
class EvaluateConfig:
    """`configs/evaluate.yaml`."""

    checkpoint: str | None = None  # None: the newest run's final model
    # More checkpoints that decode together with `checkpoint`, averaging each step's next-token
    # probabilities; they must share its tokenizers.
    ensemble: list[str] = field(default_factory=list)
    split: str = "test"
    paths: PathsConfig = field(default_factory=PathsConfig)
    data: DataConfig | None = None  # None: the dataset the checkpoint was trained on
    decoding: DecodingConfig = MISSING
    device: str = "auto"  # auto: CUDA when available, else CPU
    output_dir: str | None = None  # None: eval-<split>/ beside the checkpoint
    limit: int | None = None  # score only the first `limit` sentences (quick checks)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ConfigError(f"split={self.split!r} must be one of {', '.join(SPLITS)}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit={self.limit} must be at least 1")


register_schema("evaluate_schema", EvaluateConfig)


def main(argv: Sequence[str]) -> int:
    if {"-h", "--help"} & set(argv):
        print(__doc__)
        return 0
    config = load_config(argv)
    runs_dir = Path(config.paths.runs_dir)
    checkpoint = Path(config.checkpoint) if config.checkpoint else newest_checkpoint(runs_dir)
    default_dir = f"eval-{config.split}{'-ensemble' if config.ensemble else ''}"
    output_dir = Path(config.output_dir or checkpoint.parent / default_dir)
    check_output_dir(output_dir, "output_dir")  # before decoding, which takes a while
    model, src_tok, tgt_tok, run = restore_models(
        [checkpoint, *config.ensemble], resolve_device(config.device)
    )
    data = config.data or to_schema(run["data"], DataConfig)
    translator = Translator(
        model, src_tok, tgt_tok, config.decoding, joiner_for(data.corpus.tgt_lang)
    )
    fetch_dataset(data, config.paths)
    pairs = load_split(data, config.split, config.paths)
    if config.limit is not None:
        pairs = pairs.select(range(min(config.limit, len(pairs))))

    sources, references = list(pairs["src"]), list(pairs["tgt"])

    start = time.perf_counter()
    translations = translator.translate(sources)
    seconds = time.perf_counter() - start

    metrics = {
        "checkpoint": str(checkpoint),
        "ensemble": config.ensemble,
        "dataset": data.name,
        "split": config.split,
        "device": str(translator.device),
        "decoding": asdict(config.decoding),
        # Word-level BLEU only where the references keep a corpus's segmentation.
        **score(sources, translations, references, segmented=is_segmented(references)),
        "seconds": seconds,
        "sentences_per_second": len(translations) / seconds if seconds > 0 else None,
    }
    write_evaluation(output_dir, [t.text for t in translations], metrics)
    _print_summary(metrics, output_dir)
    return 0


def load_config(argv: Sequence[str]) -> EvaluateConfig:
    """Compose `configs/evaluate.yaml` with the overrides in `argv`."""
    return compose_config("evaluate", argv, EvaluateConfig)


def score(
    sources: Sequence[str],
    translations: Sequence[Translation],
    references: Sequence[str],
    segmented: bool,
) -> dict[str, Any]:
    """The scores of `metrics.json`.

    `segmented`: the references keep a corpus's word segmentation (small_parallel_enja with
    data.corpus.detokenize_ja=false).
    The main scores are then computed with the segmentation spaces removed from both sides, so
    that they compare with runs on unsegmented text, and BLEU on the corpus's own segmentation
    (tokenize="none") is added.
    """
    hypotheses = [t.text for t in translations]
    plain_hyps = [detokenize_ja(h) for h in hypotheses] if segmented else hypotheses
    plain_refs = [detokenize_ja(r) for r in references] if segmented else list(references)
    metrics: dict[str, Any] = {"sentences": len(hypotheses)}
    metrics.update(corpus_scores(plain_hyps, plain_refs).to_dict())
    if segmented:
        segmented_bleu = bleu(hypotheses, references, tokenize="none")
        metrics["bleu_segmented"] = segmented_bleu.score
        metrics["bleu_segmented_detail"] = str(segmented_bleu)
    metrics["bleu_by_source_length"] = bleu_by_source_length(sources, plain_hyps, plain_refs)
    metrics["hit_max_len"] = sum(t.candidates[0].hit_max_len for t in translations if t.candidates)
    metrics[f"repeated_{REPEAT_NGRAM}gram"] = sum(
        has_repeated_ngram(t.candidates[0].tokens) for t in translations if t.candidates
    )
    return metrics


def _print_summary(metrics: dict[str, Any], output_dir: Path) -> None:
    print(f"{metrics['dataset']} {metrics['split']}: {metrics['sentences']} sentences")
    print(f"BLEU  {metrics['bleu']:.2f}  {metrics['bleu_signature']}")
    print(f"chrF  {metrics['chrf']:.2f}  {metrics['chrf_signature']}")
    print(f"char BLEU  {metrics['char_bleu']:.2f}  {metrics['char_bleu_signature']}")
    if "bleu_segmented" in metrics:
        print(f"BLEU on the corpus segmentation (tokenize=none)  {metrics['bleu_segmented']:.2f}")
    print(
        f"{metrics['sentences_per_second']:.1f} sentences/s; {metrics['hit_max_len']} hit max_len; "
        f"{metrics[f'repeated_{REPEAT_NGRAM}gram']} with a repeated {REPEAT_NGRAM}-gram"
    )
    print(f"wrote {output_dir / 'hypotheses.txt'} and {output_dir / 'metrics.json'}")


def run() -> None:
    """`scripts/evaluate.py`."""
    run_main(main)
