"""What the API serves, apart from HTTP: translations with their n-best candidates, the sentences
each text was split into with their translations and, on request, their cross-attention, from one
loaded `Translator` (either engine), and the facts about its model."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, replace

from llm_from_scratch.data.names import restore_names
from llm_from_scratch.data.placeholders import restore_numbers
from llm_from_scratch.decoding.lines import NOTHING_TO_TRANSLATE, has_text, in_written_language
from llm_from_scratch.decoding.segmentation import SourceSentence
from llm_from_scratch.decoding.translator import SentenceTranslation, Translation, Translator
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.training.attention_figure import piece_label

WEIGHT_DECIMALS = 3  # attention weights in JSON: enough for a heatmap, a third of the size


@dataclass(frozen=True)
class Search:
    """What texts must share to be decoded in one batch."""

    beam: int
    nbest: int
    attention: bool


@dataclass
class ScoredText:
    text: str
    score: float  # the search's score: log-probability, length-normalized when the run says so


@dataclass
class Alignment:
    """Cross-attention of the best translation, heads averaged: `weights[k][i][j]` is how much
    target piece i attends to source piece j in decoder layer `layers[k]`."""

    layers: list[int]  # decoder layers, from 1; CTranslate2 returns only the last one's
    source: list[str]  # source pieces (EOS included), a word start shown as ▁
    target: list[str]  # target pieces, the EOS the search ended with included
    weights: list[list[list[float]]]  # (layers, target, source)


@dataclass
class ServedSentence:
    source: str  # a sentence of the text, as the translator split it
    text: str  # its translation in the best candidate
    attention: Alignment | None = None  # when asked for, and it was decoded in one piece


@dataclass
class ServedTranslation:
    text: str  # the best candidate's: its sentences' translations joined, line breaks kept
    score: float | None  # the best candidate's; None for an empty text
    candidates: list[ScoredText]  # nbest of them, best first
    sentences: list[ServedSentence]  # in order; none for an empty text
    # What the text's translation may surprise with, as translate.py warns of it: a text with
    # nothing to translate, or one mostly in the language the model writes. None: nothing.
    warning: str | None = None


@dataclass
class ModelInfo:
    run: str | None  # None when served from --checkpoint
    # The checkpoint's file name (an export: its folder's), never where it lies on the server.
    checkpoint: str
    step: int | None
    dev_bleu: float | None  # greedy BLEU on the dev sentences validation scores
    averaged_from: int  # snapshots averaged into it; 0 for a single checkpoint
    ensemble: int  # checkpoints decoding together
    beam: int  # a request's default beam size
    engine: str  # torch, or ctranslate2 (an export; `checkpoint` is its directory)
    direction: str  # "<source>-<target>", the run's data.direction: "en-ja", "ja-en"


def release_memory() -> None:
    """Give the memory a decoding freed back to the system. glibc keeps freed heap for the
    process (a long text's beams would hold the server's size up for good); `malloc_trim`
    returns it. Elsewhere (another C library) nothing is done."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018  (a C library without it: not glibc)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


class Abandoned(Exception):
    """Every request of the batch being decoded went away: the decoding stopped."""


