"""Helpers shared by the thin scripts in `scripts/`."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from llm_from_scratch.errors import StageMissingError, UserError


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `UserError` into `error: <message>` on stderr and exit status 2."""
    try:
        yield
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


def import_stage(module: str, stage: str) -> ModuleType:
    """Import `llm_from_scratch.<module>`, or explain which pipeline stage is missing."""
    name = f"llm_from_scratch.{module}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is None or not name.startswith(error.name):
            raise
        raise StageMissingError(
            f"the {stage} stage ({name}) has not landed in this checkout yet"
        ) from None
