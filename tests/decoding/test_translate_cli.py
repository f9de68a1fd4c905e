"""scripts/translate.py: arguments, files, pipes, and hostile input; never a traceback."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_from_scratch.checkpoint import CheckpointError
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import ROOT_VARIABLE
from llm_from_scratch.programs import translate as translate_cli

ROOT = Path(__file__).resolve().parents[2]


def run_script(
    args: list[str | bytes], stdin: bytes = b"", cwd: Path = ROOT, env: dict[str, str] | None = None
):
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "translate.py"), *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        # OMP_NUM_THREADS: see conftest.py, one_thread
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
        timeout=120,
    )


def run_main(monkeypatch, capsys, args: list[str], stdin: bytes | None = None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    status = translate_cli.main(args)
    return status, capsys.readouterr().out.split("\n")[:-1]


def test_one_line_per_argument(monkeypatch, capsys, checkpoint):
    status, lines = run_main(monkeypatch, capsys, ["--checkpoint", str(checkpoint), "Hi.", ""])
    assert status == 0
    assert len(lines) == 2
    assert lines[1] == ""


def test_input_file_aligned_line_by_line(monkeypatch, capsys, checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("Hello.\n\nHow are you?\r\nBye.\n", encoding="utf-8")
    status, lines = run_main(
        monkeypatch, capsys, ["--checkpoint", str(checkpoint), "--input", str(source)]
    )
    assert status == 0
    assert len(lines) == 4
    assert lines[1] == ""


def test_nbest_prints_scored_candidates(monkeypatch, capsys, checkpoint):
    args = ["--checkpoint", str(checkpoint), "--beam", "3", "--nbest", "2", "Hello.", "Bye."]
    status, lines = run_main(monkeypatch, capsys, args)
    assert status == 0
    assert [line.split("\t")[0] for line in lines] == ["1", "1", "2", "2"]
    scores = [float(line.split("\t")[1]) for line in lines[:2]]
    assert scores[0] >= scores[1]


def test_ensemble_of_a_checkpoint_with_itself_translates_like_it(monkeypatch, capsys, checkpoint):
    args = ["--checkpoint", str(checkpoint), "--beam", "3", "Hello.", "How are you?"]
    _, single = run_main(monkeypatch, capsys, args)
    status, doubled = run_main(monkeypatch, capsys, [*args, "--ensemble", str(checkpoint)])
    assert status == 0
    assert doubled == single


def test_nbest_above_beam_is_a_config_error(monkeypatch, capsys, checkpoint):
    with pytest.raises(UserError, match=r"decoding\.nbest=4"):
        translate_cli.main(["--checkpoint", str(checkpoint), "--beam", "2", "--nbest", "4", "x"])


def test_newest_runs_averaged_or_best_checkpoint_is_the_default(tmp_path):
    for index, run in enumerate(["a", "b/nested", "c"]):
        path = tmp_path / run / "best.pt"
        path.parent.mkdir(parents=True)
        path.touch()
        os.utime(path, (1000 + index, 1000 + [0, 5, 2][index]))
    assert translate_cli.newest_checkpoint(tmp_path) == tmp_path / "b/nested/best.pt"
    (tmp_path / "c/averaged.pt").touch()  # an older run's average does not win
    assert translate_cli.newest_checkpoint(tmp_path) == tmp_path / "b/nested/best.pt"
    (tmp_path / "b/nested/averaged.pt").touch()
    assert translate_cli.newest_checkpoint(tmp_path) == tmp_path / "b/nested/averaged.pt"
    with pytest.raises(CheckpointError, match="make train"):
        translate_cli.newest_checkpoint(tmp_path / "empty")


def test_hostile_stdin_is_translated_line_by_line(checkpoint):
    lines = ["😀 emoji", "", "tab\tand\x00nul\x1b[31m", "x" * 3000, "word " * 400, "\u2028", "."]
    result = run_script(["--checkpoint", str(checkpoint)], "\n".join(lines).encode() + b"\n")
    assert result.returncode == 0, result.stderr.decode()
    output = result.stdout.decode("utf-8").split("\n")
    assert len(output) == len(lines) + 1 and output[-1] == ""
    assert output[1] == ""


@pytest.mark.parametrize(
    "args,stdin,message",
    [
        ([], b"fine\n\xff\xfe broken\n", b"stdin is not valid UTF-8: line 2"),
        ([b"bad \xff arg"], b"", b"not valid UTF-8"),
        (["--checkpoint", "missing.pt", "hi"], b"", b"missing.pt does not exist"),
    ],
)
def test_bad_input_is_one_line_error(checkpoint, args, stdin, message):
    if not any(arg == "--checkpoint" for arg in args):
        args = ["--checkpoint", str(checkpoint), *args]
    result = run_script(args, stdin)
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert result.stderr.startswith(b"error: ") and result.stderr.count(b"\n") == 1
    assert message in result.stderr


def test_no_checkpoint_anywhere_is_one_line_error(tmp_path):
    # The default runs directory hangs off the project root, wherever the script is started.
    result = run_script(["hi"], cwd=tmp_path, env={ROOT_VARIABLE: str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.startswith(b"error: no --checkpoint given")
