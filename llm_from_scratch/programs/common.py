"""What the Hydra programs share: composition outside `hydra.main`, schemas, the path check."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from llm_from_scratch.errors import ConfigError
from llm_from_scratch.paths import PathsConfig, check_directory, config_dir
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.schema import to_schema

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


def compose_config(config_name: str, overrides: Sequence[str], schema: type[Schema]) -> Schema:
    """Compose `configs/<config_name>.yaml` with Hydra `overrides` and validate it as `schema`."""
    try:
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise ConfigError(str(error).splitlines()[0]) from None
    return to_schema(cfg, schema)
