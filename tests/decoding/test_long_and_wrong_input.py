"""translate.py on input it should not take as it comes: a line too long to translate at once
is refused, naming it and the flag that sets the limit; text in the language the model writes
is translated with a warning; the progress bar counts the lines written."""

from __future__ import annotations

import io
import sys

import pytest

from llm_from_scratch.decoding.lines import MAX_CHARS
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.errors import UserError
from llm_from_scratch.programs import translate as translate_cli


def test_a_long_argument_is_refused_before_the_model_loads(tmp_path):
    missing = tmp_path / "missing.pt"  # loading it would fail: the length is checked first
    with pytest.raises(UserError) as refused:
        translate_cli.main(["--checkpoint", str(missing), "--max-chars", "20", "Hi.\n" + "x" * 21])
    assert str(refused.value) == (
        "TEXT: line 2 has 21 characters, more than --max-chars 20: break it into lines (at "
        "sentence ends), or raise --max-chars"
    )


def test_a_file_with_a_line_over_the_default_limit_is_refused_before_the_model_loads(
    tmp_path, capsys
):
    source = tmp_path / "in.txt"
    source.write_text("Hello.\nBye.\n" + "word " * (MAX_CHARS // 5 + 1) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=rf"^{source}: line 3 has 10,005 characters, more than "):
        translate_cli.main(["--checkpoint", str(tmp_path / "missing.pt"), "--input", str(source)])
    assert capsys.readouterr().out == ""  # nothing translated


def test_a_long_line_on_stdin_is_refused(monkeypatch, capsys, checkpoint):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Hi.\n" + b"x" * 31)))
    with pytest.raises(UserError, match=r"^stdin: line 2 has 31 characters, more than --max-"):
        translate_cli.main(["--checkpoint", str(checkpoint), "--max-chars", "30"])
    assert capsys.readouterr().out == ""


def test_a_raised_limit_takes_the_line(monkeypatch, capsys, checkpoint):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"word " * 30 + b"\n")))
    assert translate_cli.main(["--checkpoint", str(checkpoint), "--max-chars", "150"]) == 0
    assert len(capsys.readouterr().out.split("\n")) == 2


def test_text_in_the_target_language_is_translated_with_one_warning(capsys, checkpoint):
    assert Translator.from_checkpoint(checkpoint, "cpu").target_lang == "ja"
    args = ["--checkpoint", str(checkpoint), "Hello.", "今日は雨です。", "駅はどこですか"]
    assert translate_cli.main(args) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split("\n")) == 4  # every line translated
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: 2 lines (from line 2) are mostly Japanese, the language this model writes; "
        "it reads English: translating anyway"
    ]


def test_english_gives_no_warning(capsys, checkpoint):
    assert translate_cli.main(["--checkpoint", str(checkpoint), "Hello.", "I ate 寿司."]) == 0
    assert "warning" not in capsys.readouterr().err


def test_the_progress_bar_counts_the_lines_written(monkeypatch, capsys, checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("Hello.\nBye.\nGood night.\nYes.\nNo.\n", encoding="utf-8")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal watching...
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)  # ...output going to a file
    args = ["--checkpoint", str(checkpoint), "--input", str(source), "--batch-lines", "2"]
    assert translate_cli.main(args) == 0
    shown = [part.split("/5")[0].split()[-1] for part in capsys.readouterr().err.split("\r")[1:]]
    # each group's lines once they are written, never the first of a group alone
    assert [count for count in dict.fromkeys(shown)] == ["0", "2", "4", "5"]
