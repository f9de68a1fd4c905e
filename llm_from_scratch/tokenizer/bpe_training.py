"""Learning BPE merges incrementally: pair counts are built once and then only patched.

The corpus is reduced to its unique words (runs of mergeable symbols) with their frequencies.
Each merge touches only the words that contain the merged pair, found through a pair -> words
index; the best pair comes from a max-heap whose stale entries are skipped when popped. A merge
only ever lowers the counts of existing pairs (and creates new pairs, pushed once with their
final count), so a popped entry whose count is out of date is re-pushed with the current count.

`count_words` counts the training text's words from the same pre-tokenized pieces, for the
tokenizer file (`BPETokenizer.word_count`).
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from itertools import pairwise

Pair = tuple[int, int]


def select_alphabet(char_counts: Counter[str], coverage: float) -> list[str]:
    """The most frequent characters that together cover `coverage` of all character occurrences.

    Returned in code point order, so that ids (and tie-breaking between equal pair counts) do
    not depend on how counts happen to tie. Lone surrogates (not text, only possible in a Python
    str) are never part of the alphabet: they always take the byte fallback.
    """
    budget = coverage * sum(char_counts.values())
    covered = 0
    alphabet = []
    for char, count in sorted(char_counts.items(), key=lambda item: (-item[1], item[0])):
        if covered >= budget:
            break
        if "\ud800" <= char <= "\udfff":
            continue
        alphabet.append(char)
        covered += count
    return sorted(alphabet)


def word_key(piece: str) -> str | None:
    """The key `count_words` counts a pre-tokenized piece under: its word, case-folded, its
    leading space dropped (`Hello` at a sentence's start and ` hello` inside one are one
    word); None for a piece that is not a word of a cased script (numbers, punctuation,
    Japanese)."""
    word = piece.lstrip(" ")
    if not word.isalpha() or word.lower() == word.upper():
        return None
    return word.casefold()


def count_words(pieces: Counter[str], min_count: int) -> dict[str, int]:
    """How often `pieces` (pre-tokenized pieces and their counts) hold each word (`word_key`),
    for the words they hold at least `min_count` times."""
    words: Counter[str] = Counter()
    for piece, count in pieces.items():
        if (key := word_key(piece)) is not None:
            words[key] += count
    return {word: count for word, count in words.items() if count >= min_count}


def learn_merges(words: Counter[tuple[int, ...]], num_merges: int, first_id: int) -> list[Pair]:
    """Up to `num_merges` merges; the i-th merge creates token `first_id + i`.

    The most frequent pair is merged first; ties go to the pair with the smaller ids (left id
    first). Fewer merges are returned when no pair is left to merge.
    """
    symbols = [list(word) for word in words]
    freqs = list(words.values())
    pair_counts: defaultdict[Pair, int] = defaultdict(int)
    words_with: defaultdict[Pair, set[int]] = defaultdict(set)
    for index, (word, freq) in enumerate(zip(symbols, freqs, strict=True)):
        for pair in pairwise(word):
            pair_counts[pair] += freq
            words_with[pair].add(index)

    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    while heap and len(merges) < num_merges:
        negative_count, pair = heapq.heappop(heap)
        count = pair_counts[pair]
        if count != -negative_count:
            if count > 0:
                heapq.heappush(heap, (-count, pair))
            continue
        new_id = first_id + len(merges)
        merges.append(pair)
        new_pairs = set()
        for index in words_with.pop(pair):
            word = symbols[index]
            merged = merge_pair(word, pair, new_id)
            if len(merged) == len(word):
                continue  # the index is lazy: an earlier merge already consumed this occurrence
            # Only pairs within one symbol of a merged occurrence change: the word is the same
            # before the first new token and after the last one.
            first = merged.index(new_id)
            last = len(merged) - 1 - merged[::-1].index(new_id)
            start = max(first - 1, 0)
            shrink = len(word) - len(merged)
            freq = freqs[index]
            for old in pairwise(word[start : last + shrink + 2]):
                pair_counts[old] -= freq
            for new in pairwise(merged[start : last + 2]):
                pair_counts[new] += freq
                if new_id in new:
                    words_with[new].add(index)
                    new_pairs.add(new)
            symbols[index] = merged
        del pair_counts[pair]
        for new in new_pairs:
            heapq.heappush(heap, (-pair_counts[new], new))
    return merges


def merge_pair(symbols: list[int], pair: Pair, new_id: int) -> list[int]:
    """`symbols` with every non-overlapping occurrence of `pair`, left to right, replaced."""
    first, second = pair
    merged = []
    i = 0
    last = len(symbols) - 1
    while i <= last:
        if i < last and symbols[i] == first and symbols[i + 1] == second:
            merged.append(new_id)
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged
