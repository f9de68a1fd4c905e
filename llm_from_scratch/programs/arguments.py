"""The command line of the programs that load a model: flags, and settings as KEY=VALUE words."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from llm_from_scratch.errors import UserError

PRESET_GROUP = "decoding"  # the one config group whose presets (configs/decoding/) a word picks


class UsageError(UserError):
    """A command line that does not parse, or that spells a setting the other way."""


class Parser(argparse.ArgumentParser):
    """argparse: one-line errors, help from a program's docstring, settings as words."""

    def __init__(self, prog: str, doc: str, groups: Sequence[str] = ()) -> None:
        label, epilog = doc.split("\n\n", 1)
        formatter, description = argparse.RawDescriptionHelpFormatter, label.split(": ", 1)[1]
        super().__init__(prog, None, description.capitalize(), epilog, formatter_class=formatter)
        self.allow_abbrev, self.groups = False, tuple(groups)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse(self, argv: Sequence[str], texts: bool = False) -> tuple[argparse.Namespace, dict]:
        """The flags, and the settings among the positional `words` as {"GROUP.KEY": VALUE}. Any
        other word is refused, unless the program takes `texts` (`args.words` keeps them)."""
        args, unknown = self.parse_known_intermixed_args(argv)
        flags = {a.dest: a.option_strings[-1] for a in self._actions if a.option_strings}
        settings, others = {}, []
        for word in [*unknown, *getattr(args, "words", [])]:
            key, equals, value = word.lstrip("-").partition("=")
            flag = flags.get(key.replace("-", "_"))
            if word.startswith("-"):
                hint = f"the flag is {flag}" if flag else f"see {self.prog} --help"
                dashed = f"write `{key}={value or 'VALUE'}` without the dashes"
                raise UsageError(f"unknown option {word}: {dashed if '.' in key else hint}")
            if equals and flag:
                raise UsageError(f"write `{flag} {value}`, not `{word}`")
            if equals and key.split(".")[0] in self.groups and ("." in key or key == PRESET_GROUP):
                settings[key] = value
            elif texts:
                others.append(word)
            else:
                kinds = " or ".join(f"{group}.KEY=VALUE" for group in self.groups) or "an option"
                raise UsageError(f"{word!r} is not {kinds} (see {self.prog} --help)")
        args.words = others
        return args, settings


def positive_int(text: str) -> int:
    if int(text) < 1:
        raise argparse.ArgumentTypeError(f"{int(text)} must be at least 1")
    return int(text)
