"""Token-budget batches of similar-length pairs: little padding, reproducible, resumable, DDP-aware.

One epoch's batches are a pure function of (seed, epoch): the examples are shuffled, cut into
pools of `pool_size`, each pool is sorted by length and cut greedily into batches whose padded
size fits `batch_tokens`, and the batches are shuffled. Resuming is then just skipping the first
`start_batch` batches of that list, and DDP ranks take interleaved slices of it. With static
shapes (data/shapes.py) the shuffled examples are instead grouped by their shape and cut into
that shape's rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler

from llm_from_scratch.data.config import SPECIALS_PER_SIDE
from llm_from_scratch.data.shapes import ShapePlan
from llm_from_scratch.errors import UserError


def batch_cost(src_lens: Sequence[int], tgt_lens: Sequence[int]) -> int:
    """Tokens of the padded batch, specials included: B * (longest source + longest target)."""
    longest = max(src_lens) + max(tgt_lens) + 2 * SPECIALS_PER_SIDE
    return len(src_lens) * longest


def pack(
    order: Sequence[int], src_lens: np.ndarray, tgt_lens: np.ndarray, batch_tokens: int
) -> list[list[int]]:
    """Cut `order` greedily into consecutive batches of padded cost at most `batch_tokens`.

    A single pair over the budget still gets a batch of its own: it cannot be split, and
    dropping it here would be silent (training data is length-filtered well below the budget).

    The greedy cut a batch at a time rather than a pair at a time: a batch's cost only grows
    with each pair it takes, and a batch can hold no more pairs than its first pair's padded
    size fits into the budget, so each batch's size is a search in the running maxima of that
    window. `tests/reference/batching.py` keeps the pair-by-pair loop it must equal.
    """
    order = np.asarray(order, dtype=np.int64)
    count = len(order)
    src, tgt = np.asarray(src_lens)[order], np.asarray(tgt_lens)[order]
    first_cost = src + tgt + 2 * SPECIALS_PER_SIDE
    windows = np.minimum(count - np.arange(count), np.maximum(batch_tokens // first_cost, 1))
    rows = np.arange(1, int(windows.max(initial=1)) + 1)
    windows_at, indices = windows.tolist(), order.tolist()
    batches, start = [], 0
    while start < count:
        end = start + windows_at[start]
        longest = np.maximum.accumulate(src[start:end]) + np.maximum.accumulate(tgt[start:end])
        costs = rows[: end - start] * (longest + 2 * SPECIALS_PER_SIDE)  # non-decreasing
        size = max(int(np.searchsorted(costs, batch_tokens, side="right")), 1)
        batches.append(indices[start : start + size])
        start += size
    return batches


class TokenBudgetBatchSampler(Sampler[list[int]]):
    """Yields lists of example indices for one DDP rank; call `set_epoch` before each epoch.

    Training (`shuffle=True`) sorts within pools and shuffles the batches; evaluation sorts the
    whole split by length and keeps that order. With `shapes`, every batch is of one of its
    shapes (pools play no part: a shape's examples are cut in shuffled order).
    """

    def __init__(
        self,
        src_lens: Sequence[int],
        tgt_lens: Sequence[int],
        batch_tokens: int,
        *,
        seed: int = 0,
        pool_size: int = 65536,
        shuffle: bool = True,
        rank: int = 0,
        world_size: int = 1,
        shapes: ShapePlan | None = None,
    ) -> None:
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside world_size {world_size}")
        self.src_lens = np.asarray(src_lens, dtype=np.int64)
        self.tgt_lens = np.asarray(tgt_lens, dtype=np.int64)
        self.batch_tokens = batch_tokens
        self.seed = seed
        self.pool_size = pool_size
        self.shuffle = shuffle
        self.rank = rank
        self.world_size = world_size
        self.shapes = shapes
        self.epoch = 0
        self.start_batch = 0
        self._cached: tuple[int, list[list[int]]] | None = None  # (epoch, its batches)

    def set_epoch(self, epoch: int, start_batch: int = 0) -> None:
        """Select the epoch's batches, skipping this rank's first `start_batch` (to resume)."""
        self.epoch = epoch
        self.start_batch = start_batch

    def epoch_batches(self) -> list[list[int]]:
        """Every rank's batches of the current epoch, in order (rank r takes r, r+W, r+2W...)."""
        if self._cached is None or self._cached[0] != self.epoch:
            self._cached = (self.epoch, self._make_batches())
        return self._cached[1]

    def _make_batches(self) -> list[list[int]]:
        rng = np.random.default_rng([self.seed, self.epoch])
        count = len(self.src_lens)
        if self.shapes is not None:
            order = rng.permutation(count) if self.shuffle else np.arange(count)
            batches = self.shapes.cut(order, self.src_lens, self.tgt_lens)
            if self.shuffle:
                batches = [batches[i] for i in rng.permutation(len(batches))]
            return _divisible(batches, self.world_size)
        if self.shuffle:
            shuffled = rng.permutation(count)
            pools = [shuffled[i : i + self.pool_size] for i in range(0, count, self.pool_size)]
        else:
            pools = [np.arange(count)]
        batches = []
        for pool in pools:
            # Sorting by target then source length keeps both sides' padding low; the stable
            # sort keeps the shuffled order among equal lengths.
            ordered = pool[np.lexsort((self.src_lens[pool], self.tgt_lens[pool]))]
            batches.extend(pack(ordered, self.src_lens, self.tgt_lens, self.batch_tokens))
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        return _divisible(batches, self.world_size)

    def __iter__(self) -> Iterator[list[int]]:
        rank_batches = self.epoch_batches()[self.rank :: self.world_size]
        yield from rank_batches[self.start_batch :]

    def padded_shape(self, batch: list[int]) -> tuple[int, int, int]:
        """(rows, source length, target length) of `batch` as the collator pads it: to its static
        shape, else to the longest of each side, its special token included."""
        src_lens, tgt_lens = self.src_lens[batch], self.tgt_lens[batch]
        if self.shapes is not None:
            return self.shapes.batch_shape(src_lens.tolist(), tgt_lens.tolist())
        longest_src, longest_tgt = int(src_lens.max()), int(tgt_lens.max())
        return len(batch), longest_src + SPECIALS_PER_SIDE, longest_tgt + SPECIALS_PER_SIDE

    def batch_shapes(self) -> set[tuple[int, int, int]]:
        """The distinct `padded_shape`s of this rank's batches of the epoch, which
        `torch.compile` compiles for."""
        return {self.padded_shape(batch) for batch in self}

    def global_target_tokens(self, first: int, count: int) -> int:
        """The target tokens (EOS included) of every rank's batches `first` to
        `first + count - 1` of the epoch, counted as each rank counts its own: the loss of a DDP
        step is divided by them, and the epoch's batch list, which every rank computes alike,
        gives the count without asking the other ranks."""
        world_size = self.world_size
        batches = self.epoch_batches()[first * world_size : (first + count) * world_size]
        examples = np.concatenate([np.asarray(batch, dtype=np.int64) for batch in batches])
        return int(self.tgt_lens[examples].sum()) + len(examples) * SPECIALS_PER_SIDE

    def __len__(self) -> int:
        """This rank's batches in the epoch, those skipped by `start_batch` excluded."""
        return max(len(self.epoch_batches()) // self.world_size - self.start_batch, 0)


def _divisible(batches: list[list[int]], world_size: int) -> list[list[int]]:
    """Give every rank the same number of batches by halving the largest ones, never dropping.

    Halving a batch keeps it under the budget and its examples in the epoch, so the ranks stay
    disjoint and together still cover every example. A static shape's half keeps its shape: the
    collator fills its rows.
    """
    batches = list(batches)
    while len(batches) % world_size:
        largest = max(range(len(batches)), key=lambda i: len(batches[i]))
        batch = batches[largest]
        if len(batch) < 2:
            raise UserError(
                f"cannot share {len(batches)} single-pair batches equally among {world_size} "
                "ranks: the split is too small for this many processes"
            )
        half = len(batch) // 2
        batches[largest : largest + 1] = [batch[:half], batch[half:]]
    return batches
