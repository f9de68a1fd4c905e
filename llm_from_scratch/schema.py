"""Config schemas as dataclasses: Hydra composes and type-checks, `to_schema` validates.

Each stage owns the schema of its config group (`llm_from_scratch/<stage>/config.py`); each
program (`llm_from_scratch/programs/`) assembles them into the schema of its primary config and
registers it in Hydra's ConfigStore. The dataclasses' `__post_init__` checks values and raises
`ConfigError` naming the bad key.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from difflib import get_close_matches
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from llm_from_scratch.errors import ConfigError, UserError

Schema = TypeVar("Schema")


def to_schema(cfg: DictConfig | dict[str, Any], schema: type[Schema]) -> Schema:
    """Validate a composed config (or plain data, e.g. read from a checkpoint) as `schema`."""
    try:
        merged = OmegaConf.merge(OmegaConf.structured(schema), cfg)
        check_known_keys(merged)
        config = OmegaConf.to_object(merged)
    except OmegaConfBaseException as error:
        if isinstance(error.__cause__, UserError):
            raise error.__cause__ from None
        raise ConfigError(str(error).splitlines()[0]) from None
    if not isinstance(config, schema):
        raise ConfigError(f"expected a {schema.__name__} config, got {type(config).__name__}")
    return config


def check_known_keys(node: DictConfig, prefix: str = "") -> None:
    """Refuse a key that no schema declares, e.g. one that Hydra's `+key=value` added (Hydra
    lets it into a schema's node, and the schema would drop it without a word)."""
    schema = OmegaConf.get_type(node)
    if is_dataclass(schema):
        known = [field.name for field in fields(schema)]
        for key in node:
            if key not in known:
                raise ConfigError(unknown_key(f"{prefix}{key}", known, prefix))
    for key in node:
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            check_known_keys(child, f"{prefix}{key}.")


def unknown_key(key: str, known: list[str], prefix: str = "") -> str:
    """The one-line refusal of `key`, naming the closest of the `known` keys under `prefix`."""
    group = prefix.rstrip(".")
    where = f"a {group} setting" if group else "a setting"
    closest = get_close_matches(key.removeprefix(prefix), known, n=1)
    if closest:
        return f"{key} is not {where}; did you mean {prefix}{closest[0]}?"
    return f"{key} is not {where}; they are {', '.join(known)}"


def to_data(config: Any) -> dict[str, Any]:
    """A schema instance as plain data (dicts, lists, scalars), e.g. to store in a checkpoint."""
    return OmegaConf.to_container(OmegaConf.structured(config))


def with_overrides(config: Schema, overrides: dict[str, Any], group: str) -> Schema:
    """`config` (a schema instance) with some keys replaced, converted to their types and
    validated; errors name the key as `<group>.<key>`."""
    known = [field.name for field in fields(config)]
    for key in overrides:
        if key not in known:
            raise ConfigError(unknown_key(f"{group}.{key}", known, f"{group}."))
    try:
        return to_schema({**to_data(config), **overrides}, type(config))
    except ConfigError as error:
        if str(error).startswith(f"{group}."):
            raise  # the schema's own check names the key
        settings = " ".join(f"{group}.{key}={value}" for key, value in overrides.items())
        raise ConfigError(f"{settings}: {error}") from None
