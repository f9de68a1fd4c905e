import re
from pathlib import Path

import pytest

from llm_from_scratch.data.config import CleaningConfig, CorpusConfig, DataConfig, LoadingConfig
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.schema import to_schema

SECTIONS = {"corpus": CorpusConfig, "cleaning": CleaningConfig, "loading": LoadingConfig}
CONFIGS = sorted((Path(__file__).parents[2] / "configs" / "data").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.stem)
def test_every_data_config_file_is_a_valid_data_config(path, compose_config):
    # Through Hydra: a mixture's file composes its members' files by its defaults list.
    config = to_schema(compose_config("prepare_data", [f"data={path.stem}"]).data, DataConfig)
    assert isinstance(config, DataConfig)
    # A corpus only scored on names dev and test files (the WMT news sets, which the general
    # mixtures score at weight 0); every other one a train split.
    scored_only = [corpus.name for corpus in config.members if not corpus.corpus.has_train]
    general = "wmt_news" in config.mixture  # the general mixture, or one built on it
    assert scored_only == (["wmt_news"] if path.stem == "wmt_news" or general else [])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"corpus": {"format": "csv"}}, "data.corpus.format='csv'"),
        (
            {"source": "hub", "hub_id": "a/b", "corpus": {"format": "tsv"}},
            "data.corpus.format=hub",
        ),
        ({"corpus": {"splits": {"dev": "dev"}}}, "must name a train split (or, for a corpus"),
        ({"corpus": {"splits": {"train": "t", "valid": "v"}}}, "must name a train split"),
        ({"corpus": {"dev_fraction": 1.5}}, "data.corpus.dev_fraction=1.5"),
        (
            {"corpus": {"splits": {"train": "t"}, "dev_fraction": 0.6, "test_fraction": 0.5}},
            "no training data",
        ),
        ({"cleaning": {"max_tokens": 0}}, "data.cleaning.max_tokens=0"),
        ({"cleaning": {"max_length_ratio": 0.5}}, "data.cleaning.max_length_ratio=0.5"),
        ({"loading": {"bpe_dropout": 1.2}}, "data.loading.bpe_dropout=1.2 must be in [0, 1]"),
        (
            {"cleaning": {"max_tokens": 100}, "loading": {"batch_tokens": 150}},
            "data.loading.batch_tokens=150 cannot hold",
        ),
    ],
)
def test_invalid_values_raise_config_error_naming_key_and_value(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        sections = {name: SECTIONS[name](**overrides.get(name, {})) for name in SECTIONS}
        top = {key: value for key, value in overrides.items() if key not in SECTIONS}
        DataConfig(**{"source": "local", **top, **sections})
