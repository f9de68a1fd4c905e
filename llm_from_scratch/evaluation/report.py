"""The contents of an evaluation's `metrics.json`, writing it with the hypotheses, and the
summary of it a user reads."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.evaluation.fidelity import (
    LOOP_NGRAM,
    LOOP_TIMES,
    STUTTER_TIMES,
    STUTTER_UNIT_WORDS,
    has_loop,
)
from llm_from_scratch.evaluation.metrics import bleu, bleu_tokenizer

# Upper bounds (inclusive) of the source-length buckets, in whitespace-separated source words:
# a measure that does not depend on the tokenizer, so runs with different vocabularies compare.
LENGTH_BUCKETS = (5, 10, 15, 20, 30)
REPEAT_NGRAM = 4


def length_bucket(words: int) -> str:
    lower = 1
    for upper in LENGTH_BUCKETS:
        if words <= upper:
            return f"{lower}-{upper}"
        lower = upper + 1
    return f"{lower}+"


def bleu_by_source_length(
    sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[str], language: str
) -> dict[str, dict[str, float | int]]:
    """BLEU (words as the target `language` needs) of each source-length bucket that has
    sentences, shortest first."""
    tokenize = bleu_tokenizer(language)
    buckets: dict[str, list[int]] = {}
    for index, source in enumerate(sources):
        buckets.setdefault(length_bucket(len(source.split())), []).append(index)
    ordered = sorted(buckets.items(), key=lambda item: int(item[0].split("-")[0].rstrip("+")))
    return {
        label: {
            "sentences": len(indices),
            "bleu": bleu(
                [hypotheses[i] for i in indices], [references[i] for i in indices], tokenize
            ).score,
        }
        for label, indices in ordered
    }


def has_repeated_ngram(tokens: Sequence[int], n: int = REPEAT_NGRAM) -> bool:
    """Whether some n-gram occurs twice: the signature of a decoder stuck in a loop."""
    return has_loop(tokens, n, times=2)


def write_evaluation(output_dir: Path, hypotheses: Sequence[str], metrics: dict[str, Any]) -> None:
    """`hypotheses.txt` (one line per source) and `metrics.json`, each written atomically. A
    folder made here goes again when they cannot both be written (a full disk): no evaluation
    folder without its scores is left behind."""
    made = not output_dir.exists()
    try:
        with atomic_writer(output_dir / "hypotheses.txt") as file:
            file.write("".join(f"{line}\n" for line in hypotheses).encode("utf-8"))
        with atomic_writer(output_dir / "metrics.json") as file:
            file.write(json.dumps(metrics, ensure_ascii=False, indent=2).encode("utf-8") + b"\n")
    except BaseException:
        if made:
            shutil.rmtree(output_dir, ignore_errors=True)
        raise


def summary(metrics: dict[str, Any]) -> str:
    """The scores of `metrics` in lines a user reads, the sacreBLEU signatures included, with one
    line per corpus of a split of several."""
    lines = [
        f"{metrics['dataset']} {metrics['split']} ({metrics['direction']}): "
        f"{metrics['sentences']} sentences",
        f"BLEU  {metrics['bleu']:.2f}  {metrics['bleu_signature']}",
        f"chrF  {metrics['chrf']:.2f}  {metrics['chrf_signature']}",
        f"char BLEU  {metrics['char_bleu']:.2f}  {metrics['char_bleu_signature']}",
    ]
    if "bleu_segmented" in metrics:
        lines.append(
            f"BLEU on the corpus segmentation (tokenize=none)  {metrics['bleu_segmented']:.2f}"
        )
    lines += [
        f"{metrics['sentences_per_second']:.1f} sentences/s; {metrics['hit_max_len']} hit max_len; "
        f"{metrics[f'repeated_{REPEAT_NGRAM}gram']} with a repeated {REPEAT_NGRAM}-gram",
        f"numbers kept: {_numbers_kept(metrics)}; {metrics['loops']} outputs loop where the "
        f"source does not (1 to {STUTTER_UNIT_WORDS} words {STUTTER_TIMES} times in a row, or a "
        f"{LOOP_NGRAM}-gram {LOOP_TIMES} times)",
    ]
    if metrics.get("name_fidelity") is not None:
        lines.append(f"names rendered as the reference does: {_names_rendered(metrics)}")
    for corpus, scores in metrics.get("corpora", {}).items():
        names = scores.get("name_fidelity")
        lines.append(
            f"  {corpus}: {scores['sentences']} sentences, BLEU {scores['bleu']:.2f}, "
            f"chrF {scores['chrf']:.2f}, numbers kept {_numbers_kept(scores)}"
            + (f", names rendered {_names_rendered(scores)}" if names is not None else "")
        )
    return "\n".join(lines)


def _numbers_kept(metrics: dict[str, Any]) -> str:
    fidelity = metrics["number_fidelity"]
    if fidelity["share"] is None:
        return "no numbers in the sources"
    return f"{100 * fidelity['share']:.1f}% ({fidelity['kept']} of {fidelity['source_numbers']})"


def _names_rendered(metrics: dict[str, Any]) -> str:
    names = metrics["name_fidelity"]
    if names["share"] is None:
        return "no source name the dictionary knows is in the references"
    return f"{100 * names['share']:.1f}% ({names['rendered']} of {names['names']})"
