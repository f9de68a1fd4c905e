"""The scores of an evaluation's `metrics.json`: corpus metrics, BLEU by source length, the
length-limit and repeat counts, number fidelity, names rendered and loops, of a split and of each
of its corpora.

Translations are read through two protocols that decoding's `Translation` and `Candidate` meet,
so that this stage needs nothing of the decoding stage above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from llm_from_scratch.evaluation.corpora import rows_by_corpus
from llm_from_scratch.evaluation.fidelity import looping_outputs, number_fidelity
from llm_from_scratch.evaluation.metrics import bleu, corpus_scores
from llm_from_scratch.evaluation.names import name_fidelity
from llm_from_scratch.evaluation.report import (
    REPEAT_NGRAM,
    bleu_by_source_length,
    has_repeated_ngram,
)
from llm_from_scratch.name_dictionary import NameDictionary
from llm_from_scratch.word_segmentation import detokenize_ja, is_segmented


class Candidate(Protocol):
    """One candidate of a translation, as scoring reads it."""

    @property
    def tokens(self) -> Sequence[int]: ...

    @property
    def hit_max_len(self) -> bool: ...


class Output(Protocol):
    """One translation, as scoring reads it: its text and its candidates, best first (none for
    an empty source)."""

    @property
    def text(self) -> str: ...

    @property
    def candidates(self) -> Sequence[Candidate]: ...


def score(
    sources: Sequence[str],
    outputs: Sequence[Output],
    references: Sequence[str],
    languages: tuple[str, str],
    segmented: bool,
    dictionary: NameDictionary | None = None,
) -> dict[str, Any]:
    """The scores of `metrics.json`. `languages`: the sources' and the translations' (BLEU cuts
    words as the target language needs).

    `segmented`: the references keep a corpus's word segmentation (small_parallel_enja with
    data.corpus.detokenize_ja=false).
    The main scores are then computed with the segmentation spaces removed from both sides, so
    that they compare with runs on unsegmented text, and BLEU on the corpus's own segmentation
    (tokenize="none") is added.
    """
    hypotheses = [output.text for output in outputs]
    plain_hyps = [detokenize_ja(h) for h in hypotheses] if segmented else hypotheses
    plain_refs = [detokenize_ja(r) for r in references] if segmented else list(references)
    metrics: dict[str, Any] = {"sentences": len(hypotheses)}
    source_lang, target_lang = languages
    metrics.update(corpus_scores(plain_hyps, plain_refs, target_lang).to_dict())
    if segmented:
        segmented_bleu = bleu(hypotheses, references, tokenize="none")
        metrics["bleu_segmented"] = segmented_bleu.score
        metrics["bleu_segmented_detail"] = str(segmented_bleu)
    metrics["bleu_by_source_length"] = bleu_by_source_length(
        sources, plain_hyps, plain_refs, target_lang
    )
    best = [output.candidates[0] for output in outputs if output.candidates]
    metrics["hit_max_len"] = sum(candidate.hit_max_len for candidate in best)
    metrics[f"repeated_{REPEAT_NGRAM}gram"] = sum(
        has_repeated_ngram(candidate.tokens) for candidate in best
    )
    metrics["number_fidelity"] = number_fidelity(sources, plain_hyps).to_dict()
    names = None
    if dictionary is not None and target_lang == "ja":
        names = name_fidelity(sources, plain_hyps, plain_refs, dictionary).to_dict()
    metrics["name_fidelity"] = names
    # Outputs that stutter or repeat a word 4-gram where their source does not: loops.
    metrics["loops"] = len(looping_outputs(sources, plain_hyps, source_lang, target_lang))
    return metrics


def segmented_ja(references: Sequence[str], languages: tuple[str, str]) -> bool:
    """Whether word-level BLEU is added: only where Japanese references keep a corpus's
    segmentation."""
    return languages[1] == "ja" and is_segmented(references)


def scores_per_corpus(
    sources: Sequence[str],
    outputs: Sequence[Output],
    references: Sequence[str],
    corpora: Sequence[str],
    languages: tuple[str, str],
    dictionary: NameDictionary | None = None,
) -> dict[str, Any]:
    """`{"corpora": {corpus: scores}}` where the split mixes several corpora (else nothing): each
    corpus scored alone, as `score` scores a split, without the signatures the overall scores
    already give."""
    rows = rows_by_corpus(corpora)
    if len(rows) < 2:
        return {}
    by_corpus = {}
    for corpus, positions in rows.items():
        own_refs = [references[i] for i in positions]
        scores = score(
            [sources[i] for i in positions],
            [outputs[i] for i in positions],
            own_refs,
            languages,
            segmented=segmented_ja(own_refs, languages),
            dictionary=dictionary,
        )
        by_corpus[corpus] = {k: v for k, v in scores.items() if not k.endswith("_signature")}
    return {"corpora": by_corpus}
