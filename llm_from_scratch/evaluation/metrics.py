"""Corpus metrics for Japanese output, all computed by sacreBLEU.

Japanese has no spaces, so BLEU's default `13a` tokenizer would see each sentence as one or two
"words": BLEU here is `tokenize="ja-mecab"` (MeCab with the IPA dictionary), the setting WMT uses
for Japanese. If MeCab or its dictionary is missing, scoring fails: a 13a figure would look like a
BLEU score and mean nothing. chrF and character-level BLEU need no segmenter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.bleu import BLEUScore

from llm_from_scratch.errors import UserError


class MetricError(UserError):
    """A metric cannot be computed as specified (e.g. MeCab is not installed)."""


@dataclass
class CorpusScores:
    bleu: float  # tokenize="ja-mecab"
    bleu_signature: str
    bleu_detail: str  # n-gram precisions, brevity penalty, lengths
    chrf: float
    chrf_signature: str
    char_bleu: float  # tokenize="char"
    char_bleu_signature: str

    def to_dict(self) -> dict[str, float | str]:
        return asdict(self)


def japanese_bleu() -> BLEU:
    """sacreBLEU's BLEU with MeCab segmentation; raises `MetricError` if MeCab is unavailable."""
    try:
        return BLEU(tokenize="ja-mecab")
    except (RuntimeError, AssertionError, ImportError) as error:
        # sacreBLEU raises RuntimeError without MeCab and asserts on a non-IPA dictionary.
        detail = " ".join(str(error).split()) or type(error).__name__
        raise MetricError(
            f"BLEU needs MeCab with the IPA dictionary (pip install 'sacrebleu[ja]'): {detail}"
        ) from None


def bleu(
    hypotheses: Sequence[str], references: Sequence[str], tokenize: str = "ja-mecab"
) -> BLEUScore:
    """sacreBLEU's `BLEUScore` of a corpus (one reference per sentence)."""
    metric = japanese_bleu() if tokenize == "ja-mecab" else BLEU(tokenize=tokenize)
    return metric.corpus_score(list(hypotheses), [list(references)])


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> CorpusScores:
    """BLEU (ja-mecab), chrF and character BLEU of `hypotheses` against `references`."""
    if len(hypotheses) != len(references):
        raise MetricError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    hyps, refs = list(hypotheses), [list(references)]
    word_bleu, chrf, char_bleu = japanese_bleu(), CHRF(), BLEU(tokenize="char")
    word = word_bleu.corpus_score(hyps, refs)
    return CorpusScores(
        bleu=word.score,
        bleu_signature=str(word_bleu.get_signature()),
        bleu_detail=str(word),
        chrf=chrf.corpus_score(hyps, refs).score,
        chrf_signature=str(chrf.get_signature()),
        char_bleu=char_bleu.corpus_score(hyps, refs).score,
        char_bleu_signature=str(char_bleu.get_signature()),
    )
