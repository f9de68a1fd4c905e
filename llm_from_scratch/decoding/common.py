"""What greedy and beam search share: the result type, the output-length limit and the
constraints applied to every step's next-token distribution; and the `SearchModel` protocol both
engines offer the `Translator`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import torch
from torch import Tensor

from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.tokenizer.bpe import BPETokenizer, NumberIds

# The longest run of digit and separator tokens the no-repeat ban spares: 1,000,000,000,000 spelled
# a character a token. Past it a run of digits is a loop, not a number, and the ban applies.
MAX_SPARED_NUMBER_RUN = 16


class StepModel(Protocol):
    """What greedy and beam search call at each step: a `Seq2SeqTransformer` or an `Ensemble`."""

    cfg: ModelConfig

    def encode(self, src: Tensor, src_mask: Tensor) -> Tensor: ...

    def decode(self, tgt: Tensor, memory: Tensor, src_mask: Tensor, cache: Any) -> Tensor: ...

    def new_cache(self) -> Any: ...


class SpecialIds(Protocol):
    """The special-token ids a search needs; a `BPETokenizer` provides them."""

    @property
    def pad_id(self) -> int: ...

    @property
    def bos_id(self) -> int: ...

    @property
    def eos_id(self) -> int: ...

    @property
    def number_ids(self) -> NumberIds: ...

    @property
    def vocab_size(self) -> int: ...


@dataclass
class Hypothesis:
    """One output of a search."""

    tokens: list[int]  # generated target ids, without BOS and EOS
    score: float  # log-probability; beam search divides it by the GNMT length penalty
    hit_max_len: bool  # stopped by the length limit rather than by emitting EOS


class Attention(NamedTuple):
    """Cross-attention of a sentence pair, heads averaged."""

    layers: list[int]  # decoder layers, from 1
    weights: Tensor  # (layers, target tokens, source tokens)


class SearchModel(Protocol):
    """What a `Translator` searches with, whichever the engine: `TorchModel` (a checkpoint's
    model, or an ensemble) or `CTranslate2Model` (an export)."""

    name: str  # the engine's: torch, ctranslate2
    cfg: ModelConfig
    src_tok: BPETokenizer
    tgt_tok: BPETokenizer
    device: torch.device
    autocasts: bool  # whether torch's autocast (decoding.precision) applies to its searches

    def decode_pieces(
        self, pieces: Sequence[Sequence[int]], cfg: DecodingConfig
    ) -> list[list[Hypothesis]]:
        """The n-best hypotheses of each source (token ids without EOS), in order."""
        ...

    def attention(self, src_ids: Sequence[int], tgt_out: Sequence[int]) -> Attention | None:
        """The cross-attention of `tgt_out` forced as the output for `src_ids` (EOS included in
        both); None where no one model's attention exists (an ensemble)."""
        ...

    def call_between_steps(self, hook: Callable[[], None]) -> None:
        """Call `hook` between decoding steps from now on, where the engine can (torch's
        searches: at each encoder and decoder call; CTranslate2 decodes a batch in one call)."""
        ...


def ranked(hypotheses: list[Hypothesis], prefer_finished: bool) -> list[Hypothesis]:
    """`hypotheses` best first: by score, or with `prefer_finished` every one that ended with EOS
    before any that the length limit cut off, each group by score."""
    return sorted(
        hypotheses, key=lambda h: (prefer_finished and not h.hit_max_len, h.score), reverse=True
    )


def output_limits(src_mask: Tensor, a: float, b: int, max_positions: int) -> Tensor:
    """(batch,) most tokens each sentence may generate: a * src_len + b, src_len counting the
    source's EOS. Capped so that the decoder's input (BOS + all but the last output token) stays
    within the model's positional table."""
    src_lengths = src_mask.sum(dim=1).double()
    return (a * src_lengths + b).floor().long().clamp(1, max_positions)


