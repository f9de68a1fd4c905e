"""The model a program loads: the flags that choose it (the same in translate, evaluate, serve and
export), its file, and the one function that loads its translator. Light to import: torch loads
only with the model."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_from_scratch.programs.arguments import PRESET_GROUP, UsageError, positive_int

if TYPE_CHECKING:
    from llm_from_scratch.decoding.translator import Translator

DEFAULT_RUN = "default"  # the run `make train` makes
# What `--engine` decodes with: the checkpoint in torch, or its CTranslate2 export.
ENGINES = ("torch", "ctranslate2")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """`--run`/`--checkpoint`, `--ensemble`, `--device`, `--engine` and `--beam`: which model,
    where, how."""
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--run",
        metavar="NAME",
        default=DEFAULT_RUN,
        help="use the final model of runs/NAME/: its averaged.pt, else its best.pt (default "
        f"NAME: {DEFAULT_RUN}, the run `make train` makes)",
    )
    choice.add_argument("--checkpoint", metavar="PATH", help="use this checkpoint file instead")
    parser.add_argument(
        "--ensemble",
        action="append",
        default=[],
        metavar="PATH",
        help="another checkpoint to decode with, as one model (repeatable; same tokenizers)",
    )
    parser.add_argument(
        "--device", default="auto", help="auto (CUDA when available, else CPU), cpu, cuda:0"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="torch",
        help="torch: the checkpoint; ctranslate2: its CTranslate2 export (`make export`), "
        "runs/NAME/ctranslate2/ or the export directory --checkpoint names",
    )
    parser.add_argument(
        "--beam",
        type=positive_int,
        metavar="N",
        help="beam size, 1 for greedy search (decoding.beam_size)",
    )


def model_file(args: argparse.Namespace, runs_dir: str | Path | None = None) -> Path:
    """The checkpoint (with `--engine ctranslate2`: the export directory) the model flags name;
    `runs_dir` defaults to the project's `runs/`."""
    from llm_from_scratch.checkpoint import checkpoint_path, run_model
    from llm_from_scratch.display import shown
    from llm_from_scratch.export.formats import CTRANSLATE2_MANIFEST, ExportError, run_export_dir
    from llm_from_scratch.paths import PathsConfig

    engine = getattr(args, "engine", "torch")
    if engine == "torch":
        given = [("--checkpoint", args.checkpoint)]
        given += [("--ensemble", path) for path in getattr(args, "ensemble", [])]
        for flag, path in given:
            if path and Path(path).is_dir():
                raise UsageError(directory_given(flag, Path(path), runs_dir))
    if args.checkpoint:
        return checkpoint_path(args.checkpoint)
    runs_dir = runs_dir or PathsConfig().runs_dir
    if engine == "ctranslate2":
        directory = run_export_dir(runs_dir, args.run, "ctranslate2")
        if not (directory / CTRANSLATE2_MANIFEST).is_file():
            raise ExportError(
                f"the run {args.run!r} has no CTranslate2 export ({shown(directory)} holds no "
                f'{CTRANSLATE2_MANIFEST}): `make export ARGS="--run {args.run}"` writes it'
            )
        return directory
    return run_model(runs_dir, args.run)


def directory_given(flag: str, directory: Path, runs_dir: str | Path | None = None) -> str:
    """The refusal of a directory given to `flag` as a checkpoint file: the run's model file in
    it, the run by name where it lies in `runs_dir` (the project's `runs/` by default), the
    CTranslate2 engine where it is an export."""
    from llm_from_scratch.display import shown
    from llm_from_scratch.export.formats import CTRANSLATE2_MANIFEST
    from llm_from_scratch.paths import PathsConfig, RunDir

    files = [path for path in RunDir(directory).final_models if path.is_file()]
    options = [f"a checkpoint file in it ({shown(files[0])})" if files else "a checkpoint file"]
    runs = Path(runs_dir or PathsConfig().runs_dir).resolve()
    if flag == "--checkpoint" and directory.resolve().parent == runs and files:
        options.insert(0, f"--run {directory.resolve().name}")
    if (directory / CTRANSLATE2_MANIFEST).is_file():
        options.insert(0, "--engine ctranslate2 (it is a CTranslate2 export)")
    return f"{flag} {directory} is a directory: give {' or '.join(options)}"


def decoding_overrides(args: argparse.Namespace, settings: dict[str, str]) -> dict[str, Any]:
    """The decoding keys the command line sets, as {KEY: VALUE}: those a `decoding=PRESET` stands
    for (`preset_settings`), then `--beam` and `--nbest`, then `decoding.KEY=VALUE`."""
    from omegaconf import OmegaConf

    from llm_from_scratch.decoding.config import DecodingConfig, preset_settings
    from llm_from_scratch.errors import ConfigError
    from llm_from_scratch.paths import config_dir
    from llm_from_scratch.schema import unknown_key

    overrides: dict[str, Any] = {}
    if PRESET_GROUP in settings:
        presets = config_dir() / PRESET_GROUP
        preset = presets / f"{settings[PRESET_GROUP]}.yaml"
        if not preset.is_file():
            names = ", ".join(sorted(path.stem for path in presets.glob("*.yaml")))
            raise ConfigError(f"decoding={settings[PRESET_GROUP]} is no preset; they are {names}")
        overrides |= preset_settings(OmegaConf.to_container(OmegaConf.load(preset)) or {})
    flags = {"beam_size": args.beam, "nbest": getattr(args, "nbest", None)}
    overrides |= {key: value for key, value in flags.items() if value is not None}
    prefix = f"{PRESET_GROUP}."
    # `null` is None, as in a Hydra override (`decoding.name_usage=null`)
    overrides |= {
        key.removeprefix(prefix): None if value == "null" else value
        for key, value in settings.items()
        if key.startswith(prefix)
    }
    known = [field.name for field in fields(DecodingConfig)]
    for key in overrides:  # the values are checked against the run's settings, once loaded
        if key not in known:
            raise ConfigError(unknown_key(f"decoding.{key}", known, prefix))
    return overrides


def load_translator(
    model: Path, args: argparse.Namespace, decoding: dict[str, Any], source_style: str | None = None
) -> tuple[Translator, dict[str, Any]]:
    """The translator of `model` (`model_file`) with the other model flags (`--ensemble`,
    `--device`, `--engine`), decoding with its run's settings and `decoding`'s keys replaced,
    and its run's config; `source_style` replaces the run's input style (`raw`: sources already
    in it). Which checkpoints it loaded goes to stderr."""
    from llm_from_scratch.decoding.loading import decoding_settings, restore_models
    from llm_from_scratch.decoding.translator import Translator
    from llm_from_scratch.device import resolve_device

    if args.engine == "ctranslate2":
        if args.ensemble:
            raise UsageError("--engine ctranslate2 decodes one exported model, not an ensemble")
        translator = Translator.from_export(
            model, args.device, source_style=source_style, **decoding
        )
        config = translator.model.config
    else:
        restored = restore_models([model, *args.ensemble], resolve_device(args.device))
        decode = decoding_settings(restored.config, None, decoding)
        translator = Translator.from_restored(restored, decode, source_style)
        config = restored.config
    for checkpoint in translator.checkpoints:
        print(f"model: {checkpoint}", file=sys.stderr)
    dictionary, corpus = translator.name_dictionary, translator.decode.name_usage
    if dictionary is not None and dictionary.usage is None and corpus:
        print(
            f"note: names spelled as the dictionary's entries say: decoding.name_usage's {corpus} "
            "is neither fetched nor in $DATA_MIRROR",
            file=sys.stderr,
        )
    return translator, config
