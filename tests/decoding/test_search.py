"""Greedy and beam search on the tiny copy model (see builders.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from llm_from_scratch.decoding import beam as beam_module
from llm_from_scratch.decoding.beam import beam_search, length_penalty, top_candidates
from llm_from_scratch.decoding.common import (
    MAX_SPARED_NUMBER_RUN,
    Hypothesis,
    next_token_log_probs,
    number_masks,
)
from llm_from_scratch.decoding.greedy import greedy_search
from llm_from_scratch.evaluation.report import has_repeated_ngram

from .builders import TINY, content_ids, pad_batch, tiny_tokenizer

LIMITS = {"max_len_a": 1.0, "max_len_b": 5}


def greedy(model, tok, sources, **kwargs) -> list[Hypothesis]:
    src, src_mask = pad_batch(sources, tok.pad_id)
    return greedy_search(model, src, src_mask, tok, **{**LIMITS, **kwargs})


def beam(model, tok, sources, **kwargs) -> list[list[Hypothesis]]:
    src, src_mask = pad_batch(sources, tok.pad_id)
    options = {"beam_size": 4, "nbest": 3, "alpha": 0.6, **LIMITS, **kwargs}
    return beam_search(model, src, src_mask, tok, **options)


def as_tuples(hypotheses: list[Hypothesis]) -> list[tuple]:
    return [(h.tokens, round(h.score, 9), h.hit_max_len) for h in hypotheses]


def test_fixture_exercises_both_endings(copy_model, tokenizer, sources):
    # The other tests only mean something if some outputs end with EOS and others hit the limit.
    endings = {h.hit_max_len for h in greedy(copy_model, tokenizer, sources)}
    assert endings == {True, False}


@pytest.mark.parametrize("search", [greedy, beam])
def test_decoding_starts_from_bos_not_from_the_source(copy_model, tokenizer, sources, search):
    first_inputs = []
    decode = copy_model.decode

    def spy(tgt, *args, **kwargs):
        if not first_inputs:
            first_inputs.append(tgt.clone())
        return decode(tgt, *args, **kwargs)

    copy_model.decode = spy
    try:
        search(copy_model, tokenizer, sources)
    finally:
        del copy_model.decode
    assert first_inputs[0].shape[1] == 1
    assert first_inputs[0].flatten().tolist() == [tokenizer.bos_id] * first_inputs[0].size(0)


def test_greedy_batched_equals_one_by_one(copy_model, tokenizer, sources):
    batched = greedy(copy_model, tokenizer, sources)
    single = [greedy(copy_model, tokenizer, [source])[0] for source in sources]
    assert as_tuples(batched) == as_tuples(single)


def test_beam_batched_equals_one_by_one(copy_model, tokenizer, sources):
    batched = beam(copy_model, tokenizer, sources)
    single = [beam(copy_model, tokenizer, [source])[0] for source in sources]
    assert [as_tuples(n) for n in batched] == [as_tuples(n) for n in single]


@pytest.mark.parametrize("no_repeat", [0, 2])
def test_cached_equals_uncached(copy_model, tokenizer, sources, no_repeat):
    options = {"no_repeat_ngram_size": no_repeat}
    cached = greedy(copy_model, tokenizer, sources, **options)
    uncached = greedy(copy_model, tokenizer, sources, use_cache=False, **options)
    assert as_tuples(cached) == as_tuples(uncached)
    cached_beams = beam(copy_model, tokenizer, sources, **options)
    uncached_beams = beam(copy_model, tokenizer, sources, use_cache=False, **options)
    assert [as_tuples(n) for n in cached_beams] == [as_tuples(n) for n in uncached_beams]


@pytest.mark.parametrize("no_repeat", [0, 2, 3])
def test_beam_size_one_equals_greedy(copy_model, tokenizer, sources, no_repeat):
    # With a length penalty, beam search may rightly look past an early EOS; without, a single
    # beam must take greedy's every step, under the same constraints.
    options = {"no_repeat_ngram_size": no_repeat}
    greedy_hyps = greedy(copy_model, tokenizer, sources, **options)
    beam_hyps = beam(copy_model, tokenizer, sources, beam_size=1, nbest=1, alpha=0.0, **options)
    assert as_tuples(greedy_hyps) == [as_tuples(n)[0] for n in beam_hyps]


def test_greedy_stops_when_every_sentence_is_done(copy_model, tokenizer, sources):
    # The sentences greedy ends with EOS end the same way under a far looser length limit.
    hyps = greedy(copy_model, tokenizer, sources)
    sources = [source for source, hyp in zip(sources, hyps, strict=True) if not hyp.hit_max_len]
    calls = []
    decode = copy_model.decode
    copy_model.decode = lambda *args, **kwargs: calls.append(1) or decode(*args, **kwargs)
    try:
        hyps = greedy(copy_model, tokenizer, sources, max_len_b=50)
    finally:
        del copy_model.decode
    assert not any(h.hit_max_len for h in hyps)
    assert len(calls) == max(len(h.tokens) + 1 for h in hyps)  # the last step emits EOS


@pytest.mark.parametrize("search", [greedy, beam])
def test_output_length_follows_a_times_source_length_plus_b(copy_model, tokenizer, sources, search):
    results = search(copy_model, tokenizer, sources, max_len_a=0.5, max_len_b=1)
    for source, result in zip(sources, results, strict=True):
        hyps = result if isinstance(result, list) else [result]
        limit = int(0.5 * len(source) + 1)  # the source's EOS counts
        for hyp in hyps:
            assert len(hyp.tokens) <= limit
            assert hyp.hit_max_len == (len(hyp.tokens) == limit)


def test_no_repeat_ngram_size_removes_repeats(copy_model, tokenizer, sources):
    plain = greedy(copy_model, tokenizer, sources)
    assert any(has_repeated_ngram(h.tokens, 2) for h in plain)  # else the test proves nothing
    for h in greedy(copy_model, tokenizer, sources, no_repeat_ngram_size=2):
        assert not has_repeated_ngram(h.tokens, 2)
    for nbest in beam(copy_model, tokenizer, sources, no_repeat_ngram_size=2):
        for h in nbest:
            assert not has_repeated_ngram(h.tokens, 2)


class LoopingModel(torch.nn.Module):
    """Whatever the source and prefix, the same next-token logits: a few favourite tokens, best
    first, EOS worst. Left alone, a search repeats the first favourite to the length limit."""

    cfg = TINY

    def __init__(self, tok, favourites: int = 4) -> None:
        super().__init__()
        logits = torch.zeros(tok.vocab_size, dtype=torch.float64)
        logits[content_ids(tok)[:favourites]] = torch.arange(favourites, 0, -1).double() * 3
        logits[tok.eos_id] = -30.0
        self.logits = logits

    def encode(self, src, src_mask):
        return torch.zeros(*src.shape, 1, dtype=torch.float64)

    def decode(self, tgt, memory, src_mask, cache):
        return self.logits.expand(*tgt.shape, -1)

    def new_cache(self):
        return None  # the searches then re-run the whole prefix, which this model ignores


@pytest.mark.parametrize("n", [2, 3, 4])
def test_no_repeat_ngram_stops_a_model_that_loops(tokenizer, sources, n):
    model, long_outputs = LoopingModel(tokenizer), {"max_len_b": 30}
    plain = greedy(model, tokenizer, sources, **long_outputs)
    assert all(has_repeated_ngram(h.tokens, n) for h in plain)  # the model does loop
    for h in greedy(model, tokenizer, sources, no_repeat_ngram_size=n, **long_outputs):
        assert len(h.tokens) > 3 * n and not has_repeated_ngram(h.tokens, n)
    for nbest in beam(model, tokenizer, sources, no_repeat_ngram_size=n, **long_outputs):
        for h in nbest:
            assert len(h.tokens) > 3 * n and not has_repeated_ngram(h.tokens, n)


def test_prefer_finished_ranks_ended_hypotheses_before_those_the_limit_cut(tokenizer, sources):
    model = LoopingModel(tokenizer)
    model.logits[tokenizer.eos_id] = 10.5  # second to the favourite: some beam ends every step
    plain = beam(model, tokenizer, sources, nbest=4)
    preferred = beam(model, tokenizer, sources, nbest=4, prefer_finished=True)
    for scored, chosen in zip(plain, preferred, strict=True):
        ended = [h for h in scored if not h.hit_max_len]
        assert scored[0].hit_max_len and ended  # the best scored was cut, though others ended
        assert not chosen[0].hit_max_len and chosen[0].score >= max(h.score for h in ended)
        flags = [h.hit_max_len for h in chosen]
        assert flags == sorted(flags)  # every ended one before any cut one
        for group in (False, True):
            scores = [h.score for h in chosen if h.hit_max_len == group]
            assert scores == sorted(scores, reverse=True)


class FixedLogitsModel(LoopingModel):
    """LoopingModel with chosen favourite tokens, best first."""

    def __init__(self, tok, favourites: list[int]) -> None:
        super().__init__(tok)
        self.logits = torch.zeros(tok.vocab_size, dtype=torch.float64)
        self.logits[favourites] = torch.arange(len(favourites), 0, -1).double() * 3
        self.logits[tok.eos_id] = -30.0


def test_the_zeros_of_a_number_are_spared_by_the_no_repeat_ban(sources):
    tok = tiny_tokenizer(("10000 yen", "1,000,000 people", "２００００円", "a b c d"))
    [zero] = [i for i in tok.number_ids.zeros if tok.token_text(i) == "0"]
    [comma] = [i for i in tok.number_ids.separators if tok.token_text(i) == ","]
    [a] = tok.encode("a")
    assert a not in tok.number_ids.digits | tok.number_ids.separators
    long_outputs = {"max_len_b": 30, "no_repeat_ngram_size": 3}
    # 0 0 0 0 ... and 0 0 0 , 0 0 0 , ... repeat 3-grams, as numbers do: both are allowed.
    for favourites in ([zero], [zero, comma]):
        model = FixedLogitsModel(tok, favourites)
        for h in greedy(model, tok, sources, **long_outputs):
            assert h.tokens[:8] == [zero] * 8
        for nbest in beam(model, tok, sources, **long_outputs):
            assert nbest[0].tokens[:8] == [zero] * 8
    # Past the longest number the ban spares, a run of zeros is a loop and is stopped.
    run = MAX_SPARED_NUMBER_RUN
    model = FixedLogitsModel(tok, [zero])
    for h in greedy(model, tok, sources, **long_outputs):
        assert h.tokens[: run + 1] != [zero] * (run + 1) and h.tokens[:run] == [zero] * run
    for nbest in beam(model, tok, sources, **long_outputs):
        assert nbest[0].tokens[: run + 1] != [zero] * (run + 1)
    # A loop of any other token is still stopped at its second 3-gram.
    for h in greedy(FixedLogitsModel(tok, [a, zero]), tok, sources, **long_outputs):
        assert h.tokens[:4] == [a, a, a, zero]  # a fourth "a" would repeat "a a a"
    # Unspared (as `decoding.avoid_loops`'s last search asks), zeros are stopped like any token.
    unspared = {**long_outputs, "spare_numbers": False}
    for h in greedy(model, tok, sources, **unspared):
        assert h.tokens[:3] == [zero] * 3 and h.tokens[3] != zero
    for nbest in beam(model, tok, sources, **unspared):
        assert nbest[0].tokens[:3] == [zero] * 3 and nbest[0].tokens[3] != zero


def banned_after(tok, text: str, n: int = 3) -> set[str]:
    """The tokens the no-repeat ban forbids after the output `text`, as text."""
    generated = torch.tensor([tok.encode(text)])
    logits = torch.zeros(1, tok.vocab_size)
    log_probs = next_token_log_probs(logits, generated, tok, n, number_masks(tok, logits.device))
    specials = {tok.bos_id, tok.pad_id}
    return {tok.token_text(i) for i in range(tok.vocab_size) if log_probs[0, i].isinf()} - {
        tok.token_text(i) for i in specials
    }


def test_numbers_that_share_digits_are_spared_and_what_follows_them_is_not():
    tok = tiny_tokenizer(
        ("From 1995 to 1998.", "１９９５年から１９９８年", "1666 and 1666.", "a b c d")
    )
    assert [tok.token_text(i) for i in tok.encode("1995")] == ["1", "9", "9", "5"]
    # 1998 after 1995 repeats "1 9 9", in either script: the years must both be writable.
    assert banned_after(tok, "From 1995 to 19") == set()
    assert banned_after(tok, "１９９５年から１９") == set()
    # An n-gram that leaves the number is banned as any other: no "9 5 年" loop, no "a b c".
    after_the_year = tok.token_text(tok.encode("１９９５年から")[4])
    assert after_the_year.startswith("年")
    assert banned_after(tok, "１９９５年から１９９５") == {after_the_year}
    assert banned_after(tok, "a b c d b c") == {" d"}
    # Within one number only zeros may repeat: 1 6 6 6 6… is a loop; a second 1666 is not,
    # though what followed the first may not follow it again.
    assert banned_after(tok, "1666") == {"6"}
    assert banned_after(tok, "1666 and 166") == {" and"}


def test_nbest_are_distinct_and_best_first(copy_model, tokenizer, sources):
    for nbest in beam(copy_model, tokenizer, sources):
        assert len(nbest) == 3
        assert len({tuple(h.tokens) for h in nbest}) == 3
        assert [h.score for h in nbest] == sorted((h.score for h in nbest), reverse=True)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_beam_scores_are_length_penalised_log_probabilities(copy_model, tokenizer, sources, alpha):
    # Rescoring each hypothesis by teacher forcing checks the beam bookkeeping: a wrong parent
    # index or cache reorder would pair tokens with scores they did not earn.
    for source, nbest in zip(
        sources, beam(copy_model, tokenizer, sources, alpha=alpha), strict=True
    ):
        src, src_mask = pad_batch([source], tokenizer.pad_id)
        for hyp in nbest:
            outputs = hyp.tokens if hyp.hit_max_len else [*hyp.tokens, tokenizer.eos_id]
            tgt_in = torch.tensor([[tokenizer.bos_id, *outputs[:-1]]])
            log_probs = copy_model(src, src_mask, tgt_in).log_softmax(-1)[0]
            total = log_probs[torch.arange(len(outputs)), torch.tensor(outputs)].sum().item()
            assert hyp.score == pytest.approx(total / length_penalty(len(outputs), alpha))


def test_length_penalty_is_gnmt():
    assert length_penalty(1, 0.6) == 1.0
    assert length_penalty(7, 0.5) == pytest.approx(2**0.5)
    assert length_penalty(20, 0.0) == 1.0


def count_decoded_rows(model, search, *args, **kwargs) -> tuple[int, object]:
    """The search's result, and the rows (hypotheses) the decoder was run on over all steps."""
    rows = []
    decode = model.decode
    model.decode = lambda tgt, *a, **k: rows.append(tgt.size(0)) or decode(tgt, *a, **k)
    try:
        result = search(model, *args, **kwargs)
    finally:
        del model.decode
    return sum(rows), result


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_early_stop_changes_nothing_but_the_work(
    copy_model, tokenizer, sources, monkeypatch, alpha
):
    options = {"alpha": alpha, "max_len_b": 20}
    early_rows, early = count_decoded_rows(copy_model, beam, tokenizer, sources, **options)
    monkeypatch.setattr(beam_module, "cannot_improve", lambda *args: False)
    full_rows, full = count_decoded_rows(copy_model, beam, tokenizer, sources, **options)
    assert [as_tuples(n) for n in early] == [as_tuples(n) for n in full]
    assert early_rows < full_rows


