"""What every command shares: a user's error as one line, and its exit status. Light to import:
a program's `--help` and its argument errors need nothing else."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from llm_from_scratch.atomic import disk_full_error
from llm_from_scratch.errors import UserError


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
