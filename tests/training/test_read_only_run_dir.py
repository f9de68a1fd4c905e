"""A run directory that cannot be written is refused in one line, naming it and what to do,
before any work: before the lock, and before Hydra would create it."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from llm_from_scratch.paths import RunDir
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.lock import RunDirError, check_writable, claim

NOBODY = 65534


@pytest.fixture
def read_only() -> Iterator[Path]:
    """A directory holding a previous run's files and `.lock`, that nobody but root may write
    (a temporary one outside pytest's, whose parents are root's alone)."""
    directory = Path(tempfile.mkdtemp(prefix="read-only-run-"))
    (directory / ".lock").write_text("")
    (directory / "train.log").write_text("a previous run\n")
    directory.chmod(0o555)
    yield directory
    directory.chmod(0o755)
    shutil.rmtree(directory)


def refusal(action: Callable[[], None]) -> str | None:
    """The `RunDirError` message of `action`, run in a child process as a user the directory's
    permissions apply to (root ignores them); None when it raised nothing."""
    context = multiprocessing.get_context("fork")
    queue = context.SimpleQueue()

    def child() -> None:
        if os.geteuid() == 0:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        try:
            action()
            queue.put(None)
        except RunDirError as error:
            queue.put(str(error))

    process = context.Process(target=child)
    process.start()
    process.join(timeout=60)
    assert process.exitcode == 0
    return queue.get()


def claimed(run_dir: RunDir) -> None:
    with claim(run_dir, Distributed()):
        pass


def test_a_read_only_run_directory_is_refused_in_one_line(read_only):
    before = sorted(path.name for path in read_only.iterdir())
    message = refusal(lambda: claimed(RunDir(read_only)))
    assert message == (
        f"cannot write to the run directory {read_only} ({read_only}: Permission denied): make it "
        "writable, or use another name (name=... or paths.run_dir=...) to start a new run"
    )
    assert sorted(path.name for path in read_only.iterdir()) == before


def test_a_run_directory_that_cannot_be_created_is_refused(read_only):
    run_dir = RunDir(read_only / "runs" / "new")
    message = refusal(lambda: check_writable(run_dir))
    assert message is not None
    assert message.startswith(f"cannot write to the run directory {run_dir.root} ({read_only}: ")
    assert not run_dir.root.parent.exists()


def test_a_writable_run_directory_is_created_and_claimed(tmp_path):
    run_dir = RunDir(tmp_path / "runs" / "new")
    check_writable(run_dir)
    claimed(run_dir)
    assert run_dir.lock.exists()
