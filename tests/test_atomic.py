"""Atomic writes: a full disk is one line saying where, and leaves the previous file and no
temporary file behind; leftovers of killed writes are found."""

from __future__ import annotations

import errno
import os

import pytest
import torch

from llm_from_scratch import checkpoint
from llm_from_scratch.atomic import DiskFullError, atomic_writer, temporary_files
from llm_from_scratch.checkpoint import load_checkpoint, save_checkpoint

STATE = {
    "model": {"w": torch.ones(3)},
    "config": {},
    "tokenizers": {},
    "tokenizer_hashes": {},
}


def full_disk_os_error(obj, file) -> None:
    file.write(b"half a checkpoint")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def full_disk_torch_error(obj, file) -> None:
    """What torch.save raises when its zip writer's write fails."""
    file.write(b"half a checkpoint")
    raise RuntimeError(
        "[enforce fail at inline_container.cc:672] . PytorchStreamWriter failed writing file "
        "data/0: file write failed"
    )


@pytest.mark.parametrize("failure", [full_disk_os_error, full_disk_torch_error])
def test_a_full_disk_keeps_the_previous_checkpoint_and_says_where(tmp_path, monkeypatch, failure):
    path = tmp_path / "last.pt"
    save_checkpoint(path, STATE)
    before = path.read_bytes()
    monkeypatch.setattr(checkpoint.torch, "save", failure)
    with pytest.raises(DiskFullError) as error:
        save_checkpoint(path, {**STATE, "model": {"w": torch.zeros(3)}})
    message = str(error.value)
    assert message.startswith(f"cannot write {path}: the disk is full (")
    assert f"bytes free in {tmp_path}); the previous last.pt is unchanged" in message
    assert "\n" not in message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]  # no temporary file left
    monkeypatch.undo()
    torch.testing.assert_close(load_checkpoint(path)["model"]["w"], torch.ones(3))


def test_other_errors_pass_through_and_leave_no_temporary_file(tmp_path):
    with pytest.raises(ValueError, match="not a disk problem"), atomic_writer(tmp_path / "x"):
        raise ValueError("not a disk problem")
    assert list(tmp_path.iterdir()) == []


def test_temporary_files_are_those_a_killed_write_leaves(tmp_path):
    writer = atomic_writer(tmp_path / "last.pt")
    file = writer.__enter__()  # a write that never finishes, as in a killed process
    file.write(b"partial")
    file.flush()
    (tmp_path / ".hydra").mkdir()
    for name in ("last.pt", ".lock", "notes.txt", ".last.pt"):
        (tmp_path / name).write_text("kept")
    assert temporary_files(tmp_path) == [tmp_path / os.path.basename(file.name)]
    assert temporary_files(tmp_path / "missing") == []
