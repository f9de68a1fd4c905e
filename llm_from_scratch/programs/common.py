"""What the programs share: one-line errors, Hydra composition outside `hydra.main`."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from llm_from_scratch.atomic import disk_full_error
from llm_from_scratch.errors import ConfigError, UserError
from llm_from_scratch.paths import PathsConfig, check_directory, config_dir
from llm_from_scratch.schema import to_schema

Schema = TypeVar("Schema")


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `UserError` into `error: <message>` on stderr and exit status 2; a full disk too,
    wherever the write that found it was (a lock file, a library's cache). Logging's own write
    errors are not printed: on a full disk each log line would print a traceback."""
    logging.raiseExceptions = False
    try:
        yield
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except Exception as error:
        full = disk_full_error(error)
        if full is None:
            raise
        where = f" writing {full.filename}" if full.filename else ""
        print(
            f"error: the disk is full{where} ({full.strerror}): free some space and run the "
            "command again",
            file=sys.stderr,
        )
        sys.exit(2)


def run_main(main: Callable[[Sequence[str]], int]) -> None:
    """Run a program's `main(argv)` as a command: its status is the exit status."""
    with exit_on_user_error():
        sys.exit(main(sys.argv[1:]))


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
