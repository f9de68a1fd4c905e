"""A full disk at start (the run directory's lock file cannot be written) is one line, exit 2."""

from __future__ import annotations

import errno
import os

import pytest

from llm_from_scratch.paths import RunDir
from llm_from_scratch.programs.command import exit_on_user_error
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.lock import claim


def test_a_full_disk_at_the_lock_write_is_one_line(tmp_path, monkeypatch, capsys):
    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    monkeypatch.setattr(os, "write", full)
    with (
        pytest.raises(SystemExit) as exit_,
        exit_on_user_error(),
        claim(RunDir(tmp_path), Distributed()),
    ):
        pass
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "error: the disk is full (No space left on device): free some space and run the "
        "command again\n"
    )


def test_other_os_errors_are_not_mistaken_for_a_full_disk():
    with pytest.raises(PermissionError), exit_on_user_error():
        raise PermissionError(errno.EACCES, "Permission denied")
