"""The command-line surface: Makefile targets, one-line errors, `make data` from a mirror."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_from_scratch.tokenizer.bpe import BPETokenizer
from tests.decoding.builders import save_tiny_checkpoint

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGETS = (
    "help",
    "setup",
    "data",
    "tokenizer",
    "train",
    "translate",
    "eval",
    "serve",
    "tensorboard",
    "test",
    "test-full",
    "lint",
    "bench",
)


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True, **kwargs)


def test_make_help_lists_every_target_with_a_description_in_plain_text_when_piped():
    listing = run("make").stdout  # stdout a pipe, not a terminal
    assert "\x1b" not in listing  # no colour codes in a pipe
    listed = dict(re.findall(r"^\s+([\w-]+)\s+(\S.*)$", listing, re.M))
    for target in TARGETS:
        assert listed.get(target), f"`make help` does not describe {target}"


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pty")
def test_make_help_is_coloured_at_a_terminal():
    controller, terminal = os.openpty()
    try:
        try:
            subprocess.run(["make", "help"], cwd=REPO_ROOT, stdout=terminal, timeout=30, check=True)
        finally:
            os.close(terminal)
        listing = read_until_hung_up(controller)
    finally:
        os.close(controller)
    assert "\x1b[36mhelp" in listing


def read_until_hung_up(controller: int) -> str:
    """Everything written to a pty: one read may return a single line (say, a sub-make's
    "Entering directory"), and the controller reports EIO once its last writer has closed."""
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_make_tensorboard_passes_its_args_and_a_logdir_among_them_replaces_the_default():
    def command(args: str) -> list[str]:
        dry_run = run(
            "make", "-n", "--no-print-directory", "--old-file=.venv/.installed", "tensorboard",
            f"ARGS={args}",
        )  # fmt: skip
        return dry_run.stdout.split()

    assert command("--port 6007")[-4:] == ["--logdir", "runs", "--port", "6007"]
    assert command("--logdir runs/smoke")[-2:] == ["--logdir", "runs/smoke"]
    assert command("--logdir runs/smoke").count("--logdir") == 1


def test_setup_is_a_no_op_once_installed():
    if not (REPO_ROOT / ".venv" / ".installed").is_file():
        pytest.skip("not installed through `make setup`")
    assert run("make", "--question", ".venv/.installed").returncode == 0


@pytest.mark.slow
def test_invalid_config_is_one_line_with_exit_status_2(tmp_path):
    result = run(
        sys.executable,
        "scripts/train.py",
        "model.d_model=250",
        "model.n_heads=8",
        f"hydra.run.dir={tmp_path}",
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "error: model.d_model=250 is not divisible by model.n_heads=8"


@pytest.mark.slow
def test_a_refused_command_leaves_no_run_directory_and_names_a_file_in_its_way(tmp_path):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a run\n")
    refused = run(sys.executable, "scripts/train.py", f"paths.run_dir={in_the_way}")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"error: paths.run_dir={in_the_way} cannot be a directory: {in_the_way} is a file"
    )
    run_dir = tmp_path / "run"
    bad = run(sys.executable, "scripts/train.py", f"paths.run_dir={run_dir}", "training.lr=-1")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: training.lr=-1.0 must be positive"
    assert not run_dir.exists()  # no empty train.log either


def test_the_config_is_checked_before_hydra_makes_the_run_directory(tmp_path):
    from llm_from_scratch.errors import ConfigError
    from llm_from_scratch.programs.train import check_config_before_hydra

    (tmp_path / "runs").write_text("")
    with pytest.raises(ConfigError, match=r"^paths.runs_dir=.*runs cannot be a directory: .*"):
        check_config_before_hydra([f"paths.runs_dir={tmp_path / 'runs'}", "name=x"])
    with pytest.raises(ConfigError, match=r"^training.lr=-1.0 must be positive$"):
        check_config_before_hydra(["training.lr=-1"])
    check_config_before_hydra([f"paths.run_dir={tmp_path / 'fresh'}"])  # nothing in the way
    check_config_before_hydra(["--help"])  # Hydra's own


def test_make_data_copies_from_the_mirror(corpus_mirror, tmp_path):
    # --old-file: never (re)install the virtual environment from here, even when pyproject.toml
    # is newer than its stamp (with this PATH, `python3` may not be the one it was built with).
    result = run(
        "make",
        "--no-print-directory",
        "--old-file=.venv/.installed",
        "data",
        f"ARGS=paths.raw_dir={tmp_path}",
        env={"DATA_MIRROR": str(corpus_mirror), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    # The default data is a mixture: every corpus of it is fetched.
    assert "small_parallel_enja: 6 files" in result.stdout
    assert "tanaka_graded: 3 files" in result.stdout
    assert (tmp_path / "small_parallel_enja" / "train.ja").stat().st_size == 2784447


def test_local_only_dataset_without_mirror_fails_in_one_line(tmp_path):
    result = run(
        sys.executable,
        "scripts/prepare_data.py",
        "data=tanaka_graded",
        f"paths.raw_dir={tmp_path}",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "DATA_MIRROR" in result.stderr


@pytest.mark.parametrize("script", ["translate.py", "evaluate.py", "train.py", "serve.py"])
def test_script_outside_the_environment_says_how_to_run_it(script):
    # -S: no site-packages, so neither the installed project nor torch, as with a system Python.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = run(sys.executable, "-S", f"scripts/{script}", "Hello.", env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {sys.executable} cannot import ")
    assert f"run `make setup` once, then `.venv/bin/python scripts/{script} ...`" in result.stderr


@pytest.mark.slow
def test_make_translate_writes_only_translations(tmp_path):
    if not (REPO_ROOT / ".venv" / ".installed").is_file():
        pytest.skip("not installed through `make setup`")
    checkpoint = save_tiny_checkpoint(
        tmp_path / "best.pt", BPETokenizer.train(["hello there.", "こんにちは。"], vocab_size=300)
    )
    # --old-file: never (re)install from here; PY: this interpreter, with this checkout importable.
    result = run(
        "make", "--no-print-directory", "--old-file=.venv/.installed", f"PY={sys.executable}",
        "translate", f"ARGS=--checkpoint {checkpoint} --device cpu",
        input="Hello.\nHow are you?\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 2  # one line per input line, no echo of the command
    assert "scripts/translate.py" not in result.stdout
    assert result.stderr.startswith("model: ")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["model=tinny"],
            "error: model=tinny: there is no configs/model/tinny.yaml; did you mean model=tiny? "
            "(the choices: base, big, small, tiny)",
        ),
        (
            ["training.max_step=10"],
            "error: training.max_step is not a training setting; did you mean training.max_steps?",
        ),
        (
            ["training.lr=fast"],
            "error: training.lr=fast: 'fast' is not a number; give a number, such as "
            "training.lr=0.002",
        ),
        (
            ["training.lr"],
            "error: cannot read 'training.lr' as KEY=VALUE: missing EQUAL at '<EOF>' (see "
            "https://hydra.cc/docs/1.2/advanced/override_grammar/basic for details)",
        ),
    ],
)
def test_a_config_error_keeps_its_substance_in_one_line(overrides, message, monkeypatch, capsys):
    from llm_from_scratch.programs import train as program

    monkeypatch.chdir(REPO_ROOT)  # the message shows configs/ as typed from here
    monkeypatch.setattr(sys, "argv", ["scripts/train.py", *overrides])
    with pytest.raises(SystemExit) as exit_status:
        program.main()
    assert exit_status.value.code == 2
    assert capsys.readouterr().err == message + "\n"


def test_a_typo_in_a_data_file_names_the_file_and_the_key(tmp_path, monkeypatch, capsys):
    from llm_from_scratch.paths import ROOT_VARIABLE
    from llm_from_scratch.programs import train as program

    configs = Path(shutil.copytree(REPO_ROOT / "configs", tmp_path / "configs"))
    text = (configs / "data" / "local_tsv.yaml").read_text(encoding="utf-8")
    (configs / "data" / "mine.yaml").write_text(text.replace("dev_fraction:", "dev_fracton:"))
    monkeypatch.setenv(ROOT_VARIABLE, str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["scripts/train.py", "data=mine"])
    with pytest.raises(SystemExit) as exit_status:
        program.main()
    assert exit_status.value.code == 2
    assert capsys.readouterr().err == (
        "error: in configs/data/mine.yaml: data.corpus.dev_fracton is not a data.corpus "
        "setting; did you mean data.corpus.dev_fraction?\n"
    )
