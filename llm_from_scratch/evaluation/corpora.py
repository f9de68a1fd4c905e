"""Held-out splits that mix several corpora (a multi-corpus run's dev or test): which rows of each
to score when only some are, and the scores of each corpus, each one the corpus scored alone."""

from __future__ import annotations

from collections.abc import Sequence

from llm_from_scratch.evaluation.metrics import CorpusScores, corpus_scores


def rows_by_corpus(corpora: Sequence[str]) -> dict[str, list[int]]:
    """The positions of each corpus's rows, in order; the corpora in the order they first appear."""
    rows: dict[str, list[int]] = {}
    for index, corpus in enumerate(corpora):
        rows.setdefault(corpus, []).append(index)
    return rows


def even_shares(sizes: Sequence[int], total: int) -> list[int]:
    """How many items to take of each group for `total` in all: an even share of each; a group
    with fewer takes all it has and leaves the rest to the others, and a remainder goes one item
    each to the first groups. Every item when `total` covers them all."""
    shares = [0] * len(sizes)
    left = total
    smallest_first = sorted(range(len(sizes)), key=lambda group: (sizes[group], group))
    for position, group in enumerate(smallest_first):
        share = left // (len(sizes) - position)
        if sizes[group] > share:  # so do the groups after it: they split what is left evenly
            rest = sorted(smallest_first[position:])
            remainder = left - share * len(rest)
            for rank, other in enumerate(rest):
                shares[other] = share + (rank < remainder)
            break
        shares[group] = sizes[group]
        left -= sizes[group]
    return shares


def spread_rows(corpora: Sequence[str], total: int) -> list[int]:
    """The positions of `total` rows (or all there are) spread evenly over the corpora (see
    `even_shares`), the first rows of each, in their order. One corpus: the first `total`."""
    rows = list(rows_by_corpus(corpora).values())
    shares = even_shares([len(positions) for positions in rows], total)
    return sorted(
        index for positions, share in zip(rows, shares, strict=True) for index in positions[:share]
    )


def rows_first_of(corpora: Sequence[str], first: str, total: int) -> list[int]:
    """`total` rows (or all there are) as `spread_rows` chooses them, but every row of the corpus
    `first` taken before the others share what is left."""
    own = [index for index, corpus in enumerate(corpora) if corpus == first][:total]
    others = [index for index, corpus in enumerate(corpora) if corpus != first]
    chosen = spread_rows([corpora[index] for index in others], total - len(own))
    return sorted(own + [others[position] for position in chosen])


def scores_by_corpus(
    hypotheses: Sequence[str], references: Sequence[str], corpora: Sequence[str], language: str
) -> dict[str, CorpusScores]:
    """`corpus_scores` of each corpus's rows (written in `language`), when there are several
    corpora (else empty)."""
    rows = rows_by_corpus(corpora)
    if len(rows) < 2:
        return {}
    return {
        corpus: corpus_scores([hypotheses[i] for i in own], [references[i] for i in own], language)
        for corpus, own in rows.items()
    }
