"""Bad input given on the command line is one line on stderr, exit status 2, and is caught before
the slow part (loading a model, decoding, preparing data) begins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    return result.stderr.strip()


@pytest.mark.parametrize("kind", ["missing", "directory"])
@pytest.mark.slow
def test_translate_input_that_cannot_be_read_is_refused_before_the_model_loads(tmp_path, kind):
    given = tmp_path / "missing.txt" if kind == "missing" else tmp_path
    # The checkpoint does not exist either: the input is checked first.
    result = run(
        "scripts/translate.py", "--checkpoint", str(tmp_path / "no.pt"), "--input", str(given)
    )
    expected = {
        "missing": f"error: --input {given}: No such file or directory",
        "directory": f"error: --input {given} is a directory, not a file of sentences",
    }
    assert one_line_error(result) == expected[kind]


@pytest.mark.slow
def test_evaluate_output_dir_under_a_file_is_refused_before_decoding(tmp_path):
    (tmp_path / "a_file").write_text("")
    output_dir = tmp_path / "a_file" / "eval"
    result = run(
        "scripts/evaluate.py",
        "--checkpoint",
        str(tmp_path / "no.pt"),
        "--output-dir",
        str(output_dir),
    )
    assert one_line_error(result) == (
        f"error: output_dir={output_dir} cannot be a directory: {tmp_path / 'a_file'} is a file"
    )


@pytest.mark.slow
def test_a_corpus_that_is_not_utf8_is_named_with_its_line(tmp_path):
    (tmp_path / "raw" / "mine").mkdir(parents=True)
    train = tmp_path / "raw" / "mine" / "train.tsv"
    train.write_bytes(b"a\tb\n" * 5 + b"caf\xe9\tx\n")
    result = run(
        "scripts/train.py",
        "data=local_tsv",
        "data.name=mine",
        f"paths.raw_dir={tmp_path / 'raw'}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.run_dir={tmp_path / 'run'}",
    )
    assert one_line_error(result) == (
        f"error: {train} is not valid UTF-8: line 6 has the byte 0xe9; save the file as UTF-8"
    )
