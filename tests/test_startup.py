"""A command's `--help` and argument errors answer before the model's libraries load."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a command line that never reaches the model must not import: each takes a while.
HEAVY = ("torch", "datasets", "hydra", "tqdm", "sacrebleu")
# Run a script as `python scripts/X.py ARGS` does, then name the heavy modules it imported.
PROBE = """
import runpy, sys
script, *sys.argv[1:] = sys.argv[1:]
sys.argv[0] = script
try:
    runpy.run_path(script, run_name="__main__")
finally:
    print("imported:", *[name for name in {heavy!r} if name in sys.modules], file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["--help"], 0),
        (["--beam", "0", "Hello."], 2),
        (["--bogus"], 2),
        (["checkpoint=x"], 2),
        (["--input", "no-such-file.txt"], 2),
        (["--input", "no-such-file.txt", "Hello."], 2),
    ],
)
def test_translate_answers_before_importing_the_model(args, status):
    assert_answers_before_importing_the_model("translate.py", args, status)


@pytest.mark.parametrize("script", ["evaluate.py", "serve.py"])
@pytest.mark.parametrize(
    ("args", "status"),
    [(["--help"], 0), (["--bogus"], 2), (["checkpoint=x"], 2), (["decoding.beam_size"], 2)],
)
def test_the_other_model_programs_answer_before_importing_the_model(script, args, status):
    assert_answers_before_importing_the_model(script, args, status)


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["--help"], 0),
        (["--bogus"], 2),
        (["--format", "onnx"], 2),
        (["--format", "transformers", "--quantization", "int8"], 2),
        (["--push-to-hub", "user/model"], 2),
        (["--ensemble", "runs/a/best.pt"], 2),
    ],
)
def test_export_answers_before_importing_the_model(args, status):
    assert_answers_before_importing_the_model("export.py", args, status)


@pytest.mark.parametrize("script", ["train.py", "prepare_data.py", "train_tokenizer.py"])
def test_the_hydra_programs_answer_help_before_importing_hydra(script):
    assert_answers_before_importing_the_model(script, ["--help"], 0)


def test_train_help_lists_the_config_groups_their_options_and_where_to_read_more():
    from dataclasses import fields

    from llm_from_scratch.paths import PathsConfig
    from llm_from_scratch.training.config import TrainingConfig

    usage = subprocess.run(
        [sys.executable, "scripts/train.py", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    ).stdout
    lines = usage.splitlines()
    for group in ("data", "tokenizer", "model", "training", "decoding", "experiment"):
        listed = next(line for line in lines if line.startswith(f"  {group} "))
        first = sorted(path.stem for path in (ROOT / "configs" / group).glob("*.yaml"))[0]
        assert first in listed, f"{group}'s options are not listed"
    assert "model       base, big, small, tiny (default: small)" in usage
    assert "train.py --cfg job" in usage
    # Every setting it names is a key of the config, and there are a few, not the whole config.
    settings = re.findall(r"^  ((?:name|paths|training)[\w.]*)=", usage, re.M)
    assert 3 <= len(settings) <= 12
    known = {"name", *(f"paths.{field.name}" for field in fields(PathsConfig))}
    known |= {f"training.{field.name}" for field in fields(TrainingConfig)}
    assert set(settings) <= known
    assert len(lines) < 50


def assert_answers_before_importing_the_model(script: str, args: list[str], status: int) -> None:
    """`scripts/<script> args` exits with `status` (its usage, or a one-line error) having
    imported none of the heavy modules."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), f"scripts/{script}", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == status, result.stderr
    assert result.stderr.splitlines()[-1] == "imported:"
    if status:
        assert result.stderr.startswith("error: ")
    else:
        assert f"usage: {script}" in result.stdout
