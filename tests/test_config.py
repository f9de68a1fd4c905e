"""Every config file composes and validates; bad values fail with messages that name them."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_from_scratch.config import (
    PrepareDataConfig,
    TokenizerJobConfig,
    TrainConfig,
    resolve,
)
from llm_from_scratch.errors import ConfigError

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"

PRIMARY = {
    "train": TrainConfig,
    "prepare_data": PrepareDataConfig,
    "train_tokenizer": TokenizerJobConfig,
}
GROUPS = ("data", "tokenizer", "model", "trainer", "decode", "experiment")


def group_options(group: str) -> list[str]:
    return sorted(path.stem for path in (CONFIG_DIR / group).glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_primary_configs_compose(compose_config, name):
    config = resolve(compose_config(name), PRIMARY[name])
    assert isinstance(config, PRIMARY[name])
    assert config.data.name == "small_parallel_enja"


@pytest.mark.parametrize(
    "group,option", [(group, option) for group in GROUPS for option in group_options(group)]
)
def test_every_group_option_composes_into_train(compose_config, group, option):
    config = resolve(compose_config("train", [f"{group}={option}"]), TrainConfig)
    if group == "model":
        assert config.model.d_model % config.model.n_heads == 0


def test_every_group_has_options():
    for group in GROUPS:
        assert group_options(group), f"configs/{group}/ is empty"


def test_smoke_experiment_selects_tiny_model_and_its_run_dir(compose_config):
    config = resolve(compose_config("train", ["experiment=smoke"]), TrainConfig)
    tiny = resolve(compose_config("train", ["model=tiny"]), TrainConfig).model
    assert config.model == tiny
    assert config.trainer.run_dir == "runs/smoke"


def test_distilled_experiment_is_spe_tokenized_plus_the_teachers_translations(compose_config):
    distilled = resolve(compose_config("train", ["experiment=spe_distilled"]), TrainConfig)
    teacher = resolve(compose_config("train", ["experiment=spe_tokenized"]), TrainConfig)
    assert [(e.source, e.target) for e in distilled.data.extra_train] == [
        ("data/raw/small_parallel_enja/train.en", "runs/spe_tokenized/eval-train/hypotheses.txt")
    ]
    distilled.data.extra_train = []
    assert (distilled.data, distilled.model, distilled.tokenizer) == (
        teacher.data,
        teacher.model,
        teacher.tokenizer,
    )
    assert (distilled.trainer.max_steps, teacher.trainer.max_steps) == (6300, 8400)
    assert distilled.trainer.run_dir == "runs/spe_distilled"


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["model.d_model=250", "model.n_heads=8"], "model.d_model=250 is not divisible by"),
        (["model.dropout=1.5"], "model.dropout=1.5"),
        (["trainer.precision=fp8"], "trainer.precision='fp8'"),
        (["trainer.accumulation_steps=0"], "trainer.accumulation_steps=0"),
        (["decode.beam_size=2", "decode.nbest=3"], "decode.nbest=3"),
        (["tokenizer.vocab_size=100"], "tokenizer.vocab_size=100"),
        (["data.source=ftp"], "data.source='ftp'"),
        (["data.extra_train=[{source: a.en}]"], "missing mandatory value: target"),
    ],
)
def test_invalid_values_are_named(compose_config, overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        resolve(compose_config("train", overrides), TrainConfig)


def test_unknown_key_is_rejected_at_composition(compose_config):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="d_modl"):
        compose_config("train", ["model.d_modl=3"])
