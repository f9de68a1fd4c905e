"""The `Batch` the model trains on, and the collate function that pads token ids into one.

Mask convention of the whole project: bool, True = a real token (may be attended to).

A batch of a static shape (data/shapes.py) ends with filler rows: index -1, the source a lone EOS
(so attention has a key to attend to: a row of only masked keys would make NaN gradients), the
target input a lone BOS, and no label.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from llm_from_scratch.data.cleaning import column, map_processes
from llm_from_scratch.data.protocols import Tokenizer, model_text
from llm_from_scratch.data.shapes import ShapePlan

if TYPE_CHECKING:  # a translator reads no corpus, and importing datasets is slow
    import datasets


@dataclass
class Batch:
    src: torch.Tensor  # (batch, src_len) long: source ids + EOS, then pad
    src_mask: torch.Tensor  # (batch, src_len) bool, True = real token
    tgt_in: torch.Tensor  # (batch, tgt_len) long: BOS + target ids, then pad (decoder input)
    tgt_out: torch.Tensor  # (batch, tgt_len) long: target ids + EOS, then pad (labels)
    tgt_mask: torch.Tensor  # (batch, tgt_len) bool, True = a label of tgt_out (a pair's token)
    indices: torch.Tensor  # (batch,) long: positions of the pairs in their split; -1: filler

    # What the model and the loss read on the device; `tgt_mask` and `indices` are counted and
    # looked up on the host, so `to` leaves them there.
    device_fields: ClassVar[tuple[str, ...]] = ("src", "src_mask", "tgt_in", "tgt_out")

    @property
    def filler_rows(self) -> int:
        """Rows that only complete a static shape (they hold no pair)."""
        return int((self.indices < 0).sum())

    @property
    def src_tokens(self) -> int:
        """Non-pad source tokens (EOS included) of the pairs, filler rows' EOS left out."""
        return int(self.src_mask.sum()) - self.filler_rows

    @property
    def tgt_tokens(self) -> int:
        """Non-pad target tokens: the number of labels the loss is averaged over."""
        return int(self.tgt_mask.sum())

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        """The batch with its `device_fields` on `device`, the other fields as they are."""
        return replace(
            self, **self._map_device_fields(lambda t: t.to(device, non_blocking=non_blocking))
        )

    def pin_memory(self) -> Batch:
        """Called by `DataLoader(pin_memory=True)`, so CUDA copies can be asynchronous."""
        return replace(self, **self._map_device_fields(torch.Tensor.pin_memory))

    def _map_device_fields(
        self, function: Callable[[torch.Tensor], torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        return {name: function(getattr(self, name)) for name in self.device_fields}


def pad(
    sequences: Sequence[Sequence[int]], pad_id: int, length: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad `sequences` into (batch, length) ids and the matching True = real token mask;
    `length` defaults to the longest sequence's."""
    length = max((len(seq) for seq in sequences), default=0) if length is None else length
    ids = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    mask = torch.arange(length) < torch.tensor([len(seq) for seq in sequences]).unsqueeze(1)
    return ids, mask


def encode_sources(
    sequences: Sequence[Sequence[int]], src_tok: Tokenizer, length: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Source ids as the encoder sees them, (batch, src_len) ids and mask: each ends with EOS."""
    return pad([[*seq, src_tok.eos_id] for seq in sequences], src_tok.pad_id, length)


@dataclass(frozen=True)
class BPEDropout:
    """Re-segment each training pair with BPE-dropout (Provilkov et al., 2020) as it is batched.

    A pair's segmentation depends only on (seed, epoch, its index), so an epoch is the same
    however it is batched or resumed, and differs from the next epoch. A sample longer than
    `max_tokens` (the cleaning limit, which bounds the batch) keeps the pair's cached ids.
    """

    rate: float
    seed: int
    epoch: int
    max_tokens: int
    # The row columns `resample` reads: the texts to re-segment and the cached ids to fall back on.
    columns: ClassVar[tuple[str, ...]] = ("src_ids", "tgt_ids", "index", "src", "tgt")

    def resample(
        self, row: dict[str, Any], src_tok: Tokenizer, tgt_tok: Tokenizer
    ) -> dict[str, Any]:
        rng = random.Random(f"{self.seed}/{self.epoch}/{row['index']}")
        src_ids = src_tok.encode_with_dropout(model_text(src_tok, row["src"]), self.rate, rng)
        tgt_ids = tgt_tok.encode_with_dropout(model_text(tgt_tok, row["tgt"]), self.rate, rng)
        if max(len(src_ids), len(tgt_ids)) > self.max_tokens:
            return row
        return {**row, "src_ids": src_ids, "tgt_ids": tgt_ids}

    def lengths(
        self, train: datasets.Dataset, src_tok: Tokenizer, tgt_tok: Tokenizer, num_proc: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's source and target length in this epoch's segmentation, measured in up
        to `num_proc` processes (0: one per usable core): batches planned on the cached lengths
        would overrun the token budget, since dropout lengthens most pairs."""

        def measure(rows: dict[str, list]) -> dict[str, list[int]]:
            resampled = [
                self.resample(dict(zip(rows, values, strict=True)), src_tok, tgt_tok)
                for values in zip(*rows.values(), strict=True)
            ]
            return {
                "src_len": [len(row["src_ids"]) for row in resampled],
                "tgt_len": [len(row["tgt_ids"]) for row in resampled],
            }

        measured = train.select_columns(list(self.columns)).map(
            measure,
            batched=True,
            remove_columns=list(self.columns),
            keep_in_memory=True,
            num_proc=map_processes(len(train), num_proc),
            desc=f"BPE-dropout lengths, epoch {self.epoch}",
        )
        return column(measured, "src_len"), column(measured, "tgt_len")


class Collator:
    """Turns dataset rows (`src_ids`, `tgt_ids`, `index`; with `bpe_dropout`, also the `src` and
    `tgt` texts) into a `Batch`, of its static shape under `shapes`; picklable for workers."""

    def __init__(
        self,
        src_tok: Tokenizer,
        tgt_tok: Tokenizer,
        bpe_dropout: BPEDropout | None = None,
        shapes: ShapePlan | None = None,
    ) -> None:
        self.src_tok = src_tok
        self.tgt_tok = tgt_tok
        self.bpe_dropout = bpe_dropout
        self.shapes = shapes

    @property
    def columns(self) -> list[str]:
        """The dataset columns a row must carry."""
        if self.bpe_dropout is not None:
            return list(self.bpe_dropout.columns)
        return ["src_ids", "tgt_ids", "index"]

    def __call__(self, rows: Sequence[dict[str, Any]]) -> Batch:
        if self.bpe_dropout is not None:
            rows = [self.bpe_dropout.resample(row, self.src_tok, self.tgt_tok) for row in rows]
        sources = [row["src_ids"] for row in rows]
        targets = [row["tgt_ids"] for row in rows]
        indices = [row["index"] for row in rows]
        bos, eos, pad_id = self.tgt_tok.bos_id, self.tgt_tok.eos_id, self.tgt_tok.pad_id
        tgt_in = [[bos, *ids] for ids in targets]
        tgt_out = [[*ids, eos] for ids in targets]
        src_len = tgt_len = None
        if self.shapes is not None:
            size, src_len, tgt_len = self.shapes.batch_shape(
                [len(ids) for ids in sources], [len(ids) for ids in targets]
            )
            fillers = size - len(rows)
            sources += [[]] * fillers  # a lone EOS once encoded
            tgt_in += [[bos]] * fillers
            tgt_out += [[]] * fillers  # no label
            indices += [-1] * fillers
        src, src_mask = encode_sources(sources, self.src_tok, src_len)
        tgt_in_ids, _ = pad(tgt_in, pad_id, tgt_len)
        tgt_out_ids, tgt_mask = pad(tgt_out, pad_id, tgt_len)
        indices_tensor = torch.tensor(indices, dtype=torch.long)
        return Batch(src, src_mask, tgt_in_ids, tgt_out_ids, tgt_mask, indices_tensor)
