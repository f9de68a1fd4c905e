"""Atomic file writes: readers see the old file or the complete new one, never a partial one.
Build locks: one process builds a shared file (a tokenizer, a cache) while others wait for it.

A write goes to a temporary file beside its destination, `.<name>.<8 random characters>`, that
replaces the destination only once complete. A process killed mid-write leaves that temporary
behind; `temporary_files` finds such leftovers for whoever owns the directory to delete.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from llm_from_scratch.errors import UserError

logger = logging.getLogger(__name__)

# `tempfile` names its files prefix + 8 characters of this alphabet.
_TEMPORARY_NAME = re.compile(r"\.(?P<destination>.+)\.[a-z0-9_]{8}")
# torch.save writing to a file reports a failed write as a RuntimeError of its zip writer.
_TORCH_WRITE_FAILURE = "PytorchStreamWriter failed writing file"


class DiskFullError(UserError):
    """A write ran out of space; the file it was to replace is unchanged."""


@contextmanager
def atomic_writer(destination: str | Path) -> Iterator[IO[bytes]]:
    """A temporary binary file beside `destination` that replaces it only if the block succeeds.

    When the disk fills up, the temporary file is removed and `DiskFullError` says where."""
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
    except BaseException as error:
        Path(file.name).unlink(missing_ok=True)
        if is_disk_full(error):
            raise DiskFullError(_disk_full_message(destination)) from None
        raise
    os.chmod(file.name, file_mode())  # temporary files are private; the result should not be
    os.replace(file.name, destination)


def file_mode() -> int:
    """The mode of a new file, as `open` gives it: 0666 less the process's umask (0644 under the
    usual 022)."""
    return 0o666 & ~_umask()


def give_file_modes(directory: str | Path) -> None:
    """Give every file under `directory` the mode of a new file (`file_mode`): a library that
    writes through a private temporary file (safetensors, 0600) would leave the model in a
    folder meant to be shared readable by its owner alone."""
    mode = file_mode()
    for path in Path(directory).rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(mode)


class UnwritableError(UserError):
    """A program's output directory cannot be written: refused before the work."""


def check_writable(directory: str | Path, what: str, instead: str = "") -> None:
    """Refuse, with `UnwritableError`, a `directory` that `what` is to be written in but that
    cannot take a new file (permissions, a read-only file system), or that cannot be created
    where it does not exist yet. Checked by writing a file of nobody's (unnamed, gone when
    closed), which tells what permission bits cannot (ACLs, read-only mounts, root). `instead`:
    how to write it elsewhere, for the message (`give another --output`)."""
    existing, error = new_file_refused(Path(directory))
    if not existing.is_dir():
        raise UnwritableError(f"cannot write {what}: {existing} is a file, not a directory")
    if error is not None:
        raise UnwritableError(
            f"cannot write {what}: {existing} is not writable ({error.strerror}); make it "
            f"writable, or {instead or 'choose another directory'}"
        )


def new_file_refused(directory: Path) -> tuple[Path, OSError | None]:
    """The nearest existing folder of `directory` (itself, or the parent it would be created
    in), and why a new file cannot be written there (None: it can). Tried with a file of
    nobody's (unnamed, gone when closed), which tells what permission bits cannot (ACLs,
    read-only mounts, root)."""
    existing = next(path for path in (directory, *directory.parents) if path.exists())
    try:
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as error:
        return existing, error
    return existing, None


@contextmanager
def build_lock(built: Path, what: str) -> Iterator[None]:
    """Hold an OS lock (flock) on `.<name>.lock` beside `built` for the block, waiting while
    another process holds it: a second run that needs `what` waits for the first to build it, then
    finds it built. The OS releases the lock however the holder ends."""
    lock_file = built.with_name(f".{built.name}.lock")
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info("waiting for another process to build %s", what)
            fcntl.flock(file, fcntl.LOCK_EX)
        yield


@contextmanager
def disk_full_in(directory: str | Path, what: str) -> Iterator[None]:
    """Turn a full disk met anywhere in the block (a library's cache files, say) into a one-line
    `DiskFullError` naming `what` is written there."""
    try:
        yield
    except DiskFullError:
        raise
    except Exception as error:
        if not is_disk_full(error):
            raise
        free = shutil.disk_usage(directory).free if Path(directory).is_dir() else 0
        raise DiskFullError(
            f"cannot write {what} in {directory}: the disk is full ({free:,} bytes free). Free "
            "some space and run the command again"
        ) from None


def temporary_files(directory: str | Path) -> list[Path]:
    """The temporary files of `atomic_writer` in `directory`: only a killed write leaves one."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(
        path
        for path in directory.iterdir()
        if _TEMPORARY_NAME.fullmatch(path.name) and path.is_file()
    )


def is_disk_full(error: BaseException | None) -> bool:
    """Whether `error`, or an error it was raised while handling, says the disk is full (torch
    raises its own RuntimeError while handling the OSError of a full disk)."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(error, RuntimeError) and _TORCH_WRITE_FAILURE in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def disk_full_error(error: BaseException | None) -> OSError | None:
    """The OSError of a full disk that `error` is, or was raised while handling; None if none."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return error
        error = error.__cause__ or error.__context__
    return None


def _disk_full_message(destination: Path) -> str:
    free = shutil.disk_usage(destination.parent).free
    kept = (
        f"the previous {destination.name} is unchanged"
        if destination.exists()
        else "nothing was written"
    )
    return (
        f"cannot write {destination}: the disk is full ({free:,} bytes free in "
        f"{destination.parent}); {kept}. Free some space and run the command again"
    )


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
