"""The decoding group: every option composes, bad values are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_from_scratch.decoding.config import RECIPE_KEYS, DecodingConfig, preset_settings
from llm_from_scratch.errors import ConfigError

DECODING_DIR = Path(__file__).resolve().parents[2] / "configs" / "decoding"


@pytest.mark.parametrize("path", sorted(DECODING_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_a_preset_leaves_the_recipes_keys_to_the_run(path):
    values = OmegaConf.to_container(OmegaConf.load(path)) or {}
    assert not set(values) & set(RECIPE_KEYS)
    DecodingConfig(**values)


def test_a_preset_stands_for_every_key_but_the_recipes():
    """`evaluate.py decoding=greedy` on a run that changed a key (kftt's prefer_finished) decodes
    with greedy's settings, all of them, and the run's clause limit."""
    settings = preset_settings({"beam_size": 1})
    assert set(settings) == set(DecodingConfig.__dataclass_fields__) - set(RECIPE_KEYS)
    assert settings["beam_size"] == 1 and settings["prefer_finished"] is False


def test_greedy_option_is_beam_size_one_without_a_length_penalty():
    values = OmegaConf.to_container(OmegaConf.load(DECODING_DIR / "greedy.yaml"))
    config = DecodingConfig(**preset_settings(values))
    assert (config.beam_size, config.length_penalty) == (1, 0.0)


@pytest.mark.parametrize(
    "values,message",
    [
        ({"beam_size": 0}, "decoding.beam_size=0"),
        ({"beam_size": 2, "nbest": 3}, "decoding.nbest=3"),
        ({"length_penalty": -0.5}, "decoding.length_penalty=-0.5"),
        ({"max_len_a": -1.0}, "decoding.max_len_a=-1.0"),
        ({"max_len_b": 0}, "decoding.max_len_b=0"),
        ({"no_repeat_ngram_size": -1}, "decoding.no_repeat_ngram_size=-1"),
        ({"batch_tokens": 0}, "decoding.batch_tokens=0"),
        ({"precision": "fp8"}, "decoding.precision='fp8'"),
    ],
)
def test_invalid_values_are_named(values, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        DecodingConfig(**values)
