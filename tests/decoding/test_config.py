"""The decoding group: every option composes, bad values are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.errors import ConfigError

DECODING_DIR = Path(__file__).resolve().parents[2] / "configs" / "decoding"


# Set by a recipe for its corpus (configs/train.yaml, experiments), not by a preset: an
# evaluation that names a preset keeps the run's.
RECIPE_KEYS = {"clause_split_tokens"}


@pytest.mark.parametrize("path", sorted(DECODING_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_yaml_options_match_the_schema(path):
    values = OmegaConf.to_container(OmegaConf.load(path))
    assert set(values) == set(DecodingConfig.__dataclass_fields__) - RECIPE_KEYS
    DecodingConfig(**values)


def test_beam_option_is_the_schemas_defaults():
    """What `make train` stores in a run (and `translate.py` decodes with) is what code gets."""
    values = OmegaConf.to_container(OmegaConf.load(DECODING_DIR / "beam.yaml"))
    assert DecodingConfig(**values) == DecodingConfig()


def test_greedy_option_is_beam_size_one():
    values = OmegaConf.to_container(OmegaConf.load(DECODING_DIR / "greedy.yaml"))
    assert DecodingConfig(**values).beam_size == 1


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
