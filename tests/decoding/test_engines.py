"""Both engines behind one `SearchModel`: what the translator and the server use of an engine,
asked of the engine, never of its type."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest
import torch

from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.ensemble import Ensemble
from llm_from_scratch.decoding.torch_engine import TorchModel, teacher_forced_attention

PACKAGE = Path(__file__).resolve().parents[2] / "llm_from_scratch"
ENGINE_MODULES = {"decoding/torch_engine.py", "decoding/ctranslate2_engine.py"}
# `Module`: a torch model told apart from the CTranslate2 engine by its base class.
ENGINE_TYPES = {"Seq2SeqTransformer", "Ensemble", "TorchModel", "CTranslate2Model", "Module"}


def _checked_types(node: ast.Call) -> set[str]:
    """The names of the types an `isinstance` call checks against."""
    types = node.args[1] if len(node.args) > 1 else None
    return (
        {
            sub.attr if isinstance(sub, ast.Attribute) else sub.id
            for sub in ast.walk(types)
            if isinstance(sub, ast.Name | ast.Attribute)
        }
        if types is not None
        else set()
    )


def test_no_module_but_the_engines_asks_an_engine_its_type():
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = path.relative_to(PACKAGE).as_posix()
        if module in ENGINE_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            is_check = isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"
            if is_check and _checked_types(node) & ENGINE_TYPES:
                found.append(f"{module}:{node.lineno}")
    assert found == []


def test_the_torch_engine_gives_one_models_attention_and_none_of_an_ensemble(copy_model, tokenizer):
    src_ids = [*tokenizer.encode("the cat"), tokenizer.eos_id]
    tgt_out = [*tokenizer.encode("the cat"), tokenizer.eos_id]
    attention = TorchModel(copy_model, tokenizer, tokenizer).attention(src_ids, tgt_out)
    expected = teacher_forced_attention(copy_model, src_ids, tgt_out, tokenizer.bos_id)
    assert attention is not None
    assert attention.layers == list(range(1, copy_model.cfg.n_decoder_layers + 1))
    assert torch.equal(attention.weights, expected)
    assert attention.weights.shape == (len(attention.layers), len(tgt_out), len(src_ids))
    pair = TorchModel(Ensemble([copy_model, copy_model]), tokenizer, tokenizer)
    assert pair.attention(src_ids, tgt_out) is None


def test_a_hook_between_steps_runs_at_each_step_and_can_stop_the_search(copy_model, tokenizer):
    engine = TorchModel(copy.deepcopy(copy_model), tokenizer, tokenizer)
    calls = []

    def hook() -> None:
        calls.append(len(calls))
        if len(calls) == 3:
            raise Stopped

    engine.call_between_steps(hook)
    with pytest.raises(Stopped):
        engine.decode_pieces([tokenizer.encode("the cat sat")], DecodingConfig(beam_size=1))
    assert len(calls) == 3  # the encoder's call, then the decoder's first two steps


class Stopped(Exception):
    pass