class TranslationService:
    def __init__(self, translator: Translator, run: str | None) -> None:
        self.translator = translator
        first = translator.checkpoints[0] if translator.checkpoints else None
        self.info = ModelInfo(
            run=run,
            checkpoint=first.path.name if first else "",
            step=first.step if first else None,
            dev_bleu=first.dev_bleu if first else None,
            averaged_from=first.averaged_from if first else 0,
            ensemble=len(translator.checkpoints),
            beam=translator.decode.beam_size,
            engine=translator.model.name,
            direction=f"{translator.source_lang}-{translator.target_lang}",
        )
        self._translators = {(translator.decode.beam_size, translator.decode.nbest): translator}
        # Checked between decoding steps: a batch whose requests all went away stops there
        # instead of decoding to its end. An engine that decodes a batch in one call
        # (CTranslate2) has its batches only dropped before they start (the batcher).
        self._stop: threading.Event | None = None
        translator.model.call_between_steps(self._stop_if_abandoned)

    def source_tokens(self, texts: list[str]) -> list[int]:
        """About the source tokens each of `texts` decodes (EOS included): what bounds its
        decoding's cost (`serving.max_tokens`), and counts against a batch's budget."""
        return [len(self.translator.src_tok.encode(text)) + 1 for text in texts]

    def translate(
        self, search: Search, texts: list[str], stop: threading.Event | None = None
    ) -> list[ServedTranslation]:
        """The translations of `texts`; `Abandoned` as soon as `stop` is set."""
        self._stop = stop
        try:
            return self._translate(search, texts)
        finally:
            self._stop = None
            release_memory()

    def _stop_if_abandoned(self) -> None:
        if self._stop is not None and self._stop.is_set():
            raise Abandoned

    def _translate(self, search: Search, texts: list[str]) -> list[ServedTranslation]:
        translations = self._translator(search.beam, search.nbest).translate(texts)
        return [
            self._served(translation, search.attention, self.warning(text))
            for text, translation in zip(texts, translations, strict=True)
        ]

    def warning(self, text: str) -> str | None:
        """What the translation of `text` comes with (`ServedTranslation.warning`)."""
        if not has_text(text):
            return f"the text has {NOTHING_TO_TRANSLATE}"
        source, target = self.translator.source_lang, self.translator.target_lang
        note = in_written_language(text, source, target)
        return None if note is None else f"the text is {note}: translated anyway"

    def _served(
        self, translation: Translation, attention: bool, warning: str | None
    ) -> ServedTranslation:
        best = translation.candidates[0] if translation.candidates else None
        sentences = [
            ServedSentence(
                source.text,
                translated.text,
                self._alignment(source, translated) if attention else None,
            )
            for source, translated in zip(
                translation.sentences, best.sentences if best else [], strict=True
            )
        ]
        return ServedTranslation(
            text=translation.text,
            score=best.score if best else None,
            candidates=[ScoredText(c.text, c.score) for c in translation.candidates],
            sentences=sentences,
            warning=warning,
        )

    def _translator(self, beam: int, nbest: int) -> Translator:
        """The translator for a beam and n-best: the loaded one's model and settings otherwise."""
        if (beam, nbest) not in self._translators:
            base = self.translator
            self._translators[beam, nbest] = base.with_decoding(
                replace(base.decode, beam_size=beam, nbest=nbest)
            )
        return self._translators[beam, nbest]

    def _alignment(self, source: SourceSentence, best: SentenceTranslation) -> Alignment | None:
        """None for an ensemble (no one model's attention) and for a sentence too long to decode
        in one piece (its pieces were decoded apart)."""
        src_tok, tgt_tok = self.translator.src_tok, self.translator.tgt_tok
        if len(source.pieces) != 1:
            return None
        src_ids = [*source.pieces[0], src_tok.eos_id]
        tgt_out = best.tokens if best.hit_max_len else [*best.tokens, tgt_tok.eos_id]
        attention = self.translator.model.attention(src_ids, tgt_out)
        if attention is None:
            return None

        def labels(tok: BPETokenizer, tokens: list[int], language: str) -> list[str]:
            """Each token's text; a placeholder's as the number or name it stands for."""
            texts = [tok.token_text(token) for token in tokens]
            conventions = self.translator.conventions
            if conventions.number_placeholders:
                digits = conventions.number_digits
                texts = [restore_numbers(text, source.numbers, language, digits) for text in texts]
            if conventions.name_placeholders:
                texts = [restore_names(text, source.names) for text in texts]
            return [piece_label(text) for text in texts]

        return Alignment(
            layers=attention.layers,
            source=labels(src_tok, src_ids, self.translator.source_lang),
            target=labels(tgt_tok, tgt_out, self.translator.target_lang),
            weights=attention.weights.double().cpu().round(decimals=WEIGHT_DECIMALS).tolist(),
        )
