"""Many sources at once: length-sorted batches within a token budget, greedy or beam search.

The one batching of decoding, used by the `Translator` and by validation during training.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_from_scratch.data.batch import encode_sources
from llm_from_scratch.decoding.beam import beam_search
from llm_from_scratch.decoding.common import Hypothesis, StepModel
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.greedy import greedy_search
from llm_from_scratch.tokenizer.bpe import BPETokenizer


def decode_pieces(
    model: StepModel,
    pieces: Sequence[Sequence[int]],
    src_tok: BPETokenizer,
    tgt_tok: BPETokenizer,
    cfg: DecodingConfig,
    use_cache: bool = True,
) -> list[list[Hypothesis]]:
    """The n-best hypotheses of each source (token ids without EOS), in the sources' order."""
    results: list[list[Hypothesis]] = [[] for _ in pieces]
    for batch in length_batches(pieces, cfg.beam_size, cfg.batch_tokens):
        nbests = _search(model, [pieces[i] for i in batch], src_tok, tgt_tok, cfg, use_cache)
        for position, nbest in zip(batch, nbests, strict=True):
            results[position] = nbest
    return results


def length_batches(
    pieces: Sequence[Sequence[int]], beam_size: int, batch_tokens: int
) -> list[list[int]]:
    """Positions of `pieces`, grouped by length so that padded source tokens x beams stay within
    `batch_tokens` (a piece over the budget alone is a batch of one)."""
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))
    batches: list[list[int]] = []
    for position in order:
        padded = (len(pieces[position]) + 1) * beam_size  # +1: the EOS
        if batches and (len(batches[-1]) + 1) * padded <= batch_tokens:
            batches[-1].append(position)  # sorted, so this piece is the batch's longest
        else:
            batches.append([position])
    return batches


def _search(
    model: StepModel,
    pieces: list[Sequence[int]],
    src_tok: BPETokenizer,
    tgt_tok: BPETokenizer,
    cfg: DecodingConfig,
    use_cache: bool,
) -> list[list[Hypothesis]]:
    device = next(model.parameters()).device
    src, src_mask = encode_sources(pieces, src_tok)
    src, src_mask = src.to(device), src_mask.to(device)
    limits = {"max_len_a": cfg.max_len_a, "max_len_b": cfg.max_len_b}
    common = {
        "no_repeat_ngram_size": cfg.no_repeat_ngram_size,
        "spare_numbers": cfg.no_repeat_spares_numbers,
        "use_cache": use_cache,
    }
    if cfg.beam_size == 1:
        hyps = greedy_search(model, src, src_mask, tgt_tok, **limits, **common)
        return [[hyp] for hyp in hyps]
    return beam_search(
        model,
        src,
        src_mask,
        tgt_tok,
        beam_size=cfg.beam_size,
        nbest=cfg.nbest,
        alpha=cfg.length_penalty,
        prefer_finished=cfg.prefer_finished,
        **limits,
        **common,
    )
