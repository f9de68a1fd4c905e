"""The command line of translate.py and evaluate.py: one convention for both.

Flags (`--run NAME`, `--checkpoint PATH`, `--beam N`, ...) set what a user sets often, the same
flag meaning the same thing in both programs; any other config key is a Hydra-style `KEY=VALUE`
(`decoding.length_penalty=1.4`). The other spelling of either, `checkpoint=X` or
`--decoding.length_penalty=1.4`, is refused with the right one.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import NoReturn

from llm_from_scratch.errors import UserError

DEFAULT_RUN = "default"  # the run `make train` makes
# What `--engine` decodes with: the checkpoint in torch, or its CTranslate2 export.
ENGINES = ("torch", "ctranslate2")
# Config keys that have a flag, with the flag.
FLAGS = {
    "run": "--run",
    "checkpoint": "--checkpoint",
    "ensemble": "--ensemble",
    "device": "--device",
    "engine": "--engine",
    "beam": "--beam",
    "beam_size": "--beam",
    "nbest": "--nbest",
    "input": "--input",
    "split": "--split",
    "limit": "--limit",
    "output_dir": "--output-dir",
    "data": "--data",
}
# Hydra's own options, which print something and exit: with one of them the command line goes
# to Hydra (`--cfg job` prints the composed config, `-sc install=bash` installs shell completion).
HYDRA_OPTIONS = ("--cfg", "-c", "--info", "-i", "--shell-completion", "-sc", "--hydra-help")
HYDRA_CFG_OPTIONS = ("--resolve", "--package", "-p")  # they modify --cfg
_OVERRIDE = re.compile(r"^[+~]{0,2}(?P<key>[A-Za-z_][\w.]*)=(?P<value>.*)$", re.S)


class UsageError(UserError):
    """A command line that does not parse, or that spells a setting the other way."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors, like every other error of the programs."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


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


def override(arg: str) -> tuple[str, str] | None:
    """`(key, value)` when `arg` is a Hydra-style `KEY=VALUE`, else None."""
    match = _OVERRIDE.match(arg)
    return (match["key"], match["value"]) if match else None


def refuse_flag_key(arg: str) -> None:
    """Refuse `checkpoint=X` and the like: settings that have a flag take the flag."""
    parsed = override(arg)
    if parsed and parsed[0] in FLAGS:
        key, value = parsed
        raise UsageError(f"write `{FLAGS[key]} {value}`, not `{arg}`")


def refuse_unknown_option(arg: str, prog: str) -> NoReturn:
    """Explain an option the parser does not know: a flag misspelled, or a dashed config key."""
    name, _, value = arg.lstrip("-").partition("=")
    if name.replace("-", "_") in FLAGS:
        raise UsageError(f"unknown option {arg}: the flag is {FLAGS[name.replace('-', '_')]}")
    if "." in name:
        raise UsageError(
            f"write `{name}={value or 'VALUE'}` without the dashes: config keys without a flag "
            f"in `{prog} --help` are set as KEY=VALUE"
        )
    raise UsageError(f"unknown option {arg} (see {prog} --help)")


def quoted(value: str) -> str:
    """`value` as a quoted string of Hydra's override grammar, whatever characters it has."""
    # Hydra reads a backslash literally except in a run before a quote (or the closing quote).
    escaped = re.sub(r"(\\*)('|$)", lambda m: m[1] * 2 + ("\\'" if m[2] else ""), value)
    return f"'{escaped}'"


def option_name(arg: str) -> str:
    """`--cfg` of `--cfg=job`."""
    return arg.split("=", 1)[0]


def options_first(args: Sequence[str]) -> list[str]:
    """`args` with Hydra's options (and their values) before the overrides, as Hydra's parser
    wants them."""
    options, overrides = [], []
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if not arg.startswith("-"):
            overrides.append(arg)
            continue
        options.append(arg)
        takes_value = arg in ("--cfg", "-c", "--package", "-p", "--info", "-i")
        if takes_value and position < len(args) and "=" not in args[position]:
            options.append(args[position])  # e.g. `job` of `--cfg job`
            position += 1
    return options + overrides


def without_flags(line: str) -> str:
    """A command line less the flags of `FLAGS` and their values, which Hydra does not know."""
    kept: list[str] = []
    words = iter(line.split(" "))  # a trailing "" is the new word being completed
    for word in words:
        if word in FLAGS.values():
            next(words, None)
        elif option_name(word) not in FLAGS.values():
            kept.append(word)
    return " ".join(kept)


def parser_from_doc(parser_class: type[Parser], prog: str, doc: str) -> Parser:
    """A parser for the program `prog`: its description is the docstring's first paragraph (after
    the `scripts/x.py:` label), its epilog the rest."""
    return parser_class(
        prog=prog,
        description=doc.split("\n\n")[0].split(": ", 1)[1].capitalize(),
        epilog=doc.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
