"""Batched beam search with the GNMT length penalty (Wu et al., 2016).

All sentences' beams are rows of one batch, `row = sentence * beam_size + beam`, so every step is
one decoder call; the cache is reordered to follow each surviving beam's parent. A hypothesis that
emits EOS among a sentence's top `beam_size` candidates is finished; the search of a sentence
stops when no open beam can still beat its n-th best finished hypothesis, or at its length limit.
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
    ranked,
)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's ((5 + length) / 6) ** alpha; scores are divided by it (alpha 0: plain log-prob)."""
    return ((5 + length) / 6) ** alpha


@torch.inference_mode()
def beam_search(
    model: StepModel,
    src: Tensor,
    src_mask: Tensor,
    tok: SpecialIds,
    *,
    beam_size: int,
    nbest: int = 1,
    alpha: float,
    max_len_a: float,
    max_len_b: int,
    no_repeat_ngram_size: int = 0,
    spare_numbers: bool = True,
    use_cache: bool = True,
    prefer_finished: bool = False,
) -> list[list[Hypothesis]]:
    """The `nbest` best hypotheses of each source row of `src` (batch, src_len), best first;
    with `prefer_finished`, those that ended with EOS before any that the length limit cut off."""
    k, device = beam_size, src.device
    limits = output_limits(src_mask, max_len_a, max_len_b, model.cfg.max_positions).tolist()
    # Each source is encoded once, then its memory is repeated for its beams.
    beam_rows = torch.arange(src.size(0), device=device).repeat_interleave(k)
    memory = model.encode(src, src_mask)[beam_rows]  # (batch * k, src_len, d_model)
    src_mask = src_mask[beam_rows]
    cache = model.new_cache() if use_cache else None
    sentences = list(range(src.size(0)))  # the open sentences, in row order
    prefix = torch.full((src.size(0) * k, 1), tok.bos_id, dtype=torch.long, device=device)
    # The k beams of a sentence start identical: only the first may expand at the first step.
    beam_scores = torch.full((src.size(0), k), float("-inf"), dtype=torch.float64, device=device)
    beam_scores[:, 0] = 0.0
    finished: list[list[Hypothesis]] = [[] for _ in sentences]

    numbers = number_masks(tok, device) if spare_numbers else None
    for step in range(max(limits)):
        length = step + 1  # tokens generated once this step's token is appended
        inputs = prefix[:, -1:] if cache is not None else prefix
        logits = model.decode(inputs, memory, src_mask, cache)[:, -1]  # (open * k, vocab)
        log_probs = next_token_log_probs(logits, prefix[:, 1:], tok, no_repeat_ngram_size, numbers)
        # 2k candidates leave k that do not end in EOS even if k of them do.
        top_scores, top_beams, top_tokens = top_candidates(beam_scores, log_probs, 2 * k)
        is_eos = top_tokens == tok.eos_id

        for index, rank in (is_eos[:, :k] & top_scores[:, :k].isfinite()).nonzero().tolist():
            finished[sentences[index]].append(
                Hypothesis(
                    tokens=prefix[index * k + int(top_beams[index, rank]), 1:].tolist(),
                    score=float(top_scores[index, rank]) / length_penalty(length, alpha),
                    hit_max_len=False,
                )
            )

        # The open beams: the k best candidates not ending in EOS, in rank order.
        rank_order = torch.arange(2 * k, device=device)
        chosen = (is_eos.long() * 2 * k + rank_order).argsort(dim=1)[:, :k]  # (open, k)
        beam_scores = top_scores.gather(1, chosen)
        first_rows = torch.arange(len(sentences), device=device)[:, None] * k
        parents = (first_rows + top_beams.gather(1, chosen)).flatten()  # (open * k,)
        prefix = torch.cat([prefix[parents], top_tokens.gather(1, chosen).view(-1, 1)], dim=1)

        keep = []
        best_open = beam_scores[:, 0].tolist()
        for index, sentence in enumerate(sentences):
            if length >= limits[sentence]:  # its open beams end here, unfinished
                rows = range(index * k, (index + 1) * k)
                finished[sentence] += [
                    Hypothesis(
                        tokens=prefix[row, 1:].tolist(),
                        score=score / length_penalty(length, alpha),
                        hit_max_len=True,
                    )
                    for row, score in zip(rows, beam_scores[index].tolist(), strict=True)
                    if score > float("-inf")
                ]
            elif not cannot_improve(
                finished[sentence], best_open[index], limits[sentence], nbest, alpha
            ):
                keep.append(index)
        if not keep:
            break
        kept_rows = None
        if len(keep) < len(sentences):  # drop the finished sentences' rows
            sentences = [sentences[index] for index in keep]
            beam_scores = beam_scores[keep]
            kept = torch.tensor(keep, device=device)
            kept_rows = (kept[:, None] * k + torch.arange(k, device=device)).flatten()
            prefix, parents = prefix[kept_rows], parents[kept_rows]
            memory, src_mask = memory[kept_rows], src_mask[kept_rows]
        if cache is not None:
            # A sentence's beams share one memory, so their cross-attention keys and values need
            # no reordering by parent, only selecting when sentences leave.
            cache.reorder(parents, cross_indices=kept_rows)

    return [ranked(hyps, prefer_finished)[:nbest] for hyps in finished]


def top_candidates(
    beam_scores: Tensor, log_probs: Tensor, count: int
) -> tuple[Tensor, Tensor, Tensor]:
    """The `count` best extensions of each sentence's beams, best first: their scores, beams
    (within the sentence) and tokens, each (sentences, count).

    beam_scores (sentences, k); log_probs (sentences * k, vocab), row = sentence * k + beam. A
    sentence's `count` best candidates are among each of its beams' `count` best tokens, so only
    those are added to the beam scores, not every beam's whole vocabulary.
    """
    sentences, k = beam_scores.shape
    width = min(count, log_probs.size(-1))
    row_scores, row_tokens = log_probs.topk(width, dim=1)  # (sentences * k, width)
    candidates = (beam_scores.view(-1, 1) + row_scores).view(sentences, k * width)
    top_scores, top_ids = candidates.topk(count, dim=1)
    top_tokens = row_tokens.view(sentences, k * width).gather(1, top_ids)
    return top_scores, top_ids // width, top_tokens


def cannot_improve(
    finished: list[Hypothesis], best_open: float, limit: int, nbest: int, alpha: float
) -> bool:
    """True when `nbest` hypotheses are finished and none can be beaten by an open beam.

    An open beam's log-probability only falls as it grows, while the length penalty it will be
    divided by grows at most to that of the length limit; for a negative score, dividing by the
    largest penalty gives the best it can still reach.
    """
    if len(finished) < nbest:
        return False
    nth_best = sorted((h.score for h in finished), reverse=True)[nbest - 1]
    return best_open / length_penalty(limit, alpha) <= nth_best
