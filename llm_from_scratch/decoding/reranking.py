"""The search policy over hypothesis lists: which pieces are searched for more hypotheses, and
which of a piece's hypotheses comes first.

Of a beam's hypotheses the best that keeps its source's numbers comes first
(`decoding.numbers_first`), the best that does not loop before any that does
(`decoding.avoid_loops`); a piece whose every hypothesis loops is searched again with tighter
n-gram bans, a sentence whose clauses loop only once joined is searched again in one piece, and
a piece whose best hypothesis runs to its length limit is searched again in halves
(`decoding.split_runaways`). Other pieces' search, and its order, is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from llm_from_scratch.data.placeholders import has_placeholders, keeps_placeholders
from llm_from_scratch.decoding.common import Hypothesis
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.conventions import TextConventions
from llm_from_scratch.decoding.lines import one_line
from llm_from_scratch.decoding.number_repair import keeps_numbers, repair_numbers
from llm_from_scratch.decoding.segmentation import SourceSentence, halved
from llm_from_scratch.evaluation.fidelity import loops
from llm_from_scratch.numbers import find_numbers
from llm_from_scratch.tokenizer.bpe import BPETokenizer

# `decoding.avoid_loops`: the no-repeat n-gram sizes of the searches of a piece whose every
# hypothesis loops, in order: repeated token pairs banned, then any repeated token (a word that
# is one token, わけではない, repeats without repeating a pair).
TIGHTER_NO_REPEATS = (2, 1)

# `decoding.split_runaways`: how many times a piece that runs to its length limit is halved, at
# most (a 64-token piece to pieces of 8 or fewer).
RUNAWAY_SPLITS = 3

# Source pieces and a search's settings in, each piece's hypotheses (best first) out.
Search = Callable[[list[list[int]], DecodingConfig], list[list[Hypothesis]]]
# A sentence's translation text from the best hypotheses of its pieces.
SentenceText = Callable[[SourceSentence, list[Hypothesis]], str]


def output_text(tokenizer: BPETokenizer, hyp: Hypothesis) -> str:
    """The output text of `hyp`, on one line."""
    return one_line(tokenizer.decode(hyp.tokens))


@dataclass(frozen=True)
class Reranker:
    search: Search
    src_tok: BPETokenizer
    tgt_tok: BPETokenizer
    decode: DecodingConfig
    conventions: TextConventions

    def nbest(self, pieces: list[list[int]]) -> list[list[Hypothesis]]:
        """Each piece's `nbest` hypotheses, best first. Beam search may put a lower-scored
        hypothesis first: with `decoding.numbers_first`, a piece that has numbers is searched
        for all `beam_size` hypotheses, so that the best that keeps them can come first; with
        `decoding.avoid_loops`, a piece whose best hypothesis loops is searched again for all of
        them, so that the best that does not can come first."""
        decode = self.decode
        if decode.beam_size == 1 or not (decode.numbers_first or decode.avoid_loops):
            return self.search(pieces, decode)
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
                not done and bool(hyps) and self.loops(source, self.text(hyps[0]))
                for done, source, hyps in zip(searched_all, sources, results, strict=True)
            ]
            self._search_into(results, pieces, all_hypotheses, looping)
            searched_all = [a or b for a, b in zip(searched_all, looping, strict=True)]
            self._add_tighter_hypotheses(results, pieces, sources, all_hypotheses)
        return [
            (self.preferred(source, hyps) if done else hyps)[: decode.nbest]
            for source, hyps, done in zip(sources, results, searched_all, strict=True)
        ]

    def unsplit_loops(
        self,
        sentences: list[SourceSentence],
        per_sentence: list[list[list[Hypothesis]]],
        max_tokens: int,
        sentence_text: SentenceText,
    ) -> None:
        """Where the clauses of one of `sentences` translate without a loop each but loop joined
        (ドイツでは in every clause), search that sentence again in one piece where the model can
        take it (`max_tokens`), and translate it so where that does not loop: its `pieces`
        become the one, its hypotheses in `per_sentence` (each piece's, for each sentence) that
        piece's."""
        if not (self.decode.avoid_loops and self.decode.beam_size > 1):
            return
        whole = {
            k: [token for piece in sentence.pieces for token in piece]
            for k, (sentence, hyps) in enumerate(zip(sentences, per_sentence, strict=True))
            if len(sentence.pieces) > 1
            and all(hyps)
            and sum(map(len, sentence.pieces)) <= max_tokens
            and self.loops(sentence.text, sentence_text(sentence, [h[0] for h in hyps]))
        }
        again = self.nbest(list(whole.values())) if whole else []
        for (k, ids), hyps in zip(whole.items(), again, strict=True):
            unsplit = replace(sentences[k], pieces=[ids])
            if hyps and not self.loops(unsplit.text, sentence_text(unsplit, hyps[:1])):
                sentences[k].pieces, per_sentence[k] = [ids], [hyps]

    def split_runaways(
        self, sentences: list[SourceSentence], per_sentence: list[list[list[Hypothesis]]]
    ) -> None:
        """Where the best hypothesis of a piece of one of `sentences` ran to its length limit
        (the model never ended it: a clause it lost the thread of, a name it spells on and on),
        search the piece's halves instead (cut at its clauses, else between words), and their
        halves where those run away too, up to `RUNAWAY_SPLITS` times: the sentence's `pieces`
        and its hypotheses in `per_sentence` become theirs. A piece that ends is untouched."""
        if not self.decode.split_runaways:
            return
        for _ in range(RUNAWAY_SPLITS):
            halves = {
                (k, i): parts
                for k, (sentence, hyps) in enumerate(zip(sentences, per_sentence, strict=True))
                for i, (piece, nbest) in enumerate(zip(sentence.pieces, hyps, strict=True))
                if nbest
                and nbest[0].hit_max_len
                and len(parts := halved(self.src_tok.decode(piece), self.src_tok)) > 1
            }
            if not halves:
                return
            found = iter(self.nbest([part for parts in halves.values() for part in parts]))
            searched = {place: [next(found) for _ in parts] for place, parts in halves.items()}
            for (k, i), parts in sorted(halves.items(), reverse=True):  # later pieces first
                sentences[k].pieces[i : i + 1] = parts
                per_sentence[k][i : i + 1] = searched[k, i]

    def preferred(self, source: str, hyps: list[Hypothesis]) -> list[Hypothesis]:
        """`hyps` with the one this policy prefers moved first: of those that do not loop
        (`decoding.avoid_loops`), the best that keeps the numbers of `source` (after the repair;
        placeholders too) and of those the best that writes each placeholder no more often than
        `source` does (`decoding.numbers_first`); the beam's order decides the rest."""

        def flaws(rank: int) -> tuple[bool, bool, bool, int]:
            text = self.text(hyps[rank])
            looping = self.decode.avoid_loops and self.loops(source, text)
            if not self.decode.numbers_first:
                return looping, False, False, rank
            if self.decode.repair_numbers:
                text = repair_numbers(source, text)
            keeps = keeps_numbers(source, text) and keeps_placeholders(source, text)
            exact = keeps and keeps_placeholders(text, source)
            return looping, not keeps, not exact, rank

        best = min(range(len(hyps)), key=flaws)
        return [hyps[best], *hyps[:best], *hyps[best + 1 :]]

    def text(self, hyp: Hypothesis) -> str:
        return output_text(self.tgt_tok, hyp)

    def loops(self, source: str, text: str) -> bool:
        """Whether `text` loops where `source` does not (a unit of 1 to 4 words 3 times in a row,
        or a word 4-gram 3 times), as evaluation counts loops (`evaluation/fidelity.py`)."""
        return loops(source, text, self.conventions.source_lang, self.conventions.target_lang)

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
                was and all(self.loops(source, self.text(hyp)) for hyp in hyps)
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
            found = self.search([pieces[i] for i in indices], decode)
            for i, hyps in zip(indices, found, strict=True):
                results[i] = hyps
