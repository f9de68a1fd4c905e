"""Static batch shapes: a small fixed set of (rows, source length, target length) for training.

A compiled model (and a CUDA graph above all) is specialized to its input shapes, so batches of
ever-new shapes recompile it or fall back to eager. Here every padded length rounds up to a grid,
multiples of `step` up to `FINE_STEPS * step` and then a step that doubles with each doubling of
the length (a bounded share of padding at every length); the grid cells the training pairs fall
in merge, the cheapest merge (in padded tokens) first, until at most `max_shapes` remain; and each
shape's row count is the most its padded size fits into the token budget. A batch short of its
rows is completed with filler rows (`Collator`) that carry no label and attend to one real-looking
token, so that no softmax row is all -inf. The precedents: fairseq's `required_batch_size_multiple`
and `pad_to_multiple`, Marian's `--mini-batch-fit-step` and `--mini-batch-round-up`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_from_scratch.data.config import SPECIALS_PER_SIDE

# Padded lengths up to FINE_STEPS * step are multiples of step; above, the step doubles each time
# the length does, so rounding never adds more than 1 / FINE_STEPS of a long sequence.
FINE_STEPS = 16


def round_up(lengths: np.ndarray, step: int) -> np.ndarray:
    """Each length (specials included) rounded up to the grid of `step`."""
    lengths = np.maximum(np.asarray(lengths, dtype=np.int64), 1)
    granularity = np.full_like(lengths, step)
    coarser = lengths > FINE_STEPS * granularity
    while coarser.any():
        granularity[coarser] *= 2
        coarser = lengths > FINE_STEPS * granularity
    return -(-lengths // granularity) * granularity


@dataclass(frozen=True)
class ShapePlan:
    """The padded (source length, target length) shapes of training batches, and their rows.

    Every pair goes to the cheapest shape that holds it (least source + target length, then the
    shorter source; `shapes` is sorted that way); `lengths` are token counts without specials,
    as the splits' `src_len` and `tgt_len` columns hold them.
    """

    shapes: tuple[tuple[int, int], ...]
    batch_tokens: int

    def rows(self, shape: int) -> int:
        """The fixed row count of shape number `shape`; one row when a row alone overruns."""
        src_len, tgt_len = self.shapes[shape]
        return max(1, self.batch_tokens // (src_len + tgt_len))

    def assign(self, src_lens: np.ndarray, tgt_lens: np.ndarray) -> np.ndarray:
        """The shape number of each pair (-1 for a pair longer than every shape)."""
        padded_src = np.asarray(src_lens, dtype=np.int64)[:, None] + SPECIALS_PER_SIDE
        padded_tgt = np.asarray(tgt_lens, dtype=np.int64)[:, None] + SPECIALS_PER_SIDE
        table = np.array(self.shapes, dtype=np.int64)
        holds = (table[None, :, 0] >= padded_src) & (table[None, :, 1] >= padded_tgt)
        first = holds.argmax(axis=1)  # the sort order makes the first that holds the cheapest
        return np.where(holds.any(axis=1), first, -1)

    def batch_shape(self, src_lens: list[int], tgt_lens: list[int]) -> tuple[int, int, int]:
        """(rows, source length, target length) of the batch of these pairs: the shape they
        were all assigned, which is the cheapest one holding the longest of each side."""
        shape = int(self.assign(np.array([max(src_lens)]), np.array([max(tgt_lens)]))[0])
        if shape < 0 or len(src_lens) > self.rows(shape):
            raise ValueError(
                f"{len(src_lens)} pairs of up to {max(src_lens)} + {max(tgt_lens)} tokens fit "
                "no static shape: their batch was not cut by this plan"
            )
        return self.rows(shape), *self.shapes[shape]

    def cut(self, order: np.ndarray, src_lens: np.ndarray, tgt_lens: np.ndarray) -> list[list[int]]:
        """`order` cut into batches of one shape each: its pairs in `order`'s order, a full
        batch of rows each but the last of each shape."""
        order = np.asarray(order, dtype=np.int64)
        shape_of = self.assign(src_lens[order], tgt_lens[order])
        if (shape_of < 0).any():
            longest = order[shape_of < 0][0]
            raise ValueError(
                f"pair {longest} ({src_lens[longest]} + {tgt_lens[longest]} tokens) is longer "
                "than every static shape"
            )
        grouped = order[np.argsort(shape_of, kind="stable")]
        counts = np.bincount(shape_of, minlength=len(self.shapes))
        batches: list[list[int]] = []
        start = 0
        for shape, count in enumerate(counts.tolist()):
            members = grouped[start : start + count].tolist()
            rows = self.rows(shape)
            batches += [members[i : i + rows] for i in range(0, count, rows)]
            start += count
        return batches


def plan_shapes(
    src_lens: np.ndarray,
    tgt_lens: np.ndarray,
    batch_tokens: int,
    *,
    step: int,
    max_shapes: int,
    longest: int,
) -> ShapePlan:
    """The shapes of at most `max_shapes` for pairs of these lengths (without specials): the
    grid cells they fill, merged cheapest first. A cell of `longest` tokens a side (specials
    included) is always among them, so that any pair cleaning keeps has a shape (BPE-dropout
    lengthens pairs after the plan is made)."""
    padded_src = round_up(np.asarray(src_lens) + SPECIALS_PER_SIDE, step)
    padded_tgt = round_up(np.asarray(tgt_lens) + SPECIALS_PER_SIDE, step)
    top = int(round_up(np.array([longest]), step)[0])
    cells, counts = np.unique(
        np.stack([padded_src, padded_tgt], axis=1), axis=0, return_counts=True
    )
    cells = np.concatenate([cells.reshape(-1, 2), [[top, top]]]).astype(np.int64)
    counts = np.concatenate([counts, [0]]).astype(np.int64)
    cells, counts = _merge(cells, counts, max_shapes)
    ordered = sorted(map(tuple, cells.tolist()), key=lambda cell: (cell[0] + cell[1], cell[0]))
    return ShapePlan(tuple(ordered), batch_tokens)


def _merge(cells: np.ndarray, counts: np.ndarray, max_shapes: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge cells pairwise into the cell that holds both, each time the pair whose merge adds
    the fewest padded tokens, until at most `max_shapes` cells remain (cells already held by
    another, the same length or shorter on both sides, are merged first at their own cost)."""
    cells, counts = _combine_duplicates(cells, counts)
    while len(cells) > max_shapes:
        size = cells.sum(axis=1)
        joined = np.maximum(cells[:, None, :], cells[None, :, :])  # (n, n, 2)
        joined_size = joined.sum(axis=2)
        added = counts[:, None] * (joined_size - size[:, None])
        added = added + counts[None, :] * (joined_size - size[None, :])
        np.fill_diagonal(added, np.iinfo(np.int64).max)
        first, second = np.unravel_index(np.argmin(added), added.shape)
        merged = joined[first, second]
        keep = np.ones(len(cells), dtype=bool)
        keep[[first, second]] = False
        cells = np.concatenate([cells[keep], merged[None]])
        counts = np.concatenate([counts[keep], [counts[first] + counts[second]]])
        cells, counts = _combine_duplicates(cells, counts)
    return cells, counts


def _combine_duplicates(cells: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row per distinct cell, its counts added (a merge can land on an existing cell)."""
    unique, inverse = np.unique(cells, axis=0, return_inverse=True)
    return unique, np.bincount(inverse.reshape(-1), weights=counts, minlength=len(unique)).astype(
        np.int64
    )
