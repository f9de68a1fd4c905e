"""A damaged or foreign checkpoint is refused in one line, with its reason, before anything uses
it: translation, resuming, averaging. Every file carries the sha256 of its tensors; one from
before the digest is checked for non-finite weights."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import (
    DIGEST_KEY,
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
    tensor_digest,
)
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.programs import translate as translate_cli
from llm_from_scratch.training.averaging import average_checkpoints
from tests.decoding.builders import save_run_checkpoint, tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture
def checkpoint(tmp_path, tokenizer) -> Path:
    return save_run_checkpoint(tmp_path / "averaged.pt", tokenizer, 10, {"bleu": 1.0})


def overwrite_weights(path: Path, data: bytes = b"\xff" * 4) -> None:
    """Write `data` into the middle of the largest tensor's bytes in the file, as a bad disk
    or copy would: the archive stays readable (torch checks no CRC)."""
    with zipfile.ZipFile(path) as archive:
        entry = max(
            (info for info in archive.infolist() if "/data/" in info.filename),
            key=lambda info: info.file_size,
        )
    with path.open("r+b") as file:
        file.seek(entry.header_offset + 26)
        name_length, extra_length = struct.unpack("<HH", file.read(4))
        start = entry.header_offset + 30 + name_length + extra_length
        file.seek(start + entry.file_size // 2 // 4 * 4)
        file.write(data)


def without_digest(path: Path) -> None:
    """The file as a version before the digest wrote it."""
    state = torch.load(path, weights_only=True)
    del state[DIGEST_KEY]
    torch.save(state, path)


def test_a_saved_checkpoint_carries_the_digest_of_its_tensors(checkpoint):
    state = load_checkpoint(checkpoint)
    assert state[DIGEST_KEY] == tensor_digest(state)
    assert len(state[DIGEST_KEY]) == 64


def test_the_digest_sees_a_changed_value_and_a_renamed_tensor():
    weights = {"a": torch.zeros(3), "b": torch.ones(2)}
    digest = tensor_digest({"model": weights})
    changed = {"a": torch.tensor([0.0, 0.0, 1e-30]), "b": torch.ones(2)}
    renamed = {"c": torch.zeros(3), "b": torch.ones(2)}
    assert tensor_digest({"model": changed}) != digest
    assert tensor_digest({"model": renamed}) != digest
    assert tensor_digest({"model": dict(reversed(weights.items()))}) == digest


def test_four_bytes_overwritten_in_the_weights_are_refused(checkpoint):
    overwrite_weights(checkpoint)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(checkpoint)
    assert str(error.value).startswith(
        f"checkpoint {checkpoint} is damaged: its tensors do not match the sha256 saved with them"
    )


def test_translate_refuses_a_damaged_checkpoint_before_translating(checkpoint, capsys):
    overwrite_weights(checkpoint)
    with pytest.raises(CheckpointError, match="is damaged"):
        translate_cli.main(["--checkpoint", str(checkpoint), "Hello."])
    assert capsys.readouterr().out == ""
    with pytest.raises(CheckpointError, match="is damaged"):
        Translator.from_checkpoint(checkpoint, device="cpu")


def test_an_old_checkpoint_loads_and_one_with_non_finite_weights_is_refused(checkpoint):
    without_digest(checkpoint)
    assert DIGEST_KEY not in load_checkpoint(checkpoint)  # it still translates
    overwrite_weights(checkpoint)  # 0xffffffff: a NaN in float32
    with pytest.raises(CheckpointError, match=r"is damaged: .* holds non-finite values"):
        load_checkpoint(checkpoint)


def test_resaving_a_loaded_checkpoint_gives_it_the_digest_of_its_new_tensors(checkpoint):
    state = load_checkpoint(checkpoint)
    state["model"] = {key: value + 1 for key, value in state["model"].items()}
    save_checkpoint(checkpoint, state)  # the old digest in `state` is not carried over
    assert load_checkpoint(checkpoint)[DIGEST_KEY] == tensor_digest(state)


def test_an_average_gets_its_own_digest_and_refuses_a_damaged_snapshot(tmp_path, tokenizer):
    snapshots = [
        save_run_checkpoint(tmp_path / f"step-{step}.pt", tokenizer, step, {}) for step in (1, 2)
    ]
    averaged = tmp_path / "averaged.pt"
    average_checkpoints(snapshots, averaged)
    state = load_checkpoint(averaged)
    assert state[DIGEST_KEY] == tensor_digest(state)
    overwrite_weights(snapshots[0])
    with pytest.raises(CheckpointError, match=r"step-1\.pt is damaged"):
        average_checkpoints(snapshots, averaged)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "is empty (0 bytes): it was never written whole"),
        (b"root:x:0:0:root:/root:/bin/bash\n", "is not a checkpoint (torch.save writes a zip"),
        (None, "is truncated: a zip archive without its end"),
        (b"PK\x05\x06" + bytes(18), "cannot be read (truncated or not a checkpoint of this"),
    ],
)
def test_every_unreadable_file_is_refused_in_one_line_with_its_reason(
    tmp_path, checkpoint, content, reason
):
    path = tmp_path / "bad.pt"
    path.write_bytes(checkpoint.read_bytes()[:4000] if content is None else content)
    with pytest.raises(CheckpointError) as error:
        load_checkpoint(path)
    message = str(error.value)
    assert message.startswith(f"checkpoint {path} {reason}")
    assert "\n" not in message and "list index out of range" not in message
    assert not message.endswith(": ")
