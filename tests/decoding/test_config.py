"""The decode group: every option composes, bad values are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.errors import ConfigError

DECODE_DIR = Path(__file__).resolve().parents[2] / "configs" / "decode"


@pytest.mark.parametrize("path", sorted(DECODE_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_yaml_options_match_the_schema(path):
    values = OmegaConf.to_container(OmegaConf.load(path))
    assert set(values) == set(DecodingConfig.__dataclass_fields__)
    DecodingConfig(**values)


def test_greedy_option_is_beam_size_one():
    values = OmegaConf.to_container(OmegaConf.load(DECODE_DIR / "greedy.yaml"))
    assert DecodingConfig(**values).beam_size == 1


@pytest.mark.parametrize(
    "values,message",
    [
        ({"beam_size": 0}, "decode.beam_size=0"),
        ({"beam_size": 2, "nbest": 3}, "decode.nbest=3"),
        ({"length_penalty": -0.5}, "decode.length_penalty=-0.5"),
        ({"max_len_a": -1.0}, "decode.max_len_a=-1.0"),
        ({"max_len_b": 0}, "decode.max_len_b=0"),
        ({"no_repeat_ngram_size": -1}, "decode.no_repeat_ngram_size=-1"),
        ({"batch_tokens": 0}, "decode.batch_tokens=0"),
    ],
)
def test_invalid_values_are_named(values, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        DecodingConfig(**values)