def number_masks(tok: SpecialIds, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """(vocab,) masks of `tok.number_ids`: zeros, digits (the zeros included) and separators."""
    masks = []
    for ids in tok.number_ids:
        mask = torch.zeros(tok.vocab_size, dtype=torch.bool, device=device)
        mask[list(ids)] = True
        masks.append(mask)
    return masks[0], masks[1], masks[2]


def next_token_log_probs(
    logits: Tensor,
    generated: Tensor,
    tok: SpecialIds,
    no_repeat_ngram_size: int,
    numbers: tuple[Tensor, Tensor, Tensor] | None = None,
) -> Tensor:
    """logits (rows, vocab) → log-probabilities with the forbidden tokens at -inf.

    BOS and PAD are never outputs; with `no_repeat_ngram_size` = n, neither is a token that would
    repeat an n-gram already in the row's `generated` ids (rows, steps), unless the n-gram is
    made of a number's pieces (`numbers`, from `number_masks`) and either holds a zero (10000 and
    1,000,000 repeat 0 0 0 within one number) or repeats one of an earlier number (1998 after
    1995 repeats 1 9 9) when digits are tokens of their own. A row whose output already ends in
    `MAX_SPARED_NUMBER_RUN` such tokens is spared no more. Within one number other digits may
    not repeat an n-gram: 1 6 6 6 6 6… is a loop.
    """
    if no_repeat_ngram_size > 0:
        # Banned before the softmax, so the allowed tokens share all of the probability, as in
        # CTranslate2's search: the exported model then scores and ranks hypotheses the same.
        logits = logits.clone()
        _ban_repeated_ngrams(logits, generated, no_repeat_ngram_size, numbers)
    log_probs = log_softmax_upcast(logits)
    log_probs[:, [tok.bos_id, tok.pad_id]] = float("-inf")
    return log_probs


def log_softmax_upcast(logits: Tensor) -> Tensor:
    """log_softmax over the last dimension, half-precision logits upcast to float32 so that
    scores summed over many steps stay accurate."""
    return logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(dim=-1)


def _ban_repeated_ngrams(
    logits: Tensor, generated: Tensor, n: int, numbers: tuple[Tensor, Tensor, Tensor] | None
) -> None:
    """Set to -inf, in each row of `logits`, every token that would complete an n-gram of the
    row's `generated` ids a second time, numbers up to `MAX_SPARED_NUMBER_RUN` tokens spared. One
    pass over all rows: this runs at every step."""
    steps = generated.size(1)
    if steps < n:
        return  # no complete n-gram yet
    windows = generated.unfold(1, n, 1)  # (rows, steps - n + 1, n): every n-gram so far
    context = generated[:, steps - n + 1 :]  # the n - 1 ids a new n-gram would start with
    repeats = (windows[:, :, :-1] == context[:, None, :]).all(dim=-1)
    if numbers is not None:
        zeros, digits, separators = numbers
        is_digit = digits[generated]  # (rows, steps), each token looked up once
        number_tokens = is_digit | separators[generated]
        in_number = number_tokens.unfold(1, n, 1).all(dim=-1)
        holds_zero = zeros[generated].unfold(1, n, 1).any(dim=-1)
        holds_digit = is_digit.unfold(1, n, 1).any(dim=-1)
        # The number being written: the output's trailing run of number tokens. A window of
        # number tokens that starts before it lies wholly in an earlier number.
        trailing_run = number_tokens.flip(1).long().cumprod(dim=1).sum(dim=1)
        run_start = (steps - trailing_run)[:, None]
        in_earlier_number = torch.arange(windows.size(1), device=generated.device) < run_start
        still_a_number = (trailing_run < MAX_SPARED_NUMBER_RUN)[:, None]
        spared = in_number & still_a_number & (holds_zero | (holds_digit & in_earlier_number))
        repeats &= ~spared
    banned = torch.zeros(logits.shape, dtype=torch.int32, device=logits.device)
    banned.scatter_add_(1, windows[:, :, -1], repeats.to(torch.int32))
    logits.masked_fill_(banned > 0, float("-inf"))
