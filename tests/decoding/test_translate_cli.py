"""scripts/translate.py: arguments, files, pipes, and hostile input; never a traceback."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_from_scratch.checkpoint import CheckpointError
from llm_from_scratch.decoding.translator import Translator
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import ROOT_VARIABLE
from llm_from_scratch.programs import translate as translate_cli

from .builders import save_run_checkpoint

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


def test_each_line_gives_one_line_joining_its_sentences(monkeypatch, capsys, checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("Hello. How are you? Bye!\n\nThanks.\n", encoding="utf-8")
    model = ["--checkpoint", str(checkpoint)]
    _, lines = run_main(monkeypatch, capsys, [*model, "--input", str(source)])
    _, one_by_one = run_main(monkeypatch, capsys, [*model, "Hello.", "How are you?", "Bye!"])
    assert lines == ["".join(one_by_one), "", lines[2]] and lines[2]
    _, from_arguments = run_main(
        monkeypatch, capsys, [*model, "Hello. How are you? Bye!\n\nThanks."]
    )
    assert from_arguments == lines  # an argument's lines are output lines too


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


@pytest.mark.slow
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
@pytest.mark.slow
def test_bad_input_is_one_line_error(checkpoint, args, stdin, message):
    if not any(arg == "--checkpoint" for arg in args):
        args = ["--checkpoint", str(checkpoint), *args]
    result = run_script(args, stdin)
    assert result.returncode == 2
    # One line: the error, after the line saying which model was loaded when it was.
    *before, error = result.stderr.decode("utf-8", "replace").splitlines()
    assert all(line.startswith("model: ") for line in before) and len(before) <= 1
    assert error.startswith("error: ")
    assert message.decode() in error


@pytest.mark.slow
def test_no_model_anywhere_is_one_line_error(tmp_path):
    # The default runs directory hangs off the project root, wherever the script is started.
    result = run_script(["hi"], cwd=tmp_path, env={ROOT_VARIABLE: str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"error: no run 'default' with averaged.pt or best.pt under {tmp_path / 'runs'} (no run "
        "has a model yet); `make train` makes the run `default`\n"
    )


def test_help_describes_the_real_default_model(capsys):
    with pytest.raises(SystemExit) as exit_status:
        translate_cli.main(["--help"])
    assert exit_status.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert (
        "final model of runs/NAME/: its averaged.pt, else its best.pt (default NAME: default"
        in (help_text)
    )
    assert "newest" not in help_text


@pytest.mark.parametrize(
    "args,message",
    [
        (["checkpoint=a.pt", "Hi."], "write `--checkpoint a.pt`, not `checkpoint=a.pt`"),
        (["beam=3", "Hi."], "write `--beam 3`, not `beam=3`"),
        (["--decoding.beam_size=3", "Hi."], "write `decoding.beam_size=3` without the dashes"),
        (["--batch_lines", "2", "Hi."], "unknown option --batch_lines: the flag is --batch-lines"),
        (["--run", "a", "--checkpoint", "b.pt"], "not allowed with argument --run"),
        (["--beam", "0", "Hi."], "argument --beam: 0 must be at least 1"),
        (["--input", "a.txt", "Hi."], "texts to translate or --input FILE, not both"),
        (["decoding.beam=2", "Hi."], "decoding.beam is not a decoding setting"),
        (["decoding.length_penalty=high", "Hi."], "decoding.length_penalty=high: Value 'high'"),
    ],
)
def test_the_other_spelling_is_refused_with_the_right_one(checkpoint, args, message):
    if "--run" not in args and "--checkpoint" not in args:
        args = ["--checkpoint", str(checkpoint), *args]
    with pytest.raises(UserError) as error:
        translate_cli.main(args)
    assert message in str(error.value)


def test_decoding_keys_are_set_as_key_value(monkeypatch, capsys, checkpoint):
    args = ["--checkpoint", str(checkpoint), "decoding.beam_size=3", "Hi.", "decoding.nbest=2"]
    status, lines = run_main(monkeypatch, capsys, args)
    assert status == 0
    assert [line.split("\t")[0] for line in lines] == ["1", "1"]  # one input, two candidates


def test_interrupt_keeps_what_was_translated(monkeypatch, capsys, checkpoint, tmp_path):
    texts = [f"sentence {n}." for n in range(7)]
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{text}\n" for text in texts), encoding="utf-8")
    expected = Translator.from_checkpoint(checkpoint, "cpu").translate_iter(texts[:4], 2)
    translate, groups = Translator.translate, []

    def interrupted_at_the_third_group(self, texts):
        groups.append(texts)
        if len(groups) == 3:
            raise KeyboardInterrupt
        return translate(self, texts)

    monkeypatch.setattr(Translator, "translate", interrupted_at_the_third_group)
    args = ["--checkpoint", str(checkpoint), "--input", str(source), "--batch-lines", "2"]
    status, lines = run_main(monkeypatch, capsys, args)
    assert status == 130
    assert lines == [t.text for t in expected]


def unbuffered_off() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}


@pytest.mark.slow
def test_a_killed_run_keeps_the_lines_it_wrote(checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    # Few enough lines that all their translations fit in the pipe's buffer (the untrained model
    # writes about 140 bytes a line): unflushed, they would all come at exit, none before.
    lines = [f"line {n} of a long file." for n in range(50)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "translate.py"), "--checkpoint", str(checkpoint),
         "--input", str(source), "--batch-lines", "1", "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        # Buffered as for a user, whatever this environment says.
        env={**unbuffered_off(), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    first = [process.stdout.readline() for _ in range(3)]  # written before the rest is done
    process.kill()
    written = b"".join(first) + process.stdout.read()
    process.wait()
    kept = written.decode("utf-8").split("\n")[:-1]  # a last line cut mid-write is not counted
    assert 3 <= len(kept) < len(lines)
    translator = Translator.from_checkpoint(checkpoint, "cpu")
    assert kept == [t.text for t in translator.translate_iter(lines[: len(kept)], batch_lines=1)]


def test_progress_bar_goes_to_stderr_only(monkeypatch, capsys, checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("Hello.\nBye.\nGood night.\n", encoding="utf-8")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal watching...
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)  # ...output going to a file
    args = ["--checkpoint", str(checkpoint), "--input", str(source), "--batch-lines", "1"]
    status = translate_cli.main(args)
    captured = capsys.readouterr()
    assert status == 0
    assert len(captured.out.split("\n")) == 4
    assert "3/3" in captured.err and "line" in captured.err
    assert captured.err.startswith("model: ")


@pytest.fixture
def runs(tmp_path, monkeypatch, tokenizer):
    """A project root with runs `default` (best.pt at step 300) and, written later, `smoke`."""
    monkeypatch.setenv(ROOT_VARIABLE, str(tmp_path))
    runs = tmp_path / "runs"
    for name, step in (("default", 300), ("smoke", 40)):
        save_run_checkpoint(runs / name / "best.pt", tokenizer, step, {"bleu": step / 10})
    return runs


def test_default_model_is_run_default_not_the_newest(monkeypatch, capsys, runs):
    assert translate_cli.main(["Hi."]) == 0
    loaded = Path(runs / "default" / "best.pt").resolve()
    assert capsys.readouterr().err == f"model: {loaded} (step 300, greedy dev BLEU 30.0)\n"


def test_run_picks_a_run_and_prefers_its_averaged_model(monkeypatch, capsys, runs, tokenizer):
    save_run_checkpoint(runs / "smoke" / "averaged.pt", tokenizer, 40, {"bleu": 4.5}, averaged=3)
    translate_cli.main(["--run", "smoke", "Hi."])
    stderr = capsys.readouterr().err
    assert stderr.startswith(f"model: {(runs / 'smoke' / 'averaged.pt').resolve()} (")
    assert "(average of 3 snapshots, step 40, greedy dev BLEU 4.5)" in stderr


def test_missing_run_lists_the_runs_there_are(runs):
    with pytest.raises(
        CheckpointError, match=r"no run 'tiny' .* \(runs with a model: default, smoke\)"
    ):
        translate_cli.main(["--run", "tiny", "Hi."])


def test_a_relative_checkpoint_path_is_found_from_anywhere_as_a_run_is(
    monkeypatch, capsys, runs, tmp_path
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    relative = "runs/default/best.pt"
    translator = Translator.from_checkpoint(relative, device="cpu")
    assert translator.checkpoints[0].path == runs / "default" / "best.pt"
    assert translate_cli.main(["--checkpoint", relative, "Hi."]) == 0
    (elsewhere / "runs" / "default").mkdir(parents=True)
    (elsewhere / relative).write_bytes((runs / "default" / "best.pt").read_bytes())
    here = Translator.from_checkpoint(relative, device="cpu")  # the working directory's first
    assert here.checkpoints[0].path == Path(relative)


def test_a_checkpoint_found_nowhere_names_the_paths_tried(monkeypatch, runs, tmp_path):
    monkeypatch.chdir(tmp_path / "runs")
    message = (
        f"checkpoint runs/nope/best.pt does not exist (looked for "
        f"{tmp_path / 'runs' / 'runs/nope/best.pt'} and {tmp_path / 'runs/nope/best.pt'})"
    )
    for load in (
        lambda: Translator.from_checkpoint("runs/nope/best.pt", device="cpu"),
        lambda: translate_cli.main(["--checkpoint", "runs/nope/best.pt", "Hi."]),
    ):
        with pytest.raises(CheckpointError, match="^" + re.escape(message) + "$"):
            load()


@pytest.mark.parametrize(("args", "stdin", "origin"), [(["   \n  "], None, "the input"),
                                                        ([], b" \n\t\n", "stdin")])  # fmt: skip
def test_whitespace_alone_gets_empty_lines_and_a_warning(
    monkeypatch, capsys, checkpoint, args, stdin, origin
):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    assert translate_cli.main(["--checkpoint", str(checkpoint), *args]) == 0
    captured = capsys.readouterr()
    assert captured.out == "\n\n"  # one line out per line in, as the API answers ""
    assert captured.err.endswith(
        f"warning: {origin} has nothing to translate, only spaces and line breaks: the "
        "translation is empty\n"
    )
