"""A byte-order mark (U+FEFF) is no part of the text: translate.py's arguments, files and stdin,
and the `Translator`, translate a text that starts with one as the text without it. The model
is a stand-in that copies its source (both sides share the tiny tokenizer), so the output shows
what reached the model."""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence

import pytest

from llm_from_scratch.decoding.common import Hypothesis
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.torch_engine import TorchModel
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.programs import translate as translate_cli

BOM = "\ufeff"
TEXT = "the cat sat."


def copying(
    self: TorchModel, pieces: Sequence[Sequence[int]], cfg: DecodingConfig
) -> list[list[Hypothesis]]:
    return [[Hypothesis(list(piece), 0.0, hit_max_len=False)] * cfg.nbest for piece in pieces]


@pytest.fixture(autouse=True)
def copy_model(monkeypatch):
    monkeypatch.setattr(TorchModel, "decode_pieces", copying)


def translated(monkeypatch, capsys, args: list[str], stdin: bytes | None = None) -> list[str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    assert translate_cli.main(args) == 0
    return capsys.readouterr().out.split("\n")[:-1]


@pytest.fixture
def plain(checkpoint) -> str:
    """What the copy model makes of TEXT: TEXT in the run's source style."""
    return Translator.from_checkpoint(checkpoint, device="cpu").translate([TEXT])[0].text


def test_the_copy_model_shows_what_reaches_it(monkeypatch, capsys, checkpoint, plain):
    lines = translated(monkeypatch, capsys, ["--checkpoint", str(checkpoint), TEXT, "🍣" + TEXT])
    assert lines[0] == plain and lines[1] != plain  # a character at its start is kept


def test_an_argument_starting_with_a_bom_translates_as_without(
    monkeypatch, capsys, checkpoint, plain
):
    args = ["--checkpoint", str(checkpoint)]
    assert translated(monkeypatch, capsys, [*args, BOM + TEXT]) == [plain]


def test_a_file_saved_with_a_bom_translates_as_without(
    monkeypatch, capsys, checkpoint, plain, tmp_path
):
    source = tmp_path / "notepad.txt"
    source.write_bytes(f"{BOM}{TEXT}\n{TEXT}\n".encode())
    args = ["--checkpoint", str(checkpoint), "--input", str(source)]
    assert translated(monkeypatch, capsys, args) == [plain, plain]


def test_stdin_starting_with_a_bom_translates_as_without(monkeypatch, capsys, checkpoint, plain):
    stdin = f"{BOM}{TEXT}\n{BOM}{TEXT}\n".encode()  # files joined with cat: one a line
    args = ["--checkpoint", str(checkpoint)]
    assert translated(monkeypatch, capsys, args, stdin) == [plain, plain]


def test_the_translator_drops_a_bom_from_each_line_and_keeps_one_within(checkpoint, plain):
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    first, within, alone = translator.translate([f"{BOM}{TEXT}\n {BOM}{TEXT}", f"a{BOM}b", BOM])
    assert first.text == f"{plain}\n{plain}"
    # Within a text it is the tokenizer's to normalize (NFKC keeps it), as in training.
    assert within.text == translator.src_tok.normalize(f"a{BOM}b")
    assert alone.candidates == []  # nothing to translate
