"""The Python API as the README shows it: `from llm_from_scratch import Translator`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import llm_from_scratch
from llm_from_scratch.decoding import loading
from llm_from_scratch.decoding import translator as translator_module
from llm_from_scratch.paths import ROOT_VARIABLE

from .builders import save_run_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The code block of the README's "From Python" section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### From Python") :]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_readme_example_runs_and_loads_each_model_once(tmp_path, monkeypatch, capsys, tokenizer):
    monkeypatch.setenv(ROOT_VARIABLE, str(tmp_path))  # the project whose runs/ it uses
    elsewhere = tmp_path / "elsewhere"  # as printed, from any directory: nothing else there
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name in ("averaged.pt", "best.pt"):
        save_run_checkpoint(tmp_path / "runs" / "default" / name, tokenizer, 300, {"bleu": 9.0})
    loaded = []
    load = loading.load_checkpoint
    monkeypatch.setattr(loading, "load_checkpoint", lambda path: loaded.append(path) or load(path))
    exec(compile(readme_example(), "README.md", "exec"), {})
    printed = capsys.readouterr().out.split("\n")[:-1]
    assert len(printed) == 1 + 3 + 2  # a translation, 3 scored candidates, 2 more translations
    assert all(
        line.split(" ", 1)[0].lstrip("-").replace(".", "").isdigit() for line in printed[1:4]
    )
    assert [Path(path).resolve() for path in loaded] == [
        (tmp_path / "runs" / "default" / name).resolve() for name in ("averaged.pt", "best.pt")
    ]


def test_package_import_is_light_and_translator_comes_on_first_use():
    code = "import sys, llm_from_scratch; print('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout == "False\n"
    assert llm_from_scratch.Translator is translator_module.Translator
    with pytest.raises(AttributeError, match="no attribute 'Translater'"):
        llm_from_scratch.Translater  # noqa: B018
