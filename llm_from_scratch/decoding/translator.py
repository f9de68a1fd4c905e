"""Text in, text out: cleaning, sentence splitting, token-budget batching, search.

`Translator.from_run("default")` loads a run's final model once, `Translator.from_export(DIR)` a
CTranslate2 export of one (the other engine; everything here but the search is shared),
`Translator.from_pretrained(DIR)` a transformers export of one (read back into this model);
`translate` takes a list of texts, `translate_iter` any iterable, yielding each translation as
soon as its group of lines is done.

The model is trained on single sentences, so each line of a text is split into sentences
(`data/sentences.py`); the sentences of all texts are decoded together, in token-budget batches,
and each line's translations are joined again (without spaces in Japanese), the text's line
breaks kept: no sentence is dropped. Each sentence's translation gets back the numbers of its
source that the model changed (`number_repair.py`, `decoding.repair_numbers`), whichever engine
decoded it, and of a beam's hypotheses the best that keeps its source's numbers comes first
(`decoding.numbers_first`), the best that does not loop before any that does
(`decoding.avoid_loops`). A sentence longer than `decoding.clause_split_tokens` is translated
clause by clause, the full stop the model ends a clause with turned into a comma (in one piece
again where the clauses loop joined, with `decoding.avoid_loops`); one the model
cannot take in one piece (longer than its positional table, or than the output limit
a * src_len + b allows) is split further, at clauses, then words, then characters, translated
piece by piece and rejoined: never cut.
Characters outside the vocabulary encode as bytes, so any text that is valid Unicode can be
translated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import torch

from llm_from_scratch.checkpoint import (
    CheckpointError,
    CheckpointSummary,
    load_checkpoint,
    restore_for_inference,
    run_model,
)
from llm_from_scratch.data.config import CorpusConfig, DataConfig
from llm_from_scratch.data.names import mask_unseen_names, restore_names
from llm_from_scratch.data.placeholders import (
    has_placeholders,
    keeps_placeholders,
    mask_numbers,
    restore_numbers,
)
from llm_from_scratch.data.sentences import split_sentences
from llm_from_scratch.data.source_style import prepare_source
from llm_from_scratch.decoding.batched import decode_pieces
from llm_from_scratch.decoding.common import Hypothesis
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.ctranslate2_engine import CTranslate2Model
from llm_from_scratch.decoding.ensemble import Ensemble
from llm_from_scratch.decoding.lines import BATCH_LINES, clean, one_line, split_lines
from llm_from_scratch.decoding.number_repair import keeps_numbers, repair_numbers
from llm_from_scratch.device import resolve_device
from llm_from_scratch.evaluation.fidelity import loops
from llm_from_scratch.export.transformers_model import pretrained_state
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.numbers import find_numbers
from llm_from_scratch.paths import PathsConfig
from llm_from_scratch.precision import select_precision
from llm_from_scratch.schema import to_schema, with_overrides
from llm_from_scratch.tokenizer.bpe import BPETokenizer

# Split points of a sentence too long for the model, coarsest first: after a clause's comma,
# semicolon or colon, then between words.
_CLAUSE_MARKS = ",;:、；："
_SPACELESS_CLAUSE_MARKS = "、；："  # end a clause with no space after them
_CLAUSE_SPLIT = re.compile(rf"(?<=[{_CLAUSE_MARKS}])(?=\s)|(?<=[{_SPACELESS_CLAUSE_MARKS}])(?=\S)")
_WORD_SPLIT = re.compile(r"(?<=\s)(?=\S)")
_CLAUSE_END = re.compile(rf"[{_CLAUSE_MARKS}]\s*$")
# A language's full stop, and the comma that replaces it where a piece of a sentence ends.
_STOP_AND_COMMA = {"ja": ("。", "、"), "en": (".", ",")}
_LANGUAGES_WITHOUT_SPACES = ("ja", "zh", "th")
# `decoding.avoid_loops`: the no-repeat n-gram sizes of the searches of a piece whose every
# hypothesis loops, in order: repeated token pairs banned, then any repeated token (a word that
# is one token, わけではない, repeats without repeating a pair).
TIGHTER_NO_REPEATS = (2, 1)


@dataclass
class SourceSentence:
    text: str  # as split from its line, cleaned, before the corpus's source style
    line: int  # the line of the text it is on, from 0
    pieces: list[list[int]]  # its source ids, in pieces the model can take (usually one)
    numbers: list[str] = field(default_factory=list)  # masked by placeholders, in order
    names: list[str] = field(default_factory=list)  # likewise


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


def joiner_for(language: str) -> str:
    """What joins the translations of the sentences (and pieces) of a line in `language`."""
    return "" if language in _LANGUAGES_WITHOUT_SPACES else " "


def run_data(config: dict[str, Any]) -> DataConfig:
    """What a run's config (plain data, as a checkpoint or an export holds it) says of its
    direction (`source_lang`, `target_lang`) and of the style its input is put in: a data config
    of its corpus and direction alone, since its other settings (sources, batching) were checked
    by the rules of the version that trained it."""
    data = config["data"]
    return DataConfig(
        name=data["name"],
        source="local",
        direction=data.get("direction"),
        corpus=to_schema(data["corpus"], CorpusConfig),
        number_placeholders=data.get("number_placeholders", False),
        name_placeholders=data.get("name_placeholders", False),
    )


def run_decoding(
    config: dict[str, Any], decode: DecodingConfig | None, overrides: dict[str, Any]
) -> DecodingConfig:
    """`decode`, else the decoding settings of a run's config (as `run_data` reads it), with the
    keys of `overrides` replaced."""
    decode = decode or to_schema(config["decoding"], DecodingConfig)
    return with_overrides(decode, overrides, "decoding") if overrides else decode


class RestoredModels(NamedTuple):
    # one checkpoint's model, the ensemble of several, or a CTranslate2 export's engine
    model: Seq2SeqTransformer | Ensemble | CTranslate2Model
    src_tok: BPETokenizer
    tgt_tok: BPETokenizer
    config: dict[str, Any]  # the first checkpoint's run config, as plain data
    checkpoints: list[CheckpointSummary]  # what each checkpoint holds, in order


def restore_models(paths: Sequence[str | Path], device: torch.device) -> RestoredModels:
    """The model of one checkpoint, or the `Ensemble` of several, with the first one's tokenizers
    and run config; every checkpoint must have the same tokenizers and source style."""
    restored, summaries = [], []
    for path in paths:
        state = load_checkpoint(path)
        summaries.append(CheckpointSummary.of(state, path))
        restored.append(restore_for_inference(state, device, origin=str(path)))
    model, src_tok, tgt_tok, config = restored[0]
    for path, (_, other_src, other_tgt, other_config) in zip(paths[1:], restored[1:], strict=True):
        if (other_src.hash, other_tgt.hash) != (src_tok.hash, tgt_tok.hash):
            raise CheckpointError(
                f"{path} cannot decode in an ensemble with {paths[0]}: their tokenizers differ "
                "(ensemble members must be trained with the same tokenizer files)"
            )
        data, other = run_data(config), run_data(other_config)
        for what, mine, theirs in (
            ("direction", _direction(data), _direction(other)),
            ("source style", data.input_style, other.input_style),
        ):
            if theirs != mine:
                raise CheckpointError(
                    f"{path} cannot decode in an ensemble with {paths[0]}: {what} "
                    f"{theirs!r} != {mine!r}"
                )
    if len(restored) > 1:
        model = Ensemble([member for member, *_ in restored])
    return RestoredModels(model, src_tok, tgt_tok, config, summaries)


class Translator:
    """Translates texts with a model and its tokenizers, loaded once:

    translator = Translator.from_run("default", beam_size=5)
    translator.translate(["Hello.", "How are you?"])[0].text
    """

    def __init__(
        self,
        model: Seq2SeqTransformer | Ensemble | CTranslate2Model,
        src_tok: BPETokenizer,
        tgt_tok: BPETokenizer,
        decode: DecodingConfig,
        joiner: str = "",
        use_cache: bool = True,
        source_style: str = "raw",
        checkpoints: Sequence[CheckpointSummary] = (),
        source_lang: str = "en",
        target_lang: str = "ja",
        number_placeholders: bool = False,
        name_placeholders: bool = False,
    ) -> None:
        self.model = model.eval() if isinstance(model, torch.nn.Module) else model
        self.src_tok = src_tok
        self.tgt_tok = tgt_tok
        self.decode = decode
        self.joiner = joiner  # between the translations of a line's sentences and pieces
        self.use_cache = use_cache
        self.source_style = source_style  # the style of the model's input (data.input_style)
        self.source_lang, self.target_lang = source_lang, target_lang  # the run's data.direction
        self.number_placeholders = number_placeholders  # the run's data.number_placeholders
        self.name_placeholders = name_placeholders  # the run's data.name_placeholders
        if isinstance(model, CTranslate2Model):
            # The engine's compute type (e.g. int8) was set when it loaded; autocast is torch's.
            self.device = torch.device(model.device)
            self.precision = select_precision("fp32", self.device, key="decoding.precision")
        else:
            self.device = next(model.parameters()).device
            self.precision = select_precision(
                decode.precision, self.device, key="decoding.precision"
            )
        self.checkpoints = list(checkpoints)  # what was loaded, for the user to be told
        # Longest source piece (EOS excluded) whose output limit a * (n + 1) + b still fits the
        # positional table, so the limit never silently truncates a translation.
        positions = model.cfg.max_positions
        fitting = (
            positions
            if decode.max_len_a == 0
            else (positions - decode.max_len_b) / decode.max_len_a
        )
        self.max_src_tokens = max(1, int(min(positions, fitting)) - 1)

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
        return cls.from_restored(restored, run_decoding(restored.config, decode, decoding))

    @classmethod
    def from_restored(
        cls, restored: RestoredModels, decode: DecodingConfig, source_style: str | None = None
    ) -> Translator:
        """A translator of the models `restore_models` loaded (or of an export's engine), set up
        as their run reads and writes text (direction, input style, number placeholders);
        `source_style` replaces the input style, e.g. `raw` for sources already in the run's
        style."""
        data = run_data(restored.config)
        return cls(
            restored.model,
            restored.src_tok,
            restored.tgt_tok,
            decode,
            joiner_for(data.target_lang),
            source_style=data.input_style if source_style is None else source_style,
            number_placeholders=data.number_placeholders,
            name_placeholders=data.name_placeholders,
            checkpoints=restored.checkpoints,
            source_lang=data.source_lang,
            target_lang=data.target_lang,
        )

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
        model = CTranslate2Model(directory, device=device, compute_type=compute_type)
        manifest = model.manifest
        loaded = CheckpointSummary(
            Path(directory), manifest["step"], manifest["dev_bleu"], manifest["averaged_from"]
        )
        decode = run_decoding(model.config, decode, decoding)
        restored = RestoredModels(model, model.src_tok, model.tgt_tok, model.config, [loaded])
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
        state = pretrained_state(directory)
        model, src_tok, tgt_tok, config = restore_for_inference(
            state, resolve_device(device), origin=str(directory)
        )
        loaded = CheckpointSummary.of(state, directory)
        restored = RestoredModels(model, src_tok, tgt_tok, config, [loaded])
        return cls.from_restored(restored, run_decoding(config, decode, decoding), source_style)

    def with_decoding(self, decode: DecodingConfig) -> Translator:
        """This translator's model and settings, searching with `decode`."""
        return Translator(
            self.model,
            self.src_tok,
            self.tgt_tok,
            decode,
            self.joiner,
            use_cache=self.use_cache,
            source_style=self.source_style,
            checkpoints=self.checkpoints,
            source_lang=self.source_lang,
            target_lang=self.target_lang,
            number_placeholders=self.number_placeholders,
            name_placeholders=self.name_placeholders,
        )

    def translate(self, texts: Sequence[str]) -> list[Translation]:
        """One translation per text, in order: every sentence of each of its lines translated,
        a line's translations joined, its line breaks kept; an empty (or all-space) text gives
        ""."""
        sources = [self.sentences(text) for text in texts]
        every_sentence = [s for sentences in sources for s in sentences]
        results = iter(self._decode_pieces([p for s in every_sentence for p in s.pieces]))
        per_sentence = [[next(results) for _ in sentence.pieces] for sentence in every_sentence]
        if self.decode.avoid_loops and self.decode.beam_size > 1:
            self._unsplit_loops(every_sentence, per_sentence)
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

    def _decode_pieces(self, pieces: list[list[int]]) -> list[list[Hypothesis]]:
        """Each piece's `nbest` hypotheses, best first. Beam search may put a lower-scored
        hypothesis first: with `decoding.numbers_first`, a piece that has numbers is searched for
        all `beam_size` hypotheses, so that the best that keeps them can come first; with
        `decoding.avoid_loops`, a piece whose best hypothesis loops is searched again for all of
        them, so that the best that does not can come first. Other pieces' search is unchanged."""
        decode = self.decode
        if decode.beam_size == 1 or not (decode.numbers_first or decode.avoid_loops):
            return self._search(pieces, decode)
        sources = [self.src_tok.decode(piece) for piece in pieces]
        searched_all = [
            decode.numbers_first and (bool(find_numbers(source)) or has_placeholders(source))
            for source in sources
        ]
        all_hypotheses = replace(decode, nbest=decode.beam_size)
        results: list[list[Hypothesis]] = [[] for _ in pieces]
        self._search_into(results, pieces, decode, [not wanted for wanted in searched_all])
        self._search_into(results, pieces, all_hypotheses, searched_all)
        if decode.avoid_loops:
            looping = [
                not done and bool(hyps) and self._loops(source, self._text(hyps[0]))
                for done, source, hyps in zip(searched_all, sources, results, strict=True)
            ]
            self._search_into(results, pieces, all_hypotheses, looping)
            searched_all = [a or b for a, b in zip(searched_all, looping, strict=True)]
            self._add_tighter_hypotheses(results, pieces, sources, all_hypotheses)
        return [
            (self._preferred(source, hyps) if done else hyps)[: decode.nbest]
            for source, hyps, done in zip(sources, results, searched_all, strict=True)
        ]

    def _unsplit_loops(
        self, sentences: list[SourceSentence], per_sentence: list[list[list[Hypothesis]]]
    ) -> None:
        """Where the clauses of one of `sentences` translate without a loop each but loop joined
        (ドイツでは in every clause), search that sentence again in one piece where the model can
        take it, and translate it so where that does not loop: its `pieces` become the one, its
        hypotheses in `per_sentence` (each piece's, for each sentence) that piece's."""
        whole = {
            k: [token for piece in sentence.pieces for token in piece]
            for k, (sentence, hyps) in enumerate(zip(sentences, per_sentence, strict=True))
            if len(sentence.pieces) > 1
            and all(hyps)
            and sum(map(len, sentence.pieces)) <= self.max_src_tokens
            and self._loops(sentence.text, self._sentence(sentence, [h[0] for h in hyps]).text)
        }
        again = self._decode_pieces(list(whole.values())) if whole else []
        for (k, ids), hyps in zip(whole.items(), again, strict=True):
            unsplit = replace(sentences[k], pieces=[ids])
            if hyps and not self._loops(unsplit.text, self._sentence(unsplit, hyps[:1]).text):
                sentences[k].pieces, per_sentence[k] = [ids], [hyps]

    def _add_tighter_hypotheses(
        self,
        results: list[list[Hypothesis]],
        pieces: list[list[int]],
        sources: list[str],
        decode: DecodingConfig,
    ) -> None:
        """Where every hypothesis of a piece loops, search it again banning repeated token pairs,
        numbers' included, its new hypotheses added after the old: a loop the 3-gram ban lets
        through comes out in other pieces each time (駅の前の前の前の前: 前の, 前の, 前の, 前), or
        as the zeros it spares (０００００００００００００００才). Where they all loop too, once
        more banning any repeated token."""
        current = decode.no_repeat_ngram_size or float("inf")  # 0: no ban at all
        stuck = [bool(hyps) for hyps in results]
        for size in (size for size in TIGHTER_NO_REPEATS if size < current):
            # Only a piece stuck before can be stuck still: its hypotheses only grow.
            stuck = [
                was and all(self._loops(source, self._text(hyp)) for hyp in hyps)
                for was, source, hyps in zip(stuck, sources, results, strict=True)
            ]
            if not any(stuck):
                return
            tighter: list[list[Hypothesis]] = [[] for _ in pieces]
            banning = replace(decode, no_repeat_ngram_size=size, no_repeat_spares_numbers=False)
            self._search_into(tighter, pieces, banning, stuck)
            for hyps, more in zip(results, tighter, strict=True):
                seen = {tuple(hyp.tokens) for hyp in hyps}
                hyps += [hyp for hyp in more if tuple(hyp.tokens) not in seen]

    def _search_into(
        self,
        results: list[list[Hypothesis]],
        pieces: list[list[int]],
        decode: DecodingConfig,
        chosen: list[bool],
    ) -> None:
        """Search the `chosen` pieces with `decode`, their hypotheses written into `results`."""
        indices = [i for i, wanted in enumerate(chosen) if wanted]
        if indices:
            found = self._search([pieces[i] for i in indices], decode)
            for i, hyps in zip(indices, found, strict=True):
                results[i] = hyps

    def _search(self, pieces: list[list[int]], decode: DecodingConfig) -> list[list[Hypothesis]]:
        if isinstance(self.model, CTranslate2Model):
            return self.model.decode_pieces(pieces, decode)
        with self.precision.autocast():
            return decode_pieces(
                self.model, pieces, self.src_tok, self.tgt_tok, decode, self.use_cache
            )

    def _preferred(self, source: str, hyps: list[Hypothesis]) -> list[Hypothesis]:
        """`hyps` with the one this translator prefers moved first: of those that do not loop
        (`decoding.avoid_loops`), the best that keeps the numbers of `source` (after the repair;
        placeholders too) and of those the best that writes each placeholder no more often than
        `source` does (`decoding.numbers_first`); the beam's order decides the rest."""

        def flaws(rank: int) -> tuple[bool, bool, bool, int]:
            text = self._text(hyps[rank])
            looping = self.decode.avoid_loops and self._loops(source, text)
            if not self.decode.numbers_first:
                return looping, False, False, rank
            if self.decode.repair_numbers:
                text = repair_numbers(source, text)
            keeps = keeps_numbers(source, text) and keeps_placeholders(source, text)
            exact = keeps and keeps_placeholders(text, source)
            return looping, not keeps, not exact, rank

        best = min(range(len(hyps)), key=flaws)
        return [hyps[best], *hyps[:best], *hyps[best + 1 :]]

    def _text(self, hyp: Hypothesis) -> str:
        """The output text of `hyp`, on one line."""
        return one_line(self.tgt_tok.decode(hyp.tokens))

    def _loops(self, source: str, text: str) -> bool:
        """Whether `text` loops where `source` does not (a unit of 1 to 4 words 3 times in a row,
        or a word 4-gram 3 times), as evaluation counts loops (`evaluation/fidelity.py`)."""
        return loops(source, text, self.source_lang, self.target_lang)

    def sentences(self, text: str) -> list[SourceSentence]:
        """What `translate` decodes for `text`: the sentences of each of its lines, cleaned, in
        the corpus's style, and split into pieces the model can take (none for an empty text).
        `split_sentences` knows English and Japanese punctuation alike, so either may be read."""
        sentences = []
        for line, text_line in enumerate(split_lines(text)):
            for sentence in split_sentences(clean(text_line)):
                styled, numbers = prepare_source(sentence, self.source_style), []
                if self.number_placeholders:
                    styled, numbers = mask_numbers(styled)
                names: list[str] = []
                if self.name_placeholders:
                    styled, names = mask_unseen_names(styled, self._token_count)
                # No pieces: only characters the tokenizer's normalization removes.
                if pieces := self._pieces(styled):
                    sentences.append(SourceSentence(sentence, line, pieces, numbers, names))
        return sentences

    def _token_count(self, text: str) -> int:
        return len(self.src_tok.encode(text))

    def _pieces(self, text: str) -> list[list[int]]:
        """Source ids of `text` in the pieces it is decoded in: its clauses packed into pieces of
        at most `decoding.clause_split_tokens` when it is longer than that, and any piece longer
        than `max_src_tokens` split further."""
        ids = self.src_tok.encode(text)
        limit = self.decode.clause_split_tokens
        if limit and len(ids) > limit:
            clauses = [part for part in _CLAUSE_SPLIT.split(text) if part]
            if len(clauses) > 1:
                packed = self._packed(clauses, limit)
                return [piece for part in packed for piece in self._fitting(part)]
        return self._fitting(text, ids)

    def _fitting(self, text: str, ids: list[int] | None = None) -> list[list[int]]:
        """Source ids of `text`, split into pieces of at most `max_src_tokens`."""
        ids = self.src_tok.encode(text) if ids is None else ids
        if len(ids) <= self.max_src_tokens:
            return [ids] if ids else []
        parts = _split_once(text)
        if len(parts) == 1:  # one character spelled with more byte tokens than fit
            return [
                ids[i : i + self.max_src_tokens] for i in range(0, len(ids), self.max_src_tokens)
            ]
        packed = self._packed(parts, self.max_src_tokens)
        return [piece for part in packed for piece in self._fitting(part)]

    def _packed(self, parts: list[str], limit: int) -> list[str]:
        """Consecutive `parts` joined into groups of at most `limit` tokens each, as few as
        that allows taking them in order (a part longer than `limit` is a group alone)."""
        groups, current = [], ""
        for part in parts:
            if current and len(self.src_tok.encode(current + part)) > limit:
                groups.append(current)
                current = part
            else:
                current += part
        return [*groups, current]

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
                    text="\n".join(self.joiner.join(line) for line in lines),
                    score=sum(h.score for sentence_hyps in hyps for h in sentence_hyps),
                    sentences=translated,
                )
            )
        return candidates

    def _sentence(self, source: SourceSentence, hyps: list[Hypothesis]) -> SentenceTranslation:
        """A sentence's translation from the hypotheses of its pieces, its numbers repaired
        (`decoding.repair_numbers`)."""
        texts = [self._text(h) for h in hyps]
        stop, comma = _STOP_AND_COMMA.get(self.target_lang, ("", ""))
        for i, piece in enumerate(source.pieces[:-1]):
            # The model ends each piece as a sentence; one cut after a comma goes on in the next.
            ended = texts[i].rstrip()
            if stop and ended.endswith(stop) and _CLAUSE_END.search(self.src_tok.decode(piece)):
                clause = ended.removesuffix(stop)
                texts[i] = clause if _CLAUSE_END.search(clause) else clause + comma
        text = self.joiner.join(texts)
        if self.number_placeholders:
            text = restore_numbers(text, source.numbers, self.target_lang)
        if self.name_placeholders:
            text = restore_names(text, source.names)
        return SentenceTranslation(
            text=repair_numbers(source.text, text) if self.decode.repair_numbers else text,
            tokens=[token for h in hyps for token in h.tokens],
            hit_max_len=any(h.hit_max_len for h in hyps),
        )


def _direction(data: DataConfig) -> str:
    return f"{data.source_lang}-{data.target_lang}"


def _split_once(text: str) -> list[str]:
    """`text` (one sentence) cut at its coarsest split points (clauses, else words, else in two
    halves); the parts join back to `text`."""
    for pattern in (_CLAUSE_SPLIT, _WORD_SPLIT):
        parts = [part for part in pattern.split(text) if part]
        if len(parts) > 1:
            return parts
    middle = len(text) // 2
    return [text[:middle], text[middle:]] if middle else [text]
