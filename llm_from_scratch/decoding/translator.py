"""Text in, text out: a text's sentences decoded together, in token-budget batches, and joined.

`Translator.from_run("default")` loads a run's final model once, `Translator.from_export(DIR)` a
CTranslate2 export of one (the other engine: both are `SearchModel`s, and all here but the
search is shared), `Translator.from_pretrained(DIR)` a transformers export of one (read back
into this model); `translate` takes a list of texts, `translate_iter` any iterable, yielding
each translation as soon as its group of lines is done.

The model is trained on single sentences, so each line of a text is split into sentences, and
long sentences into pieces (`segmentation.py`); the pieces of all texts are searched together
and their hypotheses reranked (`reranking.py`); each line's translations are joined again
(without spaces in Japanese), the text's line breaks kept: no sentence is dropped. A piece that
ends a clause gets the comma back that the model's full stop replaced, and each sentence's
translation the numbers of its source that the model changed (`number_repair.py`,
`decoding.repair_numbers`). Characters outside the vocabulary encode as bytes, so any text that
is valid Unicode can be translated.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import islice
from pathlib import Path
from typing import Any

from llm_from_scratch.checkpoint import CheckpointSummary, run_model
from llm_from_scratch.data.names import render_names, restore_names, unknown_words
from llm_from_scratch.data.placeholders import restore_numbers
from llm_from_scratch.data.sources import corpus_files
from llm_from_scratch.decoding.common import Hypothesis, SearchModel
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.conventions import TextConventions
from llm_from_scratch.decoding.lines import BATCH_LINES, split_lines
from llm_from_scratch.decoding.loading import (
    RestoredModels,
    data_settings,
    decoding_settings,
    restore_export,
    restore_models,
    restore_pretrained,
)
from llm_from_scratch.decoding.number_repair import repair_numbers
from llm_from_scratch.decoding.reranking import Reranker, output_text
from llm_from_scratch.decoding.segmentation import (
    SourceSentence,
    ends_clause,
    max_piece_tokens,
    source_sentences,
)
from llm_from_scratch.device import resolve_device
from llm_from_scratch.name_dictionary import KATAKANA, NameDictionary, load_dictionary
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.precision import select_precision


@dataclass
class SentenceTranslation:
    text: str  # its pieces' translations, joined, numbers repaired (decoding.repair_numbers)
    tokens: list[int]  # target ids of its pieces, concatenated (as decoded: before the repair)
    hit_max_len: bool  # some piece stopped at its length limit instead of at EOS


@dataclass
class Candidate:
    text: str  # the sentences' translations, joined line by line, the text's line breaks kept
    score: float  # sum over the input's pieces of each piece's search score
    sentences: list[SentenceTranslation]  # one per source sentence, in order

    @property
    def tokens(self) -> list[int]:
        """Target ids of all sentences, concatenated."""
        return [token for sentence in self.sentences for token in sentence.tokens]

    @property
    def hit_max_len(self) -> bool:
        return any(sentence.hit_max_len for sentence in self.sentences)


@dataclass
class Translation:
    candidates: list[Candidate]  # `nbest` of them, best first; none for an empty input
    sentences: list[SourceSentence] = field(default_factory=list)  # what was translated

    @property
    def text(self) -> str:
        return self.candidates[0].text if self.candidates else ""


class Translator:
    """Translates texts with a model and its tokenizers, loaded once:

    translator = Translator.from_run("default", beam_size=5)
    translator.translate(["Hello.", "How are you?"])[0].text
    """

    def __init__(
        self,
        model: SearchModel,
        decode: DecodingConfig,
        conventions: TextConventions | None = None,
        checkpoints: Sequence[CheckpointSummary] = (),
    ) -> None:
        self.model = model
        self.src_tok, self.tgt_tok = model.src_tok, model.tgt_tok
        self.decode = decode
        self.conventions = conventions or TextConventions()
        if decode.number_digits is not None:
            self.conventions = replace(self.conventions, number_digits=decode.number_digits)
        self.checkpoints = list(checkpoints)  # what was loaded, for the user to be told
        self.device = model.device
        requested = decode.precision if model.autocasts else "fp32"
        self.precision = select_precision(requested, self.device, key="decoding.precision")
        self.max_src_tokens = max_piece_tokens(model.cfg.max_positions, decode)
        self.name_dictionary = self._name_dictionary()
        self.transliterator = self._transliterator()
        # Words transliterated so far; "" where the model's answer was not katakana.
        self._transliterations: dict[str, str] = {}
        self.reranker = Reranker(self._search, self.src_tok, self.tgt_tok, decode, self.conventions)

    @property
    def source_lang(self) -> str:
        return self.conventions.source_lang

    @property
    def target_lang(self) -> str:
        return self.conventions.target_lang

    @classmethod
    def from_checkpoint(
        cls,
        path: str | Path,
        device: str = "auto",
        decode: DecodingConfig | None = None,
        ensemble: Sequence[str | Path] = (),
        **decoding: Any,
    ) -> Translator:
        """Load a checkpoint on `device` (auto: CUDA when available, else CPU).

        `decode` defaults to the run's own decoding settings; `decoding` replaces some of its keys,
        e.g. `beam_size=1` (greedy), `nbest=3`, `length_penalty=1.4`. `ensemble`: more
        checkpoints that decode together with `path`, averaging each step's next-token
        probabilities (see `ensemble.py`).
        """
        restored = restore_models([path, *ensemble], resolve_device(device))
        return cls.from_restored(restored, decoding_settings(restored.config, decode, decoding))

    @classmethod
    def from_restored(
        cls, restored: RestoredModels, decode: DecodingConfig, source_style: str | None = None
    ) -> Translator:
        """A translator of restored models (`loading.py`), set up as their run reads and writes
        text (direction, input style, placeholders); `source_style` replaces the input style,
        e.g. `raw` for sources already in the run's style."""
        conventions = TextConventions.of_data(data_settings(restored.config))
        if source_style is not None:
            conventions = replace(conventions, source_style=source_style)
        return cls(restored.model, decode, conventions, restored.checkpoints)

    @classmethod
    def from_run(
        cls,
        run: str = "default",
        device: str = "auto",
        decode: DecodingConfig | None = None,
        ensemble: Sequence[str | Path] = (),
        runs_dir: str | Path | None = None,
        **decoding: Any,
    ) -> Translator:
        """Load the final model of the run called `run` (`make train` makes `default`): its
        `averaged.pt`, else its `best.pt`. `runs_dir` defaults to the project's `runs/`; the other
        arguments are those of `from_checkpoint`."""
        path = run_model(runs_dir or PathsConfig().runs_dir, run)
        return cls.from_checkpoint(path, device, decode, ensemble, **decoding)

    @classmethod
    def from_export(
        cls,
        directory: str | Path,
        device: str = "auto",
        compute_type: str = "default",
        decode: DecodingConfig | None = None,
        source_style: str | None = None,
        **decoding: Any,
    ) -> Translator:
        """Load a CTranslate2 export (`make export`): the directory alone, no checkpoint.

        `compute_type` is CTranslate2's (default: the type it was exported in, e.g. int8);
        `decode` and `decoding` are those of `from_checkpoint`, `source_style` that of
        `from_restored`."""
        restored = restore_export(directory, device, compute_type)
        decode = decoding_settings(restored.config, decode, decoding)
        return cls.from_restored(restored, decode, source_style)

    @classmethod
    def from_pretrained(
        cls,
        directory: str | Path,
        device: str = "auto",
        decode: DecodingConfig | None = None,
        source_style: str | None = None,
        **decoding: Any,
    ) -> Translator:
        """Load a transformers folder this project exported (`make export ARGS="--format
        transformers"`), as saved again after fine-tuning with transformers too: its weights in
        this project's model, with every extra of this translator. The arguments are those of
        `from_export`."""
        restored = restore_pretrained(directory, resolve_device(device))
        decode = decoding_settings(restored.config, decode, decoding)
        return cls.from_restored(restored, decode, source_style)

    def with_decoding(self, decode: DecodingConfig) -> Translator:
        """This translator's model and settings, searching with `decode`."""
        return Translator(self.model, decode, self.conventions, self.checkpoints)

    def translate(self, texts: Sequence[str]) -> list[Translation]:
        """One translation per text, in order: every sentence of each of its lines translated,
        a line's translations joined, its line breaks kept; an empty (or all-space) text gives
        ""."""
        sources = [self.sentences(text) for text in texts]
        every_sentence = [s for sentences in sources for s in sentences]
        results = iter(self.reranker.nbest([p for s in every_sentence for p in s.pieces]))
        per_sentence = [[next(results) for _ in sentence.pieces] for sentence in every_sentence]
        self.reranker.unsplit_loops(
            every_sentence,
            per_sentence,
            self.max_src_tokens,
            lambda sentence, hyps: self._sentence(sentence, hyps).text,
        )
        self.reranker.split_runaways(every_sentence, per_sentence)
        remaining = iter(per_sentence)
        return [
            Translation(self._combine(text, sentences, remaining), sentences)
            for text, sentences in zip(texts, sources, strict=True)
        ]

    def translate_iter(
        self, texts: Iterable[str], batch_lines: int = BATCH_LINES
    ) -> Iterator[Translation]:
        """The translations of `texts` in order, each yielded once its group of `batch_lines`
        texts is done: a caller can write them out while the rest is being translated, and
        keeps them if interrupted."""
        if batch_lines < 1:
            raise ValueError(f"batch_lines={batch_lines} must be at least 1")
        texts = iter(texts)
        while group := list(islice(texts, batch_lines)):
            yield from self.translate(group)

    def sentences(self, text: str) -> list[SourceSentence]:
        """What `translate` decodes for `text` (`segmentation.source_sentences`)."""
        clause_tokens = self.decode.clause_split_tokens
        return source_sentences(
            text,
            self.src_tok,
            self.conventions,
            clause_tokens,
            self.max_src_tokens,
            self.render_names if self.name_dictionary else None,
        )

    def render_names(self, names: list[str]) -> list[str]:
        """How a Japanese translation writes each of `names` (`data.names.render_names`): as
        the name dictionary renders it, its words the dictionary does not know as the
        transliteration model (`decoding.transliteration`) writes them where that is katakana
        (`Kudlow`: クドロー); else as written."""
        assert self.name_dictionary is not None
        if self.transliterator is not None:
            unknown = unknown_words(names, self.name_dictionary)
            if new := sorted(set(unknown) - self._transliterations.keys()):
                for word, found in zip(new, self.transliterator.translate(new), strict=True):
                    written = found.text.strip()
                    self._transliterations[word] = written if KATAKANA.fullmatch(written) else ""
        return render_names(names, self.name_dictionary, self._transliterations)

    def _name_dictionary(self) -> NameDictionary | None:
        """The dictionary that renders the masked names of a Japanese translation
        (`decoding.render_names`), its spellings picked by `decoding.name_usage`'s text where
        that is at hand (`name_usage_files`); None where there are none to render, or it is not
        installed."""
        conventions = self.conventions
        if not (self.decode.render_names and conventions.name_placeholders):
            return None
        if conventions.target_lang != "ja":
            return None
        return load_dictionary(usage=self.name_usage_files)

    def _transliterator(self) -> Translator | None:
        """The translator of `decoding.transliteration`'s run, on this one's device; None
        without it or without names to render."""
        run = self.decode.transliteration
        if run is None or self.name_dictionary is None:
            return None
        return _transliteration_model(run, str(self.device))

    @property
    def name_usage_files(self) -> list[Path]:
        """The Japanese text files of `decoding.name_usage` (`data.sources.corpus_files`)."""
        corpus = self.decode.name_usage
        return corpus_files(corpus, PathsConfig(), "*.ja*") if corpus else []

    def _search(self, pieces: list[list[int]], decode: DecodingConfig) -> list[list[Hypothesis]]:
        with self.precision.autocast():
            return self.model.decode_pieces(pieces, decode)

    def _combine(
        self,
        text: str,
        sentences: list[SourceSentence],
        results: Iterator[list[list[Hypothesis]]],
    ) -> list[Candidate]:
        """The i-th candidate of `text` joins the i-th hypotheses of its sentences' pieces, each
        sentence's taken from `results` in order."""
        per_sentence = [next(results) for _ in sentences]
        ranks = min((len(nbest) for nbests in per_sentence for nbest in nbests), default=0)
        candidates = []
        for rank in range(ranks):
            hyps = [[nbest[rank] for nbest in nbests] for nbests in per_sentence]
            translated = [
                self._sentence(source, sentence_hyps)
                for source, sentence_hyps in zip(sentences, hyps, strict=True)
            ]
            lines: list[list[str]] = [[] for _ in split_lines(text)]
            for source, translation in zip(sentences, translated, strict=True):
                lines[source.line].append(translation.text)
            candidates.append(
                Candidate(
                    text="\n".join(self.conventions.joiner.join(line) for line in lines),
                    score=sum(h.score for sentence_hyps in hyps for h in sentence_hyps),
                    sentences=translated,
                )
            )
        return candidates

    def _sentence(self, source: SourceSentence, hyps: list[Hypothesis]) -> SentenceTranslation:
        """A sentence's translation from the hypotheses of its pieces, its numbers repaired
        (`decoding.repair_numbers`)."""
        texts = [output_text(self.tgt_tok, h) for h in hyps]
        stop, comma = self.conventions.stop_and_comma
        for i in range(len(source.pieces) - 1):
            # The model ends each piece as a sentence; the sentence goes on in the next, whether
            # the piece was cut after a comma or (too long, or run away) between words.
            ended = texts[i].rstrip()
            if stop and ended.endswith(stop):
                clause = ended.removesuffix(stop)
                texts[i] = clause if ends_clause(clause) else clause + comma
        text = self.conventions.joiner.join(texts)
        if self.conventions.number_placeholders:
            text = restore_numbers(
                text, source.numbers, self.target_lang, self.conventions.number_digits
            )
        if self.conventions.name_placeholders:
            text = restore_names(text, source.renderings)
        return SentenceTranslation(
            text=repair_numbers(source.text, text) if self.decode.repair_numbers else text,
            tokens=[token for h in hyps for token in h.tokens],
            hit_max_len=any(h.hit_max_len for h in hyps),
        )


@cache
def _transliteration_model(run: str, device: str) -> Translator:
    """The translator of the transliteration run `run`, loaded once a process: a translator
    `with_decoding` makes (a server's, for each beam asked) shares it."""
    return Translator.from_run(run, device=device)
