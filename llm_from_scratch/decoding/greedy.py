"""Batched greedy search: every sentence of the batch takes its most probable next token.

Sentences that emit EOS (or reach their length limit) leave the batch, so the remaining steps
only compute the sentences still open.
"""

from __future__ import annotations

import torch
from torch import Tensor

from llm_from_scratch.decoding.common import (
    Hypothesis,
    SpecialIds,
    StepModel,
    next_token_log_probs,
    number_masks,
    output_limits,
)


@torch.inference_mode()
def greedy_search(
    model: StepModel,
    src: Tensor,
    src_mask: Tensor,
    tok: SpecialIds,
    *,
    max_len_a: float,
    max_len_b: int,
    no_repeat_ngram_size: int = 0,
    spare_numbers: bool = True,
    use_cache: bool = True,
) -> list[Hypothesis]:
    """One hypothesis per source row of `src` (batch, src_len), in order.

    `tok` is the target tokenizer: decoding starts from its BOS. `use_cache=False` re-runs the
    decoder over the whole prefix at every step (the reference the cached path must equal).
    """
    memory = model.encode(src, src_mask)  # (batch, src_len, d_model)
    limits = output_limits(src_mask, max_len_a, max_len_b, model.cfg.max_positions)
    cache = model.new_cache() if use_cache else None
    rows = torch.arange(src.size(0), device=src.device)  # sentence of each open row
    prefix = torch.full((src.size(0), 1), tok.bos_id, dtype=torch.long, device=src.device)
    scores = torch.zeros(src.size(0), dtype=torch.float64, device=src.device)
    results: list[Hypothesis | None] = [None] * src.size(0)

    numbers = number_masks(tok, src.device) if spare_numbers else None
    for step in range(int(limits.max())):
        inputs = prefix[:, -1:] if cache is not None else prefix
        logits = model.decode(inputs, memory, src_mask, cache)[:, -1]  # (open, vocab)
        log_probs = next_token_log_probs(logits, prefix[:, 1:], tok, no_repeat_ngram_size, numbers)
        best, tokens = log_probs.max(dim=-1)
        scores += best
        prefix = torch.cat([prefix, tokens[:, None]], dim=1)  # (open, step + 2)

        ended = (tokens == tok.eos_id) | (step + 1 >= limits[rows])
        if not ended.any():
            continue
        for row in ended.nonzero().flatten().tolist():
            generated = prefix[row, 1:].tolist()
            hit_max_len = generated[-1] != tok.eos_id
            results[int(rows[row])] = Hypothesis(
                tokens=generated if hit_max_len else generated[:-1],
                score=float(scores[row]),
                hit_max_len=hit_max_len,
            )
        keep = (~ended).nonzero().flatten()
        if keep.numel() == 0:
            break
        rows, prefix, scores = rows[keep], prefix[keep], scores[keep]
        memory, src_mask = memory[keep], src_mask[keep]
        if cache is not None:
            cache.reorder(keep, cross_indices=keep)

    hypotheses = [result for result in results if result is not None]
    assert len(hypotheses) == len(results), "every row ends by its length limit at the latest"
    return hypotheses
