"""Ensembles: the mean of the members' distributions, decoded by the unchanged searches."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from llm_from_scratch.checkpoint import CheckpointError
from llm_from_scratch.decoding.beam import length_penalty
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.ensemble import Ensemble
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.tokenizer.bpe import BPETokenizer

from .builders import TINY, pad_batch, save_tiny_checkpoint
from .test_search import beam, greedy


def scored(hypotheses) -> list[tuple]:
    return [(h.tokens, pytest.approx(h.score, abs=1e-9), h.hit_max_len) for h in hypotheses]


@pytest.fixture(scope="module")
def wide_model(tokenizer) -> Seq2SeqTransformer:
    """Another member, of a different width, so that the ensemble is not its copy model."""
    torch.manual_seed(1)
    cfg = replace(TINY, d_model=48, d_ff=96, max_positions=40)
    return Seq2SeqTransformer(cfg, tokenizer.vocab_size, tokenizer.vocab_size, tokenizer.pad_id)


@pytest.fixture(scope="module")
def pair(copy_model, wide_model) -> Ensemble:
    return Ensemble([copy_model, wide_model.double().eval()])


@pytest.mark.parametrize("members", [1, 2])
def test_an_ensemble_of_one_model_decodes_like_the_model(copy_model, tokenizer, sources, members):
    ensemble = Ensemble([copy_model] * members)
    assert scored(greedy(ensemble, tokenizer, sources)) == scored(
        greedy(copy_model, tokenizer, sources)
    )
    assert [scored(n) for n in beam(ensemble, tokenizer, sources)] == [
        scored(n) for n in beam(copy_model, tokenizer, sources)
    ]


def test_next_token_distribution_is_the_members_mean(pair, tokenizer, sources):
    src, src_mask = pad_batch(sources, tokenizer.pad_id)
    tgt = torch.cat([torch.full((len(sources), 1), tokenizer.bos_id), src[:, :-1]], dim=1)
    probs = pair.decode(tgt, pair.encode(src, src_mask), src_mask).exp()
    members = [m.decode(tgt, m.encode(src, src_mask), src_mask).softmax(-1) for m in pair.members]
    torch.testing.assert_close(probs, (members[0] + members[1]) / 2, rtol=0, atol=1e-12)
    # It is neither member's: the test would pass for an ensemble that ignored one.
    assert not torch.allclose(probs, members[0]) and not torch.allclose(probs, members[1])


def test_the_smallest_positional_table_bounds_the_ensemble(pair, copy_model, wide_model):
    assert pair.cfg.max_positions == min(copy_model.cfg.max_positions, wide_model.cfg.max_positions)


@pytest.mark.parametrize("no_repeat", [0, 2])
def test_ensemble_cached_equals_uncached_and_batched_equals_one_by_one(
    pair, tokenizer, sources, no_repeat
):
    options = {"no_repeat_ngram_size": no_repeat}
    cached = greedy(pair, tokenizer, sources, **options)
    assert scored(cached) == scored(greedy(pair, tokenizer, sources, use_cache=False, **options))
    assert scored(cached) == [scored(greedy(pair, tokenizer, [s], **options))[0] for s in sources]
    beams = [scored(n) for n in beam(pair, tokenizer, sources, **options)]
    uncached = beam(pair, tokenizer, sources, use_cache=False, **options)
    assert beams == [scored(n) for n in uncached]
    assert beams == [scored(beam(pair, tokenizer, [s], **options)[0]) for s in sources]


def test_ensemble_beam_scores_are_the_ensemble_log_probabilities(pair, tokenizer, sources):
    # Rescoring by teacher forcing: a member whose cache were reordered wrongly would change it.
    for source, nbest in zip(sources, beam(pair, tokenizer, sources, alpha=1.0), strict=True):
        src, src_mask = pad_batch([source], tokenizer.pad_id)
        for hyp in nbest:
            ended = [] if hyp.hit_max_len else [tokenizer.eos_id]
            target = torch.tensor([hyp.tokens + ended])
            tgt_in = torch.cat([torch.tensor([[tokenizer.bos_id]]), target[:, :-1]], dim=1)
            log_probs = pair.decode(tgt_in, pair.encode(src, src_mask), src_mask)
            total = log_probs.gather(-1, target[..., None]).sum().item()
            assert hyp.score == pytest.approx(total / length_penalty(target.size(1), 1.0))


def test_members_with_different_vocabularies_are_refused(copy_model, tokenizer):
    other = Seq2SeqTransformer(TINY, tokenizer.vocab_size + 1, tokenizer.vocab_size, 0)
    with pytest.raises(ValueError, match="different vocabularies"):
        Ensemble([copy_model, other])
    with pytest.raises(ValueError, match="at least one model"):
        Ensemble([])


def test_translator_ensembles_checkpoints_with_the_same_tokenizers(checkpoint, tmp_path):
    texts = ["the cat sat.", "a dog ran to the park."]
    greedy_decode = DecodingConfig(beam_size=1)
    single = Translator.from_checkpoint(checkpoint, "cpu", greedy_decode)
    doubled = Translator.from_checkpoint(checkpoint, "cpu", greedy_decode, ensemble=[checkpoint])
    assert isinstance(doubled.model.model, Ensemble)
    assert [t.text for t in doubled.translate(texts)] == [t.text for t in single.translate(texts)]

    other_tok = BPETokenizer.train(["something else entirely."] * 3, vocab_size=300)
    stranger = save_tiny_checkpoint(tmp_path / "other.pt", other_tok)
    with pytest.raises(CheckpointError, match=r"other\.pt cannot .* tokenizers differ"):
        Translator.from_checkpoint(checkpoint, "cpu", ensemble=[stranger])
