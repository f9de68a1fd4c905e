"""Builders for the decoding tests: a tiny model trained for a few seconds to copy its input,
padded batches, a tiny checkpoint for the command-line tests, and weights that do not fit it.

A randomly initialised model's next-token distribution is nearly flat, so EOS is almost never the
argmax and every sentence would just run to its length limit. The copy task makes the model emit
EOS after a length that depends on the source (and, briefly trained, sometimes loop instead), which
is what batching, early stopping and beam bookkeeping need to be exercised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from llm_from_scratch.checkpoint import inference_state, load_checkpoint, save_checkpoint
from llm_from_scratch.decoding.common import Hypothesis
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.conventions import TextConventions
from llm_from_scratch.decoding.torch_engine import TorchModel
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.composing import composed_train

TINY = ModelConfig(
    d_model=32,
    n_heads=2,
    n_encoder_layers=1,
    n_decoder_layers=1,
    d_ff=64,
    dropout=0.0,
    max_positions=64,
)
COPY_VOCAB = 12  # the task uses this many distinct ordinary tokens
COPY_STEPS = 60


def tiny_tokenizer(
    texts: tuple[str, ...] = (
        "the cat sat on the mat.",
        "これはテストです。",
        "a dog ran to the park.",
    ),
) -> BPETokenizer:
    """A 300-token BPE tokenizer trained on a few English and Japanese sentences."""
    return BPETokenizer.train(list(texts) * 4, vocab_size=300)


def content_ids(tok: BPETokenizer) -> list[int]:
    specials = {tok.pad_id, tok.bos_id, tok.eos_id}
    return [i for i in range(tok.vocab_size) if i not in specials][:COPY_VOCAB]


def random_sources(tok: BPETokenizer, count: int, generator: torch.Generator) -> list[list[int]]:
    """Source id lists of 1 to 8 ordinary tokens, each followed by EOS as the encoder expects."""
    ids = torch.tensor(content_ids(tok))
    lengths = torch.randint(1, 9, (count,), generator=generator)
    return [
        [*ids[torch.randint(len(ids), (int(n),), generator=generator)].tolist(), tok.eos_id]
        for n in lengths
    ]


def pad_batch(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch, longest) ids and the True = real token mask."""
    src = pad_sequence([torch.tensor(row) for row in rows], batch_first=True, padding_value=pad_id)
    return src, src != pad_id


def train_copy_model(tok: BPETokenizer) -> Seq2SeqTransformer:
    """Trained briefly in float32, returned in float64 so that batched, cached and one-by-one
    decoding agree to the last bit."""
    torch.manual_seed(0)
    model = Seq2SeqTransformer(TINY, tok.vocab_size, tok.vocab_size, tok.pad_id)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(0)
    for _ in range(COPY_STEPS):
        sources = random_sources(tok, 32, generator)
        src, src_mask = pad_batch(sources, tok.pad_id)
        # Copy task: the target is the source; its EOS is the label after the last token.
        tgt_in, _ = pad_batch([[tok.bos_id, *row[:-1]] for row in sources], tok.pad_id)
        tgt_out, tgt_mask = pad_batch(sources, tok.pad_id)
        logits = model(src, src_mask, tgt_in)
        loss = torch.nn.functional.cross_entropy(logits[tgt_mask], tgt_out[tgt_mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.double().eval()


# The tests' runs are of small_parallel_enja, whose lowercased, tokenized English the translator
# puts input in: the default everyday mixture reads raw English.
TINY_RUN_DATA = ("data=small_parallel_enja",)


def save_tiny_checkpoint(path: Path, tok: BPETokenizer, overrides: Sequence[str] = ()) -> Path:
    """An untrained `model=tiny` saved as a run's checkpoint, for the command-line tests;
    `overrides` change the run's config (e.g. `data.direction=ja-en`)."""
    config = composed_train("model=tiny", "decoding=greedy", *TINY_RUN_DATA, *overrides)
    torch.manual_seed(0)
    model = Seq2SeqTransformer(config.model, tok.vocab_size, tok.vocab_size, tok.pad_id)
    save_checkpoint(path, inference_state(model, tok, tok, config))
    return path


def save_run_checkpoint(
    path: Path, tok: BPETokenizer, step: int, dev_metrics: dict[str, float], averaged: int = 0
) -> Path:
    """A tiny checkpoint as training writes it: with the step and dev scores it was saved at;
    `averaged` > 0: an `averaged.pt` of that many snapshots."""
    save_tiny_checkpoint(path, tok)
    state = load_checkpoint(path)
    state.update(progress={"step": step}, metrics=dev_metrics)
    if averaged:
        state["averaged_from"] = [f"snapshots/step-{n}.pt" for n in range(averaged)]
    save_checkpoint(path, state)
    return path


def answering(tok: BPETokenizer, text: str) -> Callable[..., list[list[Hypothesis]]]:
    """A stand-in for either engine's `decode_pieces` whose every output is `text`: what the
    Translator does with a given output, whatever the model."""

    def decode(*args: Any) -> list[list[Hypothesis]]:
        pieces = next(arg for arg in args if isinstance(arg, list))  # after torch's model
        return [[Hypothesis(tok.encode(text), 0.0, hit_max_len=False)] for _ in pieces]

    return decode


def misfit_weights(
    weights: dict[str, Any], model_cfg: ModelConfig, vocab_size: int, problem: str
) -> dict[str, Any]:
    """Weights a checkpoint's model cannot load: `weights` less their first tensor ("missing"),
    or the weights of the same model for a vocabulary 8 tokens larger ("vocabulary")."""
    if problem == "missing":
        return dict(list(weights.items())[1:])
    assert problem == "vocabulary", problem
    return Seq2SeqTransformer(model_cfg, vocab_size + 8, vocab_size + 8, 0).state_dict()


MISFIT_MESSAGES = {  # what the error names, beyond "its weights do not fit"
    "missing": r"Missing key\(s\) in state_dict",
    "vocabulary": r"size mismatch for",
}


def torch_translator(
    model: Seq2SeqTransformer, tok: BPETokenizer, decode: DecodingConfig, **conventions: Any
) -> Translator:
    """A translator of `model` with the torch engine, `tok` on both sides; `conventions` are
    `TextConventions` fields (target_lang, number_placeholders, ...)."""
    return Translator(TorchModel(model, tok, tok), decode, TextConventions(**conventions))
