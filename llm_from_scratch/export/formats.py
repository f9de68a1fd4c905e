"""The export formats' names, options and places: all that `export.py --help` and its argument
errors need, without importing torch or an inference engine."""

from __future__ import annotations

from pathlib import Path

from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import RunDir

# An export's folder is named after its format: runs/NAME/ctranslate2/, runs/NAME/transformers/
FORMATS = ("ctranslate2", "transformers")
# What marks a folder as this project's CTranslate2 export: its run, step and settings.
CTRANSLATE2_MANIFEST = "manifest.json"
QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16", "float16", "bfloat16")


class ExportError(UserError):
    """What cannot be exported, or an export directory that cannot be read."""


def run_export_dir(runs_dir: str | Path, run: str, export_format: str) -> Path:
    """Where `make export` writes the run `run`'s export in `export_format`, and where
    `--engine ctranslate2` looks for the CTranslate2 one."""
    return RunDir.named(runs_dir, run).export(export_format)
