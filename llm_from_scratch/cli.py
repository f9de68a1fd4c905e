"""Helpers shared by the thin scripts in `scripts/`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from llm_from_scratch.errors import UserError


@contextmanager
def exit_on_user_error() -> Iterator[None]:
    """Turn a `UserError` into `error: <message>` on stderr and exit status 2."""
    try:
        yield
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
