"""Corpus metrics of translations, all computed by sacreBLEU, with BLEU's words cut as the target
language needs (`bleu_tokenizer`: the one choice that validation, evaluation and the benchmarks
share).

Japanese has no spaces, so BLEU's default `13a` tokenizer would see each sentence as one or two
"words": BLEU of Japanese is `tokenize="ja-mecab"` (MeCab with the IPA dictionary), the setting
WMT uses for Japanese. If MeCab or its dictionary is missing, scoring fails: a 13a figure would
look like a BLEU score and mean nothing. English, written with spaces, gets sacreBLEU's default
`13a`. chrF and character-level BLEU need no segmenter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.bleu import BLEUScore

from llm_from_scratch.errors import UserError

# sacreBLEU's word tokenizer of each language not written with spaces between its words.
_BLEU_TOKENIZERS = {"ja": "ja-mecab"}


class MetricError(UserError):
    """A metric cannot be computed as specified (e.g. MeCab is not installed)."""


@dataclass
class CorpusScores:
    bleu: float  # tokenize=bleu_tokenizer(target language): ja-mecab, 13a
    bleu_signature: str
    bleu_detail: str  # n-gram precisions, brevity penalty, lengths
    chrf: float
    chrf_signature: str
    char_bleu: float  # tokenize="char"
    char_bleu_signature: str

    def to_dict(self) -> dict[str, float | str]:
        return asdict(self)


def bleu_tokenizer(language: str) -> str:
    """sacreBLEU's word tokenizer for text in `language`: ja-mecab for Japanese, else 13a."""
    return _BLEU_TOKENIZERS.get(language, "13a")


def word_bleu(language: str) -> BLEU:
    """sacreBLEU's BLEU of text in `language`; raises `MetricError` if MeCab is unavailable."""
    return _bleu_metric(bleu_tokenizer(language))


def _bleu_metric(tokenize: str) -> BLEU:
    try:
        return BLEU(tokenize=tokenize)
    except (RuntimeError, AssertionError, ImportError) as error:
        # sacreBLEU raises RuntimeError without MeCab and asserts on a non-IPA dictionary.
        detail = " ".join(str(error).split()) or type(error).__name__
        raise MetricError(
            f"BLEU needs MeCab with the IPA dictionary (pip install 'sacrebleu[ja]'): {detail}"
        ) from None


def bleu(hypotheses: Sequence[str], references: Sequence[str], tokenize: str) -> BLEUScore:
    """sacreBLEU's `BLEUScore` of a corpus (one reference per sentence), its words cut by
    sacreBLEU's `tokenize`: `bleu_tokenizer(language)`, or "none" for a corpus's own spaces."""
    return _bleu_metric(tokenize).corpus_score(list(hypotheses), [list(references)])


def corpus_scores(
    hypotheses: Sequence[str], references: Sequence[str], language: str
) -> CorpusScores:
    """BLEU (its words as `language` needs), chrF and character BLEU of `hypotheses`, written
    in `language`, against `references`."""
    if len(hypotheses) != len(references):
        raise MetricError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    hyps, refs = list(hypotheses), [list(references)]
    words, chrf, char_bleu = word_bleu(language), CHRF(), BLEU(tokenize="char")
    word = words.corpus_score(hyps, refs)
    return CorpusScores(
        bleu=word.score,
        bleu_signature=str(words.get_signature()),
        bleu_detail=str(word),
        chrf=chrf.corpus_score(hyps, refs).score,
        chrf_signature=str(chrf.get_signature()),
        char_bleu=char_bleu.corpus_score(hyps, refs).score,
        char_bleu_signature=str(char_bleu.get_signature()),
    )
