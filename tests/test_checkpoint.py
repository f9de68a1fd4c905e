"""Checkpoints for inference: version-1 files still translate, altered tokenizers and weights that
do not fit are refused with one-line errors. (Resuming training: tests/training/test_trainer.py.)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import (
    CheckpointError,
    inference_state,
    load_checkpoint,
    restore_for_inference,
    save_checkpoint,
)
from llm_from_scratch.data.config import (
    CleaningConfig,
    CorpusConfig,
    DataConfig,
    DataFile,
    LoadingConfig,
)
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.programs.train import TrainConfig
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.tokenizer.file_format import TokenizerError, canonical_json
from llm_from_scratch.training.config import TrainingConfig
from tests.decoding.builders import (
    MISFIT_MESSAGES,
    TINY,
    misfit_weights,
    tiny_tokenizer,
    train_copy_model,
)

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["The cat sat on the mat.", "a dog ran to the park.", "これはテストです。", "mat", ""]
URL = "https://example.invalid/corpus/"

# A run's config as a version-1 checkpoint stored it (the layout of commit e338209): groups
# `trainer` and `decode`, the data settings flat and with the directories, `tokenizer.dir`,
# `trainer.run_dir`. The model group did not change.
V1_CONFIG = {
    "name": "old_run",
    "data": {
        "name": "copy",
        "source": "urls",
        "files": [
            {"name": "train.en", "url": URL + "train.en", "bytes": None, "sha256": None},
            {"name": "train.ja", "url": URL + "train.ja", "bytes": None, "sha256": None},
        ],
        "hub_id": None,
        "hub_config": None,
        "mirror": None,
        "raw_dir": "data/raw",
        "src_lang": "en",
        "tgt_lang": "ja",
        "format": "parallel",
        "splits": {"train": "train", "dev": "dev", "test": "test"},
        "src_column": "en",
        "tgt_column": "ja",
        "split_seed": 1234,
        "dev_fraction": 0.01,
        "test_fraction": 0.01,
        "extra_train": [],
        "detokenize_ja": True,
        "source_style": "lowercase_tokenized",
        "max_tokens": 64,
        "max_length_ratio": 3.0,
        "cache_dir": "data/cache",
        "num_proc": 1,
        "batch_tokens": 2048,
        "pool_size": 65536,
        "shuffle_seed": 1234,
        "num_workers": 0,
        "bpe_dropout": 0.0,
    },
    "tokenizer": {
        "vocab_size": 300,
        "shared": False,
        "character_coverage": 0.9995,
        "normalization": "nfkc",
        "pretokenizer": "okurigana",
        "special_tokens": [],
        "dir": "data/tokenizers",
    },
    "model": dataclasses.asdict(TINY),
    "trainer": {
        "run_dir": "runs/old_run",
        "seed": 1234,
        "device": "auto",
        "precision": "auto",
        "compile": False,
        "max_steps": 4200,
        "max_epochs": None,
        "max_time": None,
        "lr": 5e-4,
        "weight_decay": 0.01,
        "schedule": "cosine",
        "warmup_steps": 1000,
        "label_smoothing": 0.1,
        "accumulation_steps": 1,
        "clip_norm": 1.0,
        "eval_every": 500,
        "save_every": 500,
        "keep_snapshots": 5,
        "patience": None,
        "log_every": 50,
        "dev_bleu_sentences": 500,
        "max_nonfinite": 20,
    },
    "decode": {
        "beam_size": 3,
        "nbest": 1,
        "length_penalty": 0.6,
        "max_len_a": 1.0,
        "max_len_b": 5,
        "no_repeat_ngram_size": 0,
        "batch_tokens": 8000,
    },
}


def run_config() -> TrainConfig:
    """The run of `V1_CONFIG` in the current layout."""
    return TrainConfig(
        name="old_run",
        data=DataConfig(
            name="copy",
            files=[DataFile("train.en", URL + "train.en"), DataFile("train.ja", URL + "train.ja")],
            corpus=CorpusConfig(
                splits={"train": "train", "dev": "dev", "test": "test"},
                detokenize_ja=True,
                source_style="lowercase_tokenized",
            ),
            cleaning=CleaningConfig(max_tokens=64),
            loading=LoadingConfig(batch_tokens=2048, num_proc=1),
        ),
        tokenizer=TokenizerConfig(vocab_size=300),
        model=TINY,
        training=TrainingConfig(
            compile="false",  # a bool before `auto` existed
            max_steps=4200,
            max_time=None,
            lr=5e-4,
            warmup_steps=1000,
            save_every=500,
            keep_snapshots=5,
            schedule="cosine",  # the run's own, not today's default
        ),
        decoding=DecodingConfig(
            beam_size=3, length_penalty=0.6, max_len_a=1.0, max_len_b=5, no_repeat_ngram_size=0
        ),
    )


@pytest.fixture(scope="module")
def tokenizer() -> BPETokenizer:
    return tiny_tokenizer(
        ("the cat sat on the mat .", "これはテストです。", "a dog ran to the park .")
    )


@pytest.fixture(scope="module")
def model(tokenizer: BPETokenizer) -> Seq2SeqTransformer:
    """Trained briefly to copy its input, so that outputs end at EOS, not all at the limit."""
    return train_copy_model(tokenizer).float()


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, model, tokenizer) -> dict[int, Path]:
    """The same weights and tokenizers saved as a version-1 and as a version-2 checkpoint."""
    directory = tmp_path_factory.mktemp("checkpoints")
    save_checkpoint(directory / "v2.pt", inference_state(model, tokenizer, tokenizer, run_config()))
    version_1 = {
        "format_version": 1,
        "model": model.state_dict(),
        "config": V1_CONFIG,
        "tokenizers": {"src": tokenizer.to_json(), "tgt": tokenizer.to_json()},
        "tokenizer_hashes": {"src": tokenizer.hash, "tgt": tokenizer.hash},
    }
    torch.save(version_1, directory / "v1.pt")
    return {1: directory / "v1.pt", 2: directory / "v2.pt"}


def resaved(state: dict, path: Path) -> Path:
    torch.save(state, path)
    return path


def test_version_1_config_is_upgraded_to_the_current_layout(checkpoints):
    state = load_checkpoint(checkpoints[1])
    assert state["format_version"] == 1
    config = state["config"]
    assert {"trainer", "decode"}.isdisjoint(config)
    assert {"raw_dir", "cache_dir", "max_tokens", "batch_tokens"}.isdisjoint(config["data"])
    assert "dir" not in config["tokenizer"] and "run_dir" not in config["training"]
    # Every setting lands where the current schema has it (an unknown key would be an error).
    assert to_schema(config, TrainConfig) == run_config()


def test_version_1_checkpoint_restores_like_version_2(checkpoints):
    (old_model, old_src, old_tgt, old_config), (new_model, new_src, new_tgt, new_config) = (
        restore_for_inference(load_checkpoint(checkpoints[v])) for v in (1, 2)
    )
    assert (old_src.hash, old_tgt.hash) == (new_src.hash, new_tgt.hash)
    new_weights = new_model.state_dict()
    assert all(
        torch.equal(value, new_weights[name]) for name, value in old_model.state_dict().items()
    )
    # Settings added since version 1 (decoding.precision, data.corpus.group_column) take their
    # defaults.
    decoding = [
        to_schema(config["decoding"], DecodingConfig) for config in (old_config, new_config)
    ]
    assert decoding[0] == decoding[1]
    corpus = [
        to_schema(config["data"]["corpus"], CorpusConfig) for config in (old_config, new_config)
    ]
    assert corpus[0] == corpus[1]


@pytest.mark.parametrize("decode", [None, DecodingConfig(beam_size=1)], ids=["run's", "greedy"])
def test_version_1_checkpoint_translates_like_version_2(checkpoints, decode):
    old, new = (Translator.from_checkpoint(checkpoints[v], "cpu", decode) for v in (1, 2))
    assert old.decode == new.decode == (decode or run_config().decoding)
    assert old.conventions.source_style == new.conventions.source_style == "lowercase_tokenized"
    assert old.conventions.joiner == new.conventions.joiner == ""
    old_translations, new_translations = old.translate(TEXTS), new.translate(TEXTS)
    assert [t.candidates for t in old_translations] == [t.candidates for t in new_translations]
    assert not all(c.hit_max_len for t in new_translations for c in t.candidates)


def swap_two_characters(tokenizer_json: dict) -> None:
    alphabet = tokenizer_json["alphabet"]
    alphabet[0], alphabet[1] = alphabet[1], alphabet[0]


def change_normalization(tokenizer_json: dict) -> None:
    assert tokenizer_json["normalization"] == "nfkc"
    tokenizer_json["normalization"] = "none"


@pytest.mark.parametrize("alter", [swap_two_characters, change_normalization])
@pytest.mark.parametrize("side", ["src", "tgt"])
def test_altered_tokenizer_is_refused(checkpoints, tokenizer, tmp_path, side, alter):
    state = load_checkpoint(checkpoints[2])
    tokenizer_json = json.loads(state["tokenizers"][side])
    alter(tokenizer_json)
    state["tokenizers"][side] = json.dumps(tokenizer_json, ensure_ascii=False)
    altered = BPETokenizer.from_json(state["tokenizers"][side])
    assert altered.vocab_size == tokenizer.vocab_size and altered.hash != tokenizer.hash
    path = resaved(state, tmp_path / "altered.pt")
    message = rf"{side} tokenizer does not match the hash it was saved with .*altered"
    with pytest.raises(CheckpointError, match=message):
        restore_for_inference(load_checkpoint(path), origin=str(path))
    with pytest.raises(CheckpointError, match=message):
        Translator.from_checkpoint(path, "cpu")


def test_a_crafted_pattern_with_a_matching_hash_is_refused_before_it_runs(checkpoints, tmp_path):
    """The hash sits beside the tokenizer: altering both passes the hash check, so the pattern
    registry is what keeps a catastrophically backtracking pattern from running."""
    state = load_checkpoint(checkpoints[2])
    tokenizer_json = json.loads(state["tokenizers"]["src"])
    tokenizer_json["pretokenizer"]["pattern"] = r"(?:a+)+b|\S+|\s+"
    state["tokenizers"]["src"] = canonical_json(tokenizer_json)
    state["tokenizer_hashes"]["src"] = hashlib.sha256(
        state["tokenizers"]["src"].encode("utf-8")
    ).hexdigest()
    path = resaved(state, tmp_path / "crafted.pt")
    with pytest.raises(TokenizerError, match="pattern is not one this code has shipped") as error:
        Translator.from_checkpoint(path, "cpu")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("problem", sorted(MISFIT_MESSAGES))
@pytest.mark.slow
def test_weights_that_do_not_fit_are_a_one_line_error(checkpoints, tokenizer, tmp_path, problem):
    state = load_checkpoint(checkpoints[2])
    state["model"] = misfit_weights(state["model"], TINY, tokenizer.vocab_size, problem)
    path = tmp_path / "misfit.pt"
    save_checkpoint(path, state)  # with its digest: the misfit is what is refused
    with pytest.raises(CheckpointError) as error:
        restore_for_inference(load_checkpoint(path), origin=str(path))
    message = str(error.value)
    assert message.startswith(f"{path}: its weights do not fit the model its config describes")
    assert re.search(MISFIT_MESSAGES[problem], message) and "\n" not in message
    with pytest.raises(CheckpointError, match="its weights do not fit"):
        Translator.from_checkpoint(path, "cpu")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "translate.py"), "--checkpoint", str(path), "hi"],
        capture_output=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(b"error: ") and result.stderr.count(b"\n") == 1
    assert b"its weights do not fit" in result.stderr and b"Traceback" not in result.stderr


@pytest.mark.parametrize("key", ["model", "config", "tokenizers", "tokenizer_hashes"])
def test_incomplete_checkpoint_is_refused_on_load(checkpoints, tmp_path, key):
    state = load_checkpoint(checkpoints[2])
    del state[key]
    path = resaved(state, tmp_path / "incomplete.pt")
    with pytest.raises(CheckpointError, match=f"lacks {key}: it is incomplete"):
        load_checkpoint(path)