@pytest.mark.parametrize("vocab", [3, 50])  # 3: fewer tokens than candidates asked for
def test_top_candidates_equal_scoring_every_beams_whole_vocabulary(vocab):
    generator = torch.Generator().manual_seed(0)
    sentences, k = 6, 4
    beam_scores = -torch.rand(sentences, k, generator=generator, dtype=torch.float64) * 5
    beam_scores[0, 1:] = float("-inf")  # a first step: only one beam may expand
    log_probs = torch.randn(sentences * k, vocab, generator=generator).log_softmax(dim=-1)
    log_probs[:, 0] = float("-inf")  # a forbidden token

    scores, beams, tokens = top_candidates(beam_scores, log_probs, 2 * k)

    every = (beam_scores.view(-1, 1) + log_probs).view(sentences, k * vocab)
    expected_scores, expected_ids = every.topk(2 * k, dim=1)
    assert torch.equal(scores, expected_scores)
    finite = scores.isfinite()  # the order of -inf ties is arbitrary
    assert torch.equal(beams[finite], (expected_ids // vocab)[finite])
    assert torch.equal(tokens[finite], (expected_ids % vocab)[finite])


def _reference_ban(logits, generated, n):
    """The rule written out one row and one n-gram at a time."""
    for row, tokens in enumerate(generated.tolist()):
        context = tokens[len(tokens) - n + 1 :]
        for start in range(len(tokens) - n + 1):
            if tokens[start : start + n - 1] == context:
                logits[row, tokens[start + n - 1]] = float("-inf")


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_the_ngram_ban_equals_the_rule_written_out(n):
    specials = SimpleNamespace(bos_id=7, pad_id=8)  # never outputs; the ban's tokens are 0-3
    generator = torch.Generator().manual_seed(n)
    for steps in range(0, 12):
        generated = torch.randint(0, 4, (6, steps), generator=generator)  # small vocab: repeats
        logits = torch.randn(6, 9, generator=generator)
        expected = logits.clone()
        expected[:, [specials.bos_id, specials.pad_id]] = float("-inf")
        if steps >= n:
            _reference_ban(expected, generated, n)
        log_probs = next_token_log_probs(logits, generated, specials, n)
        assert torch.equal(log_probs.isinf(), expected.isinf())


class NeverEnds:
    """A model whose every step's likeliest token is the next of a cycle of ordinary tokens,
    never EOS: each output runs to its length limit."""

    cfg = TINY

    def __init__(self, tok) -> None:
        self.tok, self.cycle = tok, content_ids(tok)[:5]

    def encode(self, src, src_mask):
        return torch.zeros(*src.shape, 4)

    def new_cache(self):
        return None

    def decode(self, tgt, memory, src_mask, cache):
        logits = torch.zeros(tgt.size(0), tgt.size(1), self.tok.vocab_size)
        steps = torch.arange(tgt.size(1))
        logits[:, steps, torch.tensor(self.cycle)[steps % len(self.cycle)]] = 5.0
        return logits


@pytest.mark.parametrize("search", [greedy, beam])
def test_a_model_that_never_ends_is_stopped_at_the_limit_relative_to_its_source(search):
    tok = tiny_tokenizer()
    model = NeverEnds(tok)
    sources = [[7] * 4, [7] * 12]  # EOS included: limits 1.5 * 4 + 10 and 1.5 * 12 + 10
    results = search(model, tok, sources, max_len_a=1.5, max_len_b=10, use_cache=False)
    for result, limit in zip(results, (16, 28), strict=True):
        for hyp in result if isinstance(result, list) else [result]:
            assert (len(hyp.tokens), hyp.hit_max_len) == (limit, True)
            assert tok.eos_id not in hyp.tokens
