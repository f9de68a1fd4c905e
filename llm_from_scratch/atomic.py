"""Atomic file writes: readers see the old file or the complete new one, never a partial one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


@contextmanager
def atomic_writer(destination: str | Path) -> Iterator[IO[bytes]]:
    """A temporary binary file beside `destination` that replaces it only if the block succeeds."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed below, renamed on success)
        dir=destination.parent, prefix=f".{destination.name}.", delete=False
    )
    try:
        with file:
            yield file
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        Path(file.name).unlink(missing_ok=True)
        raise
    os.chmod(file.name, 0o666 & ~_umask())  # temporary files are private; the result should not be
    os.replace(file.name, destination)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
