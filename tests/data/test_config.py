import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.errors import ConfigError

CONFIGS = sorted((Path(__file__).parents[2] / "configs" / "data").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.stem)
def test_every_data_config_file_is_a_valid_data_config(path):
    config = OmegaConf.to_object(
        OmegaConf.merge(OmegaConf.structured(DataConfig), OmegaConf.load(path))
    )
    assert isinstance(config, DataConfig)
    assert "train" in config.splits


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"format": "csv"}, "data.format='csv'"),
        ({"source": "hub", "hub_id": "a/b", "format": "tsv"}, "data.format=hub"),
        ({"splits": {"dev": "dev"}}, "must name a train split"),
        ({"splits": {"train": "t", "valid": "v"}}, "must name a train split"),
        ({"dev_fraction": 1.5}, "data.dev_fraction=1.5"),
        ({"splits": {"train": "t"}, "dev_fraction": 0.6, "test_fraction": 0.5}, "no training data"),
        ({"max_tokens": 0}, "data.max_tokens=0"),
        ({"max_length_ratio": 0.5}, "data.max_length_ratio=0.5"),
        ({"bpe_dropout": 1.2}, "data.bpe_dropout=1.2 must be in [0, 1]"),
        ({"max_tokens": 100, "batch_tokens": 150}, "data.batch_tokens=150 cannot hold"),
    ],
)
def test_invalid_values_raise_config_error_naming_key_and_value(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        DataConfig(**{"source": "local", **overrides})
