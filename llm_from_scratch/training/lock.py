"""One run per directory: the lock a run holds on it, and the clean-up only the holder may do.

- `claim`: an OS lock (flock) on `RunDir.lock`, held for the whole run. The OS releases it when
  the process ends, however it ends, so a `kill -9` leaves no stale lock; the file stays, naming
  its last holder. Under torchrun, rank 0 holds it for the job. A directory that cannot be
  written (read-only) is refused first, in one line (`check_writable`).
- Once the lock is held, the temporary files of writes that a kill interrupted are deleted
  (`remove_leftovers`); snapshots newer than `last.pt` go when the run trains
  (`resume.discard_snapshots_after`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from llm_from_scratch.atomic import new_file_refused, temporary_files
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import RunDir
from llm_from_scratch.training.distributed import Distributed

logger = logging.getLogger(__name__)

NEW_RUN = "use another name (name=... or paths.run_dir=...) to start a new run"


class RunDirError(UserError):
    """The run directory is in use by another run, or cannot be locked."""


@contextmanager
def claim(run_dir: RunDir, dist: Distributed) -> Iterator[None]:
    """Own `run_dir` for the block: lock it (rank 0, for the whole job), then delete what killed
    writes left there. Every rank raises `RunDirError` when another run holds it."""
    with ExitStack() as stack:
        refusal = None
        if dist.is_main:
            try:
                stack.enter_context(_locked(run_dir))
            except RunDirError as error:
                refusal = error
        if dist.any(refusal is not None):
            raise refusal or RunDirError(
                f"{run_dir.root} is in use by another run (rank 0 says who)"
            )
        if dist.is_main:
            remove_leftovers(run_dir)
        yield


@contextmanager
def _locked(run_dir: RunDir) -> Iterator[None]:
    path = run_dir.lock
    check_writable(run_dir)  # an existing `.lock` opens even where no new file can be written
    try:
        run_dir.root.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise unwritable(run_dir, path, error) from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirError(
                f"{run_dir.root} is in use by another training run ({_holder(descriptor)}): wait "
                f"for it to end or stop it, or {NEW_RUN}"
            ) from None
        except OSError as error:
            raise RunDirError(f"cannot lock {path}: {error.strerror}") from None
        os.ftruncate(descriptor, 0)
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": _now()}
        os.pwrite(descriptor, json.dumps(holder).encode(), 0)
        yield
    finally:
        os.close(descriptor)  # which releases the lock


def check_writable(run_dir: RunDir) -> None:
    """Refuse, with `RunDirError`, a run directory that cannot be written, or created where it
    does not exist yet, before any work (a file of nobody's: unnamed, gone when closed)."""
    existing, error = new_file_refused(run_dir.root)
    if error is not None:
        raise unwritable(run_dir, existing, error)


def unwritable(run_dir: RunDir, path: Path, error: OSError) -> RunDirError:
    return RunDirError(
        f"cannot write to the run directory {run_dir.root} ({path}: {error.strerror}): make it "
        f"writable, or {NEW_RUN}"
    )


def _holder(descriptor: int) -> str:
    try:
        holder = json.loads(os.pread(descriptor, 4096, 0))
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (ValueError, KeyError, TypeError):  # it has the lock but has yet to write its name
        return "a process that is starting"


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


def remove_leftovers(run_dir: RunDir) -> list[Path]:
    """Delete the temporary files of killed writes in `run_dir` and its snapshots, and hidden
    `.pt` files (scratch, such as `RunDir.budget_probe`). Only the lock's holder may: another
    run's temporary files would be files it is writing."""
    leftovers: set[Path] = set()
    for directory in (run_dir.root, run_dir.snapshots):
        leftovers.update(temporary_files(directory))
        leftovers.update(path for path in directory.glob(".*.pt") if path.is_file())
    for path in sorted(leftovers):
        path.unlink(missing_ok=True)
        logger.info("removed %s, left by a write that was killed", path)
    return sorted(leftovers)
