"""What the programs share: one-line errors, Hydra composition outside `hydra.main`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from llm_from_scratch.errors import ConfigError, UserError
from llm_from_scratch.paths import config_dir
from llm_from_scratch.schema import to_schema

Schema = TypeVar("Schema")


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `UserError` into `error: <message>` on stderr and exit status 2."""
    try:
        yield
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


def run_main(main: Callable[[Sequence[str]], int]) -> None:
    """Run a program's `main(argv)` as a command: its status is the exit status."""
    with exit_on_user_error():
        sys.exit(main(sys.argv[1:]))


def register_schema(name: str, schema: type) -> None:
    """Make `schema` available to the defaults list of a primary config as `name`."""
    ConfigStore.instance().store(name=name, node=schema)


def check_output_dir(path: Path, key: str) -> None:
    """Refuse an output directory that a file is in the way of, naming the setting `key`."""
    for existing in (path, *path.parents):
        if existing.exists():
            if not existing.is_dir():
                raise ConfigError(f"{key}={path} cannot be a directory: {existing} is a file")
            return


def compose_config(config_name: str, overrides: Sequence[str], schema: type[Schema]) -> Schema:
    """Compose `configs/<config_name>.yaml` with Hydra `overrides` and validate it as `schema`."""
    try:
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            cfg = compose(config_name=config_name, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise ConfigError(str(error).splitlines()[0]) from None
    return to_schema(cfg, schema)
