"""What programs write: a folder that cannot take it is refused before the work, in one line;
what they write is readable by others as any new file is; a directory given for a file, or a
missing export, says what to give instead."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_from_scratch.atomic import UnwritableError
from llm_from_scratch.export.formats import ExportError
from llm_from_scratch.programs import average_checkpoints, export, plot_curves, translate
from llm_from_scratch.programs.arguments import UsageError
from llm_from_scratch.programs.command import run_main
from llm_from_scratch.programs.model_choice import model_file

ROOT = Path(__file__).resolve().parents[1]


def takes_a_file(folder: Path) -> bool:
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


@pytest.fixture
def read_only(tmp_path) -> Iterator[Path]:
    """A folder that takes no new file: mode 0555, or where the tests run as root (whom modes do
    not stop) a folder of sysfs, which takes none from anyone."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        candidates = [folder, Path("/sys/kernel")]
        chosen = next((c for c in candidates if c.is_dir() and not takes_a_file(c)), None)
        if chosen is None:
            pytest.skip("no folder here refuses a new file")
        yield chosen
    finally:
        folder.chmod(0o755)


def test_export_refuses_a_folder_it_cannot_write_before_loading_the_model(read_only, tmp_path):
    missing = tmp_path / "not-loaded.pt"  # loading it first would fail otherwise
    with pytest.raises(UnwritableError, match=r"^cannot write the export .*out: .* not writable"):
        export.main(["--checkpoint", str(missing), "--output", str(read_only / "out")])


def test_averaging_refuses_an_output_it_cannot_write_before_reading(read_only, tmp_path):
    missing = [str(tmp_path / "a.pt"), str(tmp_path / "b.pt")]
    with pytest.raises(UnwritableError, match=r"give another --output$"):
        average_checkpoints.main([*missing, "-o", str(read_only / "averaged.pt")])


def test_plotting_refuses_an_output_it_cannot_write_before_reading(read_only, tmp_path):
    with pytest.raises(UnwritableError, match=r"give another --output$"):
        plot_curves.main([str(tmp_path / "no-run"), "-o", str(read_only / "plots" / "c.png")])


def test_an_output_under_a_file_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(UnwritableError, match="a-file is a file, not a directory"):
        plot_curves.main([str(tmp_path), "-o", str(tmp_path / "a-file" / "c.png")])


def run_script(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "DATA_MIRROR"}
    return subprocess.run(
        [sys.executable, f"scripts/{script}", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_make_data_refuses_a_raw_folder_it_cannot_write_before_fetching(read_only):
    # No mirror: without the check, the fetch would start a download.
    result = run_script("prepare_data.py", "data=tanaka_graded", f"paths.raw_dir={read_only}/raw")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: cannot write the files of tanaka_graded: ")
    assert result.stderr.endswith("set paths.raw_dir=DIR\n")


@pytest.mark.slow
def test_make_tokenizer_refuses_a_tokenizer_folder_it_cannot_write(corpus_mirror, read_only):
    result = run_script(
        "train_tokenizer.py",
        "data=tanaka_graded",
        f"paths.raw_dir={corpus_mirror}",  # complete: read, not written
        f"paths.tokenizer_dir={read_only}/tokenizers",
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: cannot write the tokenizer ")
    assert result.stderr.endswith("set paths.tokenizer_dir=DIR\n")


def test_a_write_refused_late_is_one_line(read_only, capsys):
    def main(argv):
        (read_only / "late.txt").write_text("never")
        return 0

    with pytest.raises(SystemExit) as exit_status:
        run_main(main)
    assert exit_status.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith("error: ") and "late.txt: change its permissions" in error


def model_args(**flags) -> argparse.Namespace:
    defaults = {"checkpoint": None, "run": "default", "engine": "torch", "ensemble": []}
    return argparse.Namespace(**(defaults | flags))


def test_a_run_directory_given_as_checkpoint_names_the_run_and_its_model(tmp_path):
    run = tmp_path / "runs" / "mine"
    run.mkdir(parents=True)
    (run / "best.pt").write_bytes(b"")
    with pytest.raises(UsageError) as refused:
        model_file(model_args(checkpoint=str(run)), tmp_path / "runs")
    assert str(refused.value) == (
        f"--checkpoint {run} is a directory: give --run mine or a checkpoint file in it "
        f"({run / 'best.pt'})"
    )


def test_translate_refuses_a_directory_given_as_checkpoint(tmp_path):
    with pytest.raises(UsageError, match=r"^--checkpoint .* is a directory: give a checkpoint"):
        translate.main(["--checkpoint", str(tmp_path), "Hello."])


def test_a_missing_ctranslate2_export_names_the_command_for_its_run(tmp_path):
    with pytest.raises(ExportError) as refused:
        model_file(model_args(engine="ctranslate2", run="mine"), tmp_path)
    assert str(refused.value).endswith('`make export ARGS="--run mine"` writes it')


def test_the_transformers_export_is_readable_by_all_as_a_new_file_is(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    from llm_from_scratch.tokenizer.bpe import BPETokenizer
    from tests.decoding.builders import save_tiny_checkpoint

    checkpoint = save_tiny_checkpoint(
        tmp_path / "best.pt", BPETokenizer.train(["hello there.", "こんにちは。"], vocab_size=300)
    )
    mask = os.umask(0o022)
    try:
        output = tmp_path / "transformers"
        export.main(
            ["--checkpoint", str(checkpoint), "--format", "transformers", "--output", str(output)]
        )
    finally:
        os.umask(mask)
    modes = {path.name: path.stat().st_mode & 0o777 for path in output.iterdir()}
    assert modes["model.safetensors"] == 0o644
    assert set(modes.values()) == {0o644}
