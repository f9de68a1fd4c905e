from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.model.config import ModelConfig

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "model"


@pytest.mark.parametrize("name", ["tiny", "small", "base", "big"])
def test_every_preset_builds_a_model_config(name: str) -> None:
    """scripts/bench_model.py reads a preset without Hydra: its keys over the defaults."""
    values = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / f"{name}.yaml")) or {}
    config = ModelConfig(**values)  # type: ignore[arg-type]
    assert {key: getattr(config, key) for key in values} == values


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("d_model", 0),
        ("n_heads", 3),  # 256 is not divisible by 3
        ("n_encoder_layers", 0),
        ("n_decoder_layers", -1),
        ("d_ff", 0),
        ("dropout", 1.0),
        ("activation", "tanh"),
        ("max_positions", 0),
    ],
)
def test_invalid_value_names_key_and_value(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"model\.{key}={value!r}|model\.{key}={value}"):
        ModelConfig(**{key: value})  # type: ignore[arg-type]


def test_odd_width_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"model\.d_model=33"):
        ModelConfig(d_model=33, n_heads=1)
