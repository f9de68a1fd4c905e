"""What the Hydra programs share: composition outside `hydra.main`, schemas, the path check,
and Hydra's and OmegaConf's errors as one or two lines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, TypeVar

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException, MissingConfigException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    OmegaConfBaseException,
    ValidationError,
)

from llm_from_scratch.atomic import check_writable
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.data.sources import dataset_dir
from llm_from_scratch.display import shown
from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig, check_directory, check_inside, config_dir
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.schema import to_schema, unknown_key

Schema = TypeVar("Schema")


def register_schema(name: str, schema: type) -> None:
    """Make `schema` available to the defaults list of a primary config as `name`."""
    ConfigStore.instance().store(name=name, node=schema)


class RefuseFilePaths(Callback):
    """Hydra callback (`hydra.callbacks` of the programs' configs): the path settings and the
    output directory are checked before Hydra creates that directory, which a file in the way
    turns into a traceback."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        with exit_on_user_error():
            if "paths" in config:
                to_schema(OmegaConf.to_container(config.paths, resolve=True), PathsConfig)
            check_directory(Path(str(config.hydra.run.dir)), "hydra.run.dir")


def compose_before_hydra(
    config_name: str, arguments: Sequence[str], schema: type[Schema]
) -> Schema | None:
    """The config `hydra.main` will compose from the command line's `arguments`, validated, so
    that a bad one is refused in one line (Hydra's own report is a traceback-like page); None
    where Hydra's options or settings are among them (`--cfg job`, `hydra.run.dir=...`), which
    are Hydra's to read."""
    if any(argument.startswith(("-", "hydra.", "hydra/", "+hydra")) for argument in arguments):
        return None
    return compose_config(config_name, arguments, schema)


def check_raw_data_writable(data: DataConfig, paths: PathsConfig) -> None:
    """Refuse, before any download, a corpus of `data` to fetch into a directory that cannot be
    written. A corpus whose directory exists is left to the fetch: it may be complete, and a
    read-only copy of a complete corpus is fine."""
    for corpus in data.members:
        directory = dataset_dir(corpus, paths)
        if not directory.is_dir():
            check_writable(directory, f"the files of {corpus.name}", "set paths.raw_dir=DIR")


def override_key(override: str) -> str:
    """The key a Hydra override sets (`model`, `training.max_steps`), without its `+`/`~`."""
    return override.lstrip("+~").partition("=")[0]


def compose_config(config_name: str, overrides: Sequence[str], schema: type[Schema]) -> Schema:
    """Compose `configs/<config_name>.yaml` with Hydra `overrides` and validate it as `schema`.
    An option of a config group (`data=NAME`) must name a file inside the group's folder."""
    for override in overrides:
        _, equals, value = override.partition("=")
        key = override_key(override)
        if equals and (config_dir() / key).is_dir():
            check_inside(config_dir() / key, value, f"{key}={value}", "a config file")
    try:
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise ConfigError(composition_error(error, config_name)) from None
    return to_schema(cfg, schema)


# What a value that does not convert must be, by the type OmegaConf names.
_EXPECTED = {"Float": "a number", "Integer": "a whole number", "Boolean": "true or false"}
# Hydra's "In 'data/x': ..." names the config file (no extension) whose merge failed.
_IN_FILE = re.compile(r"^In '(?P<path>[^']+)': (?P<rest>.*)$", re.S)
_NOT_CONVERTED = re.compile(
    r"^Value '(?P<value>.*)' of type '\w+' could not be converted to (?P<type>\w+)$"
)
_OVERRIDE = re.compile(r"^Error (?P<doing>merging|parsing) override '?(?P<override>[^']+)'?$")
# OmegaConf's lines about its nodes: nothing a user can act on.
_NODE_LINES = ("full_key:", "reference_type=", "object_type=")


def composition_error(error: HydraException | OmegaConfBaseException, config_name: str) -> str:
    """The substance of an error composing `configs/<config_name>.yaml`, in one line: the key
    or file, the reason, and the nearest valid name or the choices. Hydra ends its text with
    its config search path and OmegaConf with its node types, which say nothing a user can act
    on; Hydra's suggestion to add an unknown key with `+` only meets the schema's refusal."""
    message = str(error)
    where = ""
    match = _IN_FILE.match(message)
    if match:
        message = match["rest"]
        if match["path"] != config_name:
            where = f"in {shown(config_dir() / match['path'])}.yaml: "
    if isinstance(error, MissingConfigException) and error.options and error.missing_cfg_file:
        return where + _missing_option(error.missing_cfg_file, error.options)
    cause = _omegaconf_cause(error)
    override = _OVERRIDE.match((message.splitlines() or [""])[0])
    if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and cause.full_key:
        return where + _unknown(cause)
    if isinstance(cause, ValidationError) and cause.full_key:
        return where + _invalid(cause, override["override"] if override else None)
    lines = message.split("Config search path:")[0].splitlines()
    if override:
        lines = lines[1:]
    if cause is not None:
        lines += str(cause.msg).splitlines()
    lines = [line.strip() for line in lines if line.strip()]
    reason = " ".join(line for line in lines if not line.startswith(_NODE_LINES))
    if override and override["doing"] == "parsing":  # the grammar's reason, then "See <url> ..."
        reason = reason.replace(" See ", " (see ", 1) + ")" if " See " in reason else reason
        return f"{where}cannot read {override['override']!r} as KEY=VALUE: {reason}"
    return where + (f"{override['override']}: {reason}" if override else reason)


def _omegaconf_cause(error: BaseException | None) -> OmegaConfBaseException | None:
    """The OmegaConf error behind `error` (Hydra raises its own while handling it)."""
    while error is not None:
        if isinstance(error, OmegaConfBaseException):
            return error
        error = error.__cause__ or error.__context__
    return None


def _missing_option(missing: str, options: Sequence[str]) -> str:
    """`model=tinny`: no such config file in the group; the nearest one and the choices."""
    group, _, name = missing.rpartition("/")
    closest = get_close_matches(name, options, n=1)
    hint = f"; did you mean {group}={closest[0]}?" if closest else ""
    return (
        f"{group}={name}: there is no {shown(config_dir() / missing)}.yaml{hint} "
        f"(the choices: {', '.join(options)})"
    )


def _unknown(cause: OmegaConfBaseException) -> str:
    """A key that no schema declares: the nearest declared one, or all of them."""
    key = str(cause.full_key)
    prefix = key.rpartition(".")[0]
    if is_dataclass(cause.object_type):
        known = [field.name for field in fields(cause.object_type)]
    elif isinstance(cause.parent_node, DictConfig):
        known = [str(name) for name in cause.parent_node]
    else:
        return f"{key} is not a setting"
    return unknown_key(key, known, f"{prefix}." if prefix else "")


def _invalid(cause: OmegaConfBaseException, override: str | None) -> str:
    """A value of the wrong type: the setting, and what its value must be, with the value the
    config holds as an example."""
    key, reason = str(cause.full_key), str(cause.msg).splitlines()[0]
    setting = override or f"{key}={cause.value}"
    converted = _NOT_CONVERTED.match(reason)
    if not converted:
        return f"{setting}: {reason}"
    expected = _EXPECTED.get(converted["type"], f"of type {converted['type']}")
    example = ""
    if isinstance(cause.parent_node, DictConfig) and cause.key is not None:
        current = cause.parent_node._get_node(cause.key)
        if current is not None and not current._is_missing() and not current._is_none():
            example = f", such as {key}={current._value()}"
    return f"{setting}: {converted['value']!r} is not {expected}; give {expected}{example}"
