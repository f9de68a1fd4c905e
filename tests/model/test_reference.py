"""Logits equal torch.nn.Transformer's once our weights are copied into it."""

from __future__ import annotations

import pytest
import torch

from tests.reference.transformer import ReferenceSeq2Seq

from .builders import SRC_VOCAB, TGT_VOCAB, build_model, padded_batch


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize(
    ("norm_first", "activation"), [(False, "relu"), (True, "relu"), (False, "gelu")]
)
def test_logits_equal_nn_transformer(norm_first: bool, activation: str) -> None:
    model = build_model(norm_first=norm_first, activation=activation)
    # Training mode (with dropout 0) keeps nn.Transformer off its inference fast path, which
    # zeroes the encoder output at padded positions.
    reference = ReferenceSeq2Seq.copy_of(model).train()
    src, src_mask = padded_batch([9, 4, 6], SRC_VOCAB, seed=1)
    tgt, _ = padded_batch([7, 7, 3], TGT_VOCAB, seed=2)

    with torch.no_grad():
        ours = model(src, src_mask, tgt)
        theirs = reference(src, src_mask, tgt)

    assert (ours - theirs).abs().max().item() < 1e-5
